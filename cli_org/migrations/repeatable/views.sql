-- The views: a repeatable file (cli_org/db/migrate.py; docs/migrations.md), run after the
-- numbered migrations (a view needs its tables). Each is dropped and made again, so a column
-- may change; nothing of ours depends on a view.

-- What happened, one row per event: a fact written, retired or superseded (by its retirement
-- in memory_facts, or one a restore undid, kept in memory_restores), restored, pinned and
-- unpinned; a notebook's version; a todo added and done; a recall; a tool call; an erasure.
-- (at, src, ref, sub) orders the events and is the feed's cursor: the time, the source's
-- number, the row's id in its table, and a notebook entry's version. Read as the caller
-- (security_invoker): row-level security decides what each reader sees, as on the tables.
-- cli_org/sql/activity.sql `feed` reads a page of it; each source walks its own time index
-- (migration 0032) newest first, merged.
DROP VIEW IF EXISTS public.org_activity;
CREATE VIEW public.org_activity WITH (security_invoker = true) AS
    SELECT f.created_at AS at, 1 AS src, f.id AS ref, 0 AS sub, 'written' AS kind, f.author AS who,
                f.via AS via, f.id AS fact_id, f.subject AS subject, left(f.claim, 300) AS detail, f.project AS project, f.supersedes AS other
        FROM public.memory_facts f
    UNION ALL
    SELECT f.valid_to AS at, 2 AS src, f.id AS ref, 0 AS sub, CASE WHEN f.superseded_by IS NULL THEN 'retired' ELSE 'superseded' END AS kind, f.retired_by AS who,
                f.retired_via AS via, f.id AS fact_id, f.subject AS subject, f.retired_reason AS detail, f.project AS project, f.superseded_by AS other
        FROM public.memory_facts f
        WHERE f.valid_to IS NOT NULL
    UNION ALL
    SELECT r.retired_at AS at, 3 AS src, r.id AS ref, 0 AS sub, CASE WHEN r.superseded_by IS NULL THEN 'retired' ELSE 'superseded' END AS kind, r.retired_by AS who,
                r.retired_via AS via, r.fact_id AS fact_id, f.subject AS subject, r.retired_reason AS detail, f.project AS project, r.superseded_by AS other
        FROM public.memory_restores r JOIN public.memory_facts f ON f.id = r.fact_id
    UNION ALL
    SELECT r.restored_at AS at, 4 AS src, r.id AS ref, 0 AS sub, 'restored' AS kind, r.restored_by AS who,
                r.restored_via AS via, r.fact_id AS fact_id, f.subject AS subject, r.why AS detail, f.project AS project, NULL::bigint AS other
        FROM public.memory_restores r JOIN public.memory_facts f ON f.id = r.fact_id
    UNION ALL
    SELECT p.pinned_at AS at, 5 AS src, p.id AS ref, 0 AS sub, 'pinned' AS kind, p.pinned_by AS who,
                p.pinned_via AS via, p.fact_id AS fact_id, f.subject AS subject, coalesce('in project ' || p.project, 'org-wide') AS detail, p.project AS project, NULL::bigint AS other
        FROM public.memory_pins p JOIN public.memory_facts f ON f.id = p.fact_id
    UNION ALL
    SELECT p.unpinned_at AS at, 6 AS src, p.id AS ref, 0 AS sub, 'unpinned' AS kind, p.unpinned_by AS who,
                p.unpinned_via AS via, p.fact_id AS fact_id, f.subject AS subject, p.unpin_reason AS detail, p.project AS project, NULL::bigint AS other
        FROM public.memory_pins p JOIN public.memory_facts f ON f.id = p.fact_id
        WHERE p.unpinned_at IS NOT NULL
    UNION ALL
    SELECT v.at AS at, 7 AS src, v.entry_id AS ref, v.version AS sub, 'notebook' AS kind, v.by AS who,
                v.via AS via, NULL::bigint AS fact_id, v.agent || '/' || v.store AS subject, v.action || ': ' || left(v.body, 300) AS detail, NULL::text AS project, NULL::bigint AS other
        FROM public.notebook_versions v
    UNION ALL
    SELECT t.created_at AS at, 8 AS src, t.id AS ref, 0 AS sub, 'todo_added' AS kind, t.author AS who,
                t.via AS via, NULL::bigint AS fact_id, NULL::text AS subject, t.text AS detail, t.project AS project, NULL::bigint AS other
        FROM public.org_todos t
    UNION ALL
    SELECT t.done_at AS at, 9 AS src, t.id AS ref, 0 AS sub, 'todo_done' AS kind, t.done_by AS who,
                t.done_via AS via, NULL::bigint AS fact_id, NULL::text AS subject, t.text AS detail, t.project AS project, NULL::bigint AS other
        FROM public.org_todos t
        WHERE t.done_at IS NOT NULL
    UNION ALL
    SELECT e.created_at AS at, 10 AS src, e.id AS ref, 0 AS sub, 'recall' AS kind, e.agent AS who,
                NULL::text AS via, NULL::bigint AS fact_id, NULL::text AS subject, left(e.query, 300) AS detail, e.project AS project, NULL::bigint AS other
        FROM public.recall_events e
    UNION ALL
    SELECT c.created_at AS at, 11 AS src, c.id AS ref, 0 AS sub, 'tool_call' AS kind, c.agent AS who,
                NULL::text AS via, NULL::bigint AS fact_id, c.face AS subject, c.tool || CASE WHEN c.ok THEN '' ELSE ' (refused)' END AS detail, NULL::text AS project, NULL::bigint AS other
        FROM public.tool_calls c
    UNION ALL
    SELECT x.erased_at AS at, 12 AS src, x.id AS ref, 0 AS sub, 'erased' AS kind, x.erased_by AS who,
                x.erased_via AS via, x.fact_id AS fact_id,
                CASE WHEN x.fact_id IS NULL THEN 'session ' || s.external_id || ' #' || x.position ELSE f.subject END AS subject,
                x.reason AS detail, coalesce(f.project, s.project) AS project, NULL::bigint AS other
        FROM public.memory_erasures x
        LEFT JOIN public.memory_facts f ON f.id = x.fact_id
        LEFT JOIN public.archive_sessions s ON s.id = x.session_id;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.org_activity TO %I', public.org_member_role());
END $$;
