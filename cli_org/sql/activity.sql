-- name: feed
-- What happened, newest first (the view org_activity, read as the caller: row-level security
-- decides), from the page's cursor back to `since`, of the chosen kinds, by `agent`, through
-- `via`; each source of the view walks its own time index and the page is their merge. The
-- order and the cursor are (at, src, ref, sub) (migrations/repeatable/views.sql).
SELECT at, src, ref, sub, kind, who, via, fact_id, subject, detail, project, other
FROM org_activity
WHERE CASE kind WHEN 'written' THEN %(k_written)s WHEN 'retired' THEN %(k_retired)s WHEN 'superseded' THEN %(k_superseded)s WHEN 'restored' THEN %(k_restored)s WHEN 'pinned' THEN %(k_pinned)s WHEN 'unpinned' THEN %(k_unpinned)s WHEN 'notebook' THEN %(k_notebook)s WHEN 'todo_added' THEN %(k_todo_added)s WHEN 'todo_done' THEN %(k_todo_done)s WHEN 'recall' THEN %(k_recall)s WHEN 'tool_call' THEN %(k_tool_call)s WHEN 'erased' THEN %(k_erased)s END
  AND at >= %(since)s::timestamptz
  AND (%(b_at)s::timestamptz IS NULL OR (at <= %(b_at)s::timestamptz AND (at, src, ref, sub) < (%(b_at)s::timestamptz, %(b_src)s::integer, %(b_ref)s::bigint, %(b_sub)s::integer)))
  AND (%(agent)s::text IS NULL OR who = %(agent)s)
  AND (%(via_name)s::text IS NULL OR split_part(via, '@', 1) = %(via_name)s)
  AND (%(via_whole)s::text IS NULL OR via = %(via_whole)s)
ORDER BY at DESC, src DESC, ref DESC, sub DESC
LIMIT %(n)s;

-- name: say_via
-- The harness of this transaction's writes, which migration 0032's triggers stamp; local to
-- the transaction (the long-lived-process rule: nothing outlives the call).
SELECT set_config('cli_org.via', %(via)s, true);
