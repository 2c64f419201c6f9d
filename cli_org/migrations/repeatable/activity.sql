-- runs before the numbered migrations
-- The activity page's helpers: which face wrote, whose notebooks the caller reads, quoted text.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

-- Reading notebook versions (the feed reads them newest first, across agents) as a member
-- paid the read rule once per version row: org_notebook_readable(agent) is a function with
-- its own search_path, so it is never inlined, and it runs three lookups per call (40 us: a
-- member's page of the feed took 120 ms at 3,000 versions, python -m benchmarks.activity).
-- The same rule (0013, 0019: the agent itself, the administrator, an owner, the agent's team
-- lead) is now computed once per statement: the agents whose notebooks the caller may read,
-- or NULL for all of them; each row is then an array lookup.
CREATE OR REPLACE FUNCTION public.org_notebooks_readable() RETURNS text[]
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT CASE
        WHEN pg_catalog.pg_has_role(current_user,
                                    (SELECT c.relowner FROM pg_catalog.pg_class c
                                     WHERE c.oid = 'public.notebook_entries'::pg_catalog.regclass), 'USAGE')
             OR public.org_is_owner() THEN NULL
        ELSE ARRAY(SELECT a.name FROM public.org_agents a
                   WHERE a.name = public.org_me() OR a.team_lead = public.org_me())
    END
$function$;
REVOKE ALL ON FUNCTION public.org_notebooks_readable() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_stamp_via() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    IF TG_TABLE_NAME = 'notebook_versions' THEN
        NEW.via := coalesce(NEW.via, public.org_via());
    ELSIF TG_TABLE_NAME = 'memory_pins' THEN
        IF TG_OP = 'INSERT' THEN
            NEW.pinned_via := coalesce(NEW.pinned_via, public.org_via());
        ELSIF OLD.unpinned_at IS NULL AND NEW.unpinned_at IS NOT NULL THEN
            NEW.unpinned_via := public.org_via();
        ELSE
            NEW.pinned_via := OLD.pinned_via;
            NEW.unpinned_via := OLD.unpinned_via;
        END IF;
    ELSIF TG_TABLE_NAME = 'org_todos' THEN
        IF TG_OP = 'INSERT' THEN
            NEW.via := coalesce(NEW.via, public.org_via());  -- done_via: only an import gives one
        ELSIF OLD.done_at IS NULL AND NEW.done_at IS NOT NULL THEN
            NEW.via := OLD.via;
            NEW.done_via := public.org_via();
        ELSE
            NEW.via := OLD.via;
            NEW.done_via := OLD.done_via;
        END IF;
    ELSIF TG_TABLE_NAME = 'memory_facts' THEN
        IF TG_OP = 'INSERT' THEN
            NULL;  -- retired_via: only an import gives one (members hold no grant on it)
        ELSIF OLD.valid_to IS NULL AND NEW.valid_to IS NOT NULL THEN
            NEW.retired_via := public.org_via();
        ELSIF NEW.valid_to IS NULL THEN
            NEW.retired_via := NULL;  -- restored: memory_restores keeps the retirement's
        ELSE
            NEW.retired_via := OLD.retired_via;
        END IF;
    ELSIF TG_TABLE_NAME = 'memory_restores' THEN
        NEW.retired_via := coalesce(NEW.retired_via,
                                    (SELECT f.retired_via FROM public.memory_facts f WHERE f.id = NEW.fact_id));
        NEW.restored_via := coalesce(NEW.restored_via, public.org_via());
    END IF;
    RETURN NEW;
END $function$;
REVOKE ALL ON FUNCTION public.org_stamp_via() FROM PUBLIC;

-- The activity feed (cli_org/store/activity.py, sql/activity.sql): what changed, by agent and
-- by harness. Two parts.
--
-- 1. Which harness made each write. A fact says so in `via` (the writer passes it); the other
-- writes said nothing. Now every write records the harness of the transaction that made it:
-- the library says it once per transaction, `set_config('cli_org.via', VIA, true)`
-- (store/activity.py say_via), and the database stamps it on the rows that write makes:
--   notebook_versions.via        the version an edit made
--   memory_pins.pinned_via       pinned; unpinned_via: unpinned (or ended by a retirement)
--   org_todos.via                added;  done_via: marked done
--   memory_facts.retired_via     forgotten or superseded (cleared when restored)
--   memory_restores.retired_via  the retirement a restore undid; restored_via: the restore
-- Who may write them: no member has a grant on any of these columns, and each is stamped by a
-- trigger from the writer's own transaction, so a member records only its own writes' harness,
-- never another's (the rule of the tables' other columns: who, when). The shape is that of a
-- fact's via (RUNTIME@HOST, org_field_rules); anything else is refused with the write. A value
-- an import or the admin gives on INSERT is kept (members cannot insert into these tables, or,
-- for org_todos, hold no grant on the column).
--
-- 2. Indexes: each source of the feed is read newest first from its own time column, from the
-- page's cursor back to `since`, and stops after a page (EXPLAIN ANALYZE numbers in the docs).
CREATE OR REPLACE FUNCTION public.org_via() RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    v text := nullif(current_setting('cli_org.via', true), '');
    problem text := public.org_field_problem('via', 'via', v);
BEGIN
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    RETURN v;
END $function$;
REVOKE ALL ON FUNCTION public.org_via() FROM PUBLIC;
