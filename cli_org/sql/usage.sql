-- Adoption of cli-org: is memory being used? Run by cli-org usage, or by hand with psql.
-- Each query takes one parameter, the window as an interval: replace %(window)s with a
-- literal such as '30 days' (see the README, "Archive and adoption").
--
-- A call counts when an assistant's tool call runs cli-org's recall or remember: a shell
-- command spelling `cli-org recall` or `org recall` (any path before it), the tool names
-- org_recall / org_remember, or cli-org's MCP tools as harnesses name them
-- (mcp__cli-org__recall, mcp__org__recall, mcp_cli_org_recall, ...). Calls made in a
-- subagent or a compacted continuation count for the session at the top of its tree, and
-- a call copied into a continuation (same call id) counts once.

-- name: by_harness
WITH RECURSIVE tree AS (
    SELECT id, id AS root FROM archive_sessions WHERE parent_session IS NULL
    UNION ALL
    SELECT s.id, t.root FROM archive_sessions s JOIN tree t ON s.parent_session = t.id
),
roots AS (
    SELECT id, harness FROM archive_sessions
    WHERE parent_session IS NULL AND started_at >= now() - %(window)s::interval
),
calls AS (
    SELECT t.root,
           t.root || ':' || coalesce(m.tool_call_id, m.session_id || ':' || m.source_key) AS call,
           coalesce(m.command ~ '(^|[^[:alnum:]_.-])(cli-)?org[[:space:]]+recall([^[:alnum:]_-]|$)', false)
               OR m.tool_name ~ '^(org_recall|mcp__?(cli[-_]?)?org__?(org_)?recall)$' AS is_recall,
           coalesce(m.command ~ '(^|[^[:alnum:]_.-])(cli-)?org[[:space:]]+remember([^[:alnum:]_-]|$)', false)
               OR m.tool_name ~ '^(org_remember|mcp__?(cli[-_]?)?org__?(org_)?remember)$' AS is_remember
    FROM archive_messages m
    JOIN tree t ON t.id = m.session_id
    JOIN roots r ON r.id = t.root
    WHERE m.kind = 'assistant' AND m.tool_name IS NOT NULL
)
SELECT r.harness,
       count(DISTINCT r.id) AS sessions,
       count(DISTINCT c.root) AS sessions_using,
       count(DISTINCT c.call) FILTER (WHERE c.is_recall) AS recall_calls,
       count(DISTINCT c.call) FILTER (WHERE c.is_remember) AS remember_calls,
       round(100.0 * count(DISTINCT c.root) / count(DISTINCT r.id), 1) AS adoption_pct
FROM roots r
LEFT JOIN calls c ON c.root = r.id AND (c.is_recall OR c.is_remember)
GROUP BY r.harness
ORDER BY r.harness;

-- name: from_log
WITH recalls AS (
    SELECT agent FROM recall_events WHERE created_at >= now() - %(window)s::interval
),
remembers AS (
    SELECT author AS agent FROM memory_facts WHERE created_at >= now() - %(window)s::interval
)
SELECT (SELECT count(*) FROM org_agents) AS agents,
       (SELECT count(*) FROM (SELECT agent FROM recalls UNION SELECT agent FROM remembers) u
        WHERE agent IS NOT NULL) AS agents_using,
       (SELECT count(*) FROM recalls) AS recall_calls,
       (SELECT count(*) FROM remembers) AS remember_calls,
       round(100.0 * (SELECT count(*) FROM (SELECT agent FROM recalls UNION SELECT agent FROM remembers) u
                      WHERE agent IS NOT NULL)
             / nullif((SELECT count(*) FROM org_agents), 0), 1) AS adoption_pct;
