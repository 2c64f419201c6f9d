-- Adoption of cli-org: is memory being used? Run by cli-org usage, or by hand with psql.
-- Each query takes one parameter, the window as an interval: replace %(window)s with a
-- literal such as '30 days' (see the README, "Archive and adoption").
--
-- A call counts when an assistant's tool call runs cli-org's recall or remember: a shell
-- command spelling `cli-org recall` or `org recall` (any path before it), or the MCP tools
-- org_recall / org_remember of the server `cli-org` under the names harnesses record for
-- them: Claude Code and Codex `mcp__cli-org__org_recall` (both write `mcp__<server>__<tool>`;
-- the Codex transcripts in the corpora show `mcp__cloud-associates__execute_workflow`), Hermes
-- `mcp_cli_org_org_recall` (it writes `mcp_<server>_<tool>`, every character outside
-- [A-Za-z0-9_] turned into `_`; newer versions `mcp__cli_org__org_recall`), and the bare tool
-- name. Calls made in a subagent or a compacted continuation count for the session at the
-- top of its tree, and a call copied into a continuation (same call id) counts once.

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
               OR m.tool_name ~ '^(mcp__?cli[-_]org__?)?org_recall$' AS is_recall,
           coalesce(m.command ~ '(^|[^[:alnum:]_.-])(cli-)?org[[:space:]]+remember([^[:alnum:]_-]|$)', false)
               OR m.tool_name ~ '^(mcp__?cli[-_]org__?)?org_remember$' AS is_remember
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

-- name: by_tool
-- Calls the long-lived faces served, per face and tool (tool_calls, migration 0016).
SELECT face, tool,
       count(*) AS calls,
       count(*) FILTER (WHERE NOT ok) AS refused,
       count(DISTINCT agent) AS agents
FROM tool_calls
WHERE created_at >= now() - %(window)s::interval
GROUP BY face, tool
ORDER BY face, calls DESC, tool;

-- name: log_call_unflushed
-- The call log is analytics: a row may be lost in a crash, so its transaction does not wait
-- for a disk flush (for this transaction only).
SELECT set_config('synchronous_commit', 'off', true);

-- name: log_call
-- One served call, as the connected agent.
INSERT INTO tool_calls (face, tool, ok, ms) VALUES (%(face)s, %(tool)s, %(ok)s, %(ms)s);
