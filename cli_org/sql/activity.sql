-- name: feed
-- What happened, newest first: one branch per source, each read as the caller (row-level
-- security decides: a notebook's versions show only to whom may read that notebook), each
-- walked newest first down its own time index (migration 0032) from the page's cursor back to
-- `since`, filtered by kind, agent and harness, and stopped after a page; then the branches
-- are merged and the page cut. The order and the cursor are (at, src, ref, sub): the time,
-- the branch's number, the row's id in its table, and a notebook entry's version.
SELECT at, src, ref, sub, kind, who, via, fact_id, subject, detail, project, other FROM (
    (SELECT f.created_at AS at, 1 AS src, f.id AS ref, 0 AS sub, 'written' AS kind, f.author AS who,
            f.via AS via, f.id AS fact_id, f.subject AS subject, left(f.claim, 300) AS detail, f.project AS project, f.supersedes AS other
     FROM memory_facts f
     WHERE %(k_written)s
       AND f.created_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (f.created_at <= %(b_at)s::timestamptz AND (f.created_at, 1, f.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR f.author = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(f.via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR f.via = %(via_whole)s)
     ORDER BY f.created_at DESC, f.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT f.valid_to AS at, 2 AS src, f.id AS ref, 0 AS sub, CASE WHEN f.superseded_by IS NULL THEN 'retired' ELSE 'superseded' END AS kind, f.retired_by AS who,
            f.retired_via AS via, f.id AS fact_id, f.subject AS subject, f.retired_reason AS detail, f.project AS project, f.superseded_by AS other
     FROM memory_facts f
     WHERE ((f.superseded_by IS NULL AND %(k_retired)s) OR (f.superseded_by IS NOT NULL AND %(k_superseded)s))
       AND f.valid_to IS NOT NULL
       AND f.valid_to >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (f.valid_to <= %(b_at)s::timestamptz AND (f.valid_to, 2, f.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR f.retired_by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(f.retired_via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR f.retired_via = %(via_whole)s)
     ORDER BY f.valid_to DESC, f.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT r.retired_at AS at, 3 AS src, r.id AS ref, 0 AS sub, CASE WHEN r.superseded_by IS NULL THEN 'retired' ELSE 'superseded' END AS kind, r.retired_by AS who,
            r.retired_via AS via, r.fact_id AS fact_id, f.subject AS subject, r.retired_reason AS detail, f.project AS project, r.superseded_by AS other
     FROM memory_restores r JOIN memory_facts f ON f.id = r.fact_id
     WHERE ((r.superseded_by IS NULL AND %(k_retired)s) OR (r.superseded_by IS NOT NULL AND %(k_superseded)s))
       AND r.retired_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (r.retired_at <= %(b_at)s::timestamptz AND (r.retired_at, 3, r.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR r.retired_by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(r.retired_via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR r.retired_via = %(via_whole)s)
     ORDER BY r.retired_at DESC, r.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT r.restored_at AS at, 4 AS src, r.id AS ref, 0 AS sub, 'restored' AS kind, r.restored_by AS who,
            r.restored_via AS via, r.fact_id AS fact_id, f.subject AS subject, r.why AS detail, f.project AS project, NULL::bigint AS other
     FROM memory_restores r JOIN memory_facts f ON f.id = r.fact_id
     WHERE %(k_restored)s
       AND r.restored_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (r.restored_at <= %(b_at)s::timestamptz AND (r.restored_at, 4, r.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR r.restored_by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(r.restored_via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR r.restored_via = %(via_whole)s)
     ORDER BY r.restored_at DESC, r.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT p.pinned_at AS at, 5 AS src, p.id AS ref, 0 AS sub, 'pinned' AS kind, p.pinned_by AS who,
            p.pinned_via AS via, p.fact_id AS fact_id, f.subject AS subject, coalesce('in project ' || p.project, 'org-wide') AS detail, p.project AS project, NULL::bigint AS other
     FROM memory_pins p JOIN memory_facts f ON f.id = p.fact_id
     WHERE %(k_pinned)s
       AND p.pinned_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (p.pinned_at <= %(b_at)s::timestamptz AND (p.pinned_at, 5, p.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR p.pinned_by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(p.pinned_via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR p.pinned_via = %(via_whole)s)
     ORDER BY p.pinned_at DESC, p.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT p.unpinned_at AS at, 6 AS src, p.id AS ref, 0 AS sub, 'unpinned' AS kind, p.unpinned_by AS who,
            p.unpinned_via AS via, p.fact_id AS fact_id, f.subject AS subject, p.unpin_reason AS detail, p.project AS project, NULL::bigint AS other
     FROM memory_pins p JOIN memory_facts f ON f.id = p.fact_id
     WHERE %(k_unpinned)s
       AND p.unpinned_at IS NOT NULL
       AND p.unpinned_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (p.unpinned_at <= %(b_at)s::timestamptz AND (p.unpinned_at, 6, p.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR p.unpinned_by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(p.unpinned_via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR p.unpinned_via = %(via_whole)s)
     ORDER BY p.unpinned_at DESC, p.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT v.at AS at, 7 AS src, v.entry_id AS ref, v.version AS sub, 'notebook' AS kind, v.by AS who,
            v.via AS via, NULL::bigint AS fact_id, v.agent || '/' || v.store AS subject, v.action || ': ' || left(v.body, 300) AS detail, NULL::text AS project, NULL::bigint AS other
     FROM notebook_versions v
     WHERE %(k_notebook)s
       AND v.at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (v.at <= %(b_at)s::timestamptz AND (v.at, 7, v.entry_id, v.version) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR v.by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(v.via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR v.via = %(via_whole)s)
     ORDER BY v.at DESC, v.entry_id DESC, v.version DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT t.created_at AS at, 8 AS src, t.id AS ref, 0 AS sub, 'todo_added' AS kind, t.author AS who,
            t.via AS via, NULL::bigint AS fact_id, NULL::text AS subject, t.text AS detail, t.project AS project, NULL::bigint AS other
     FROM org_todos t
     WHERE %(k_todo_added)s
       AND t.created_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (t.created_at <= %(b_at)s::timestamptz AND (t.created_at, 8, t.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR t.author = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(t.via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR t.via = %(via_whole)s)
     ORDER BY t.created_at DESC, t.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT t.done_at AS at, 9 AS src, t.id AS ref, 0 AS sub, 'todo_done' AS kind, t.done_by AS who,
            t.done_via AS via, NULL::bigint AS fact_id, NULL::text AS subject, t.text AS detail, t.project AS project, NULL::bigint AS other
     FROM org_todos t
     WHERE %(k_todo_done)s
       AND t.done_at IS NOT NULL
       AND t.done_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (t.done_at <= %(b_at)s::timestamptz AND (t.done_at, 9, t.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR t.done_by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(t.done_via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR t.done_via = %(via_whole)s)
     ORDER BY t.done_at DESC, t.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT e.created_at AS at, 10 AS src, e.id AS ref, 0 AS sub, 'recall' AS kind, e.agent AS who,
            NULL::text AS via, NULL::bigint AS fact_id, NULL::text AS subject, left(e.query, 300) AS detail, e.project AS project, NULL::bigint AS other
     FROM recall_events e
     WHERE %(k_recall)s
       AND e.created_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (e.created_at <= %(b_at)s::timestamptz AND (e.created_at, 10, e.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR e.agent = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(NULL::text, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR NULL::text = %(via_whole)s)
     ORDER BY e.created_at DESC, e.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT c.created_at AS at, 11 AS src, c.id AS ref, 0 AS sub, 'tool_call' AS kind, c.agent AS who,
            NULL::text AS via, NULL::bigint AS fact_id, c.face AS subject, c.tool || CASE WHEN c.ok THEN '' ELSE ' (refused)' END AS detail, NULL::text AS project, NULL::bigint AS other
     FROM tool_calls c
     WHERE %(k_tool_call)s
       AND c.created_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (c.created_at <= %(b_at)s::timestamptz AND (c.created_at, 11, c.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR c.agent = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(NULL::text, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR NULL::text = %(via_whole)s)
     ORDER BY c.created_at DESC, c.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT x.erased_at AS at, 12 AS src, x.id AS ref, 0 AS sub, 'erased' AS kind, x.erased_by AS who,
            x.erased_via AS via, x.fact_id AS fact_id,
            CASE WHEN x.fact_id IS NULL THEN 'session ' || s.external_id || ' #' || x.position ELSE f.subject END AS subject,
            x.reason AS detail, coalesce(f.project, s.project) AS project, NULL::bigint AS other
     FROM memory_erasures x
     LEFT JOIN memory_facts f ON f.id = x.fact_id
     LEFT JOIN archive_sessions s ON s.id = x.session_id
     WHERE %(k_erased)s
       AND x.erased_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (x.erased_at <= %(b_at)s::timestamptz AND (x.erased_at, 12, x.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR x.erased_by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(x.erased_via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR x.erased_via = %(via_whole)s)
     ORDER BY x.erased_at DESC, x.id DESC
     LIMIT %(n)s)
    UNION ALL
    (SELECT l.created_at AS at, 13 AS src, l.id AS ref, 0 AS sub, 'linked' AS kind, l.author AS who,
            l.via AS via, f.id AS fact_id, f.subject AS subject,
            CASE WHEN l.from_id IS NULL THEN 'confirms it in its own words' ELSE l.kind || ' #' || l.to_id END
                || coalesce(': ' || left(l.reason, 300), '') AS detail, f.project AS project,
            CASE WHEN l.from_id IS NULL THEN NULL ELSE l.to_id END AS other
     FROM memory_links l JOIN memory_facts f ON f.id = coalesce(l.from_id, l.to_id)
     WHERE %(k_linked)s
       AND l.created_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (l.created_at <= %(b_at)s::timestamptz AND (l.created_at, 13, l.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR l.author = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(l.via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR l.via = %(via_whole)s)
     ORDER BY l.created_at DESC, l.id DESC
     LIMIT %(n)s)
    UNION ALL
    -- no index on removed_at: links are removed rarely, and a page stops at `since`
    (SELECT l.removed_at AS at, 14 AS src, l.id AS ref, 0 AS sub, 'unlinked' AS kind, l.removed_by AS who,
            l.removed_via AS via, f.id AS fact_id, f.subject AS subject,
            CASE WHEN l.from_id IS NULL THEN 'the confirmation by ' || l.author ELSE l.kind || ' #' || l.to_id END
                || coalesce(': ' || left(l.removed_reason, 300), '') AS detail, f.project AS project,
            CASE WHEN l.from_id IS NULL THEN NULL ELSE l.to_id END AS other
     FROM memory_links l JOIN memory_facts f ON f.id = coalesce(l.from_id, l.to_id)
     WHERE %(k_unlinked)s
       AND l.removed_at IS NOT NULL
       AND l.removed_at >= %(since)s::timestamptz
       AND (%(b_at)s::timestamptz IS NULL OR (l.removed_at <= %(b_at)s::timestamptz AND (l.removed_at, 14, l.id, 0) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
       AND (%(agent)s::text IS NULL OR l.removed_by = %(agent)s)
       AND (%(via_name)s::text IS NULL OR split_part(l.removed_via, '@', 1) = %(via_name)s)
       AND (%(via_whole)s::text IS NULL OR l.removed_via = %(via_whole)s)
     ORDER BY l.removed_at DESC, l.id DESC
     LIMIT %(n)s)
) e
ORDER BY at DESC, src DESC, ref DESC, sub DESC
LIMIT %(n)s;

-- name: say_via
-- The harness of this transaction's writes, which migration 0032's triggers stamp; local to
-- the transaction (the long-lived-process rule: nothing outlives the call).
SELECT set_config('cli_org.via', %(via)s, true);
