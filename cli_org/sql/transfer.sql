-- The export's records: one JSON object per row, in an order an import can follow. A
-- record's `kind` names its type, so an agent's and a fact's own kind travel renamed.

-- name: agent
SELECT name AS key, to_jsonb(x) - 'kind' || jsonb_build_object('agent_kind', x.kind) AS row
FROM (SELECT name, kind, team_lead, is_owner, created_at FROM org_agents) x ORDER BY name;

-- name: fact
SELECT id AS key, to_jsonb(x) - 'kind' || jsonb_build_object('fact_kind', x.kind) AS row
FROM (SELECT {facts.columns}, retired_via, source_hash FROM memory_facts) x ORDER BY id;

-- name: restore
SELECT id AS key, to_jsonb(x) AS row FROM memory_restores x ORDER BY id;

-- name: pin
SELECT id AS key, to_jsonb(x) AS row FROM memory_pins x ORDER BY id;

-- name: notebook_entry
SELECT e.id AS key,
       to_jsonb(e) || jsonb_build_object('versions', coalesce((
           SELECT jsonb_agg(to_jsonb(v) - 'entry_id' ORDER BY v.version) FROM notebook_versions v
           WHERE v.entry_id = e.id), '[]'::jsonb)) AS row
FROM notebook_entries e ORDER BY e.id;

-- name: todo
SELECT id AS key, to_jsonb(x) AS row FROM org_todos x ORDER BY id;

-- name: tidy
SELECT id AS key, to_jsonb(x) AS row FROM memory_tidy_log x ORDER BY id;

-- name: caller
-- Who runs an export or import. The administrator is the role that owns the org's tables,
-- as migration 0019 defines it for the notebook read rule (a superuser passes too); on a
-- team server it is no superuser and, being granted every agent's role so that `--as` can
-- SET ROLE, a member of the member group as well: membership does not tell it apart.
SELECT public.org_me() AS agent,
       pg_has_role(current_user,
                   (SELECT c.relowner FROM pg_class c WHERE c.oid = 'public.notebook_entries'::regclass),
                   'USAGE') AS admin;

-- name: link
SELECT id AS key, to_jsonb(x) - 'kind' || jsonb_build_object('link_kind', x.kind) AS row
FROM memory_links x ORDER BY id;
