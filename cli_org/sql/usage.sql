-- Adoption of cli-org: is memory being used? Run by cli-org usage, or by hand with psql.
-- Each query takes the window as an interval: replace %(window)s with a literal such as
-- '30 days' (see docs/agents.md, "Archive and adoption").
--
-- Which tool call is a recall or a remember is defined once, by org_is_recall_call() and
-- org_is_remember_call() (migration 0022): a shell command spelling `cli-org recall` or
-- `org recall`, or the MCP tools org_recall / org_remember under the names harnesses record.
-- Each archived message keeps their answer in archive_messages.recall_call / remember_call.
-- Calls made in a subagent or a compacted continuation count for the session at the top of
-- its tree, and a call copied into a continuation (same call id) counts once.

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
           m.recall_call AS is_recall,
           m.remember_call AS is_remember
    FROM archive_messages m
    JOIN tree t ON t.id = m.session_id
    JOIN roots r ON r.id = t.root
    WHERE m.recall_call OR m.remember_call
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

-- name: over_time
-- Adoption over time: per day or week (%(bucket)s, 'day' or 'week', weeks start on Monday,
-- in UTC) and harness, the top-level sessions started then, those that recalled or
-- remembered, those that recalled, and those that remembered (calls in their subagents
-- and continuations included, as in by_harness).
WITH RECURSIVE tree AS (
    SELECT id, id AS root FROM archive_sessions WHERE parent_session IS NULL
    UNION ALL
    SELECT s.id, t.root FROM archive_sessions s JOIN tree t ON s.parent_session = t.id
),
roots AS (
    SELECT id, harness, started_at FROM archive_sessions
    WHERE parent_session IS NULL AND started_at >= now() - %(window)s::interval
),
used AS (
    SELECT t.root,
           bool_or(m.recall_call) AS recalled,
           bool_or(m.remember_call) AS remembered
    FROM archive_messages m
    JOIN tree t ON t.id = m.session_id
    JOIN roots r ON r.id = t.root
    WHERE m.recall_call OR m.remember_call
    GROUP BY t.root
)
SELECT (date_trunc(%(bucket)s, r.started_at, 'UTC') AT TIME ZONE 'UTC')::date AS period,
       r.harness,
       count(*) AS sessions,
       count(*) FILTER (WHERE u.recalled OR u.remembered) AS sessions_using,
       count(*) FILTER (WHERE u.recalled) AS sessions_recalled,
       count(*) FILTER (WHERE u.remembered) AS sessions_remembered
FROM roots r
LEFT JOIN used u ON u.root = r.id
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: agents_over_time
-- From cli-org's own log, per day or week and agent: recalls (recall_events) and remembers
-- (facts written). The archive does not know which agent a session ran as; the log does.
WITH events AS (
    SELECT agent, created_at, true AS is_recall FROM recall_events
    WHERE created_at >= now() - %(window)s::interval AND agent IS NOT NULL
    UNION ALL
    SELECT author, created_at, false FROM memory_facts
    WHERE created_at >= now() - %(window)s::interval
)
SELECT (date_trunc(%(bucket)s, created_at, 'UTC') AT TIME ZONE 'UTC')::date AS period,
       agent,
       count(*) FILTER (WHERE is_recall) AS recalls,
       count(*) FILTER (WHERE NOT is_recall) AS remembers
FROM events
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: by_agent
-- Per agent over the window, from the log: recall calls, remembers, the days it recalled,
-- and the characters per recall (the text answer's length, recall_events.chars).
WITH recalls AS (
    SELECT agent, count(*) AS recalls,
           count(DISTINCT (created_at AT TIME ZONE 'UTC')::date) AS days_recalling,
           round(avg(chars)) AS chars_mean,
           percentile_disc(0.5) WITHIN GROUP (ORDER BY chars) AS chars_median,
           percentile_disc(0.95) WITHIN GROUP (ORDER BY chars) AS chars_p95
    FROM recall_events
    WHERE created_at >= now() - %(window)s::interval AND agent IS NOT NULL
    GROUP BY agent
),
remembers AS (
    SELECT author AS agent, count(*) AS remembers FROM memory_facts
    WHERE created_at >= now() - %(window)s::interval
    GROUP BY author
)
SELECT coalesce(r.agent, w.agent) AS agent,
       coalesce(r.recalls, 0) AS recalls,
       coalesce(w.remembers, 0) AS remembers,
       coalesce(r.days_recalling, 0) AS days_recalling,
       r.chars_mean::integer AS chars_mean, r.chars_median, r.chars_p95
FROM recalls r
FULL JOIN remembers w ON w.agent = r.agent
ORDER BY recalls DESC, remembers DESC, agent;

-- name: by_session
-- Every archived session started in the window that recalled or remembered (subagents and
-- continuations each on their own row, naming their parent): its calls, and the characters
-- of the recall results the transcript holds (a result is the tool message carrying the
-- call's id). A call id repeated within a session (one message, several lines) counts once.
WITH calls AS (
    SELECT DISTINCT ON (m.session_id, coalesce(m.tool_call_id, m.source_key))
           m.session_id, m.tool_call_id,
           m.recall_call AS is_recall,
           m.remember_call AS is_remember
    FROM archive_messages m
    JOIN archive_sessions s ON s.id = m.session_id
    WHERE s.started_at >= now() - %(window)s::interval
      AND (m.recall_call OR m.remember_call)
    ORDER BY m.session_id, coalesce(m.tool_call_id, m.source_key), m.position, m.part
),
-- Materialized: inlined, its subquery ran twice per call (once for each aggregate of
-- `measured`): the query took 43 ms at 1,000 sessions, 24 ms this way (benchmarks/usage_scale.py).
results AS MATERIALIZED (
    SELECT c.session_id,
           (SELECT length(r.text) FROM archive_messages r
            WHERE r.session_id = c.session_id AND r.kind = 'tool' AND r.tool_call_id = c.tool_call_id
            ORDER BY r.position, r.part LIMIT 1) AS chars
    FROM calls c
    WHERE c.is_recall AND c.tool_call_id IS NOT NULL
),
-- One pass over calls and results grouped by session (a subquery per session read every
-- call once per session: 85 ms at 1,000 sessions, benchmarks/usage_scale.py).
counted AS (
    SELECT session_id, count(*) FILTER (WHERE is_recall) AS recall_calls,
           count(*) FILTER (WHERE is_remember) AS remember_calls
    FROM calls GROUP BY session_id
),
measured AS (
    SELECT session_id, count(chars) AS results,
           percentile_disc(0.5) WITHIN GROUP (ORDER BY chars) AS result_chars_median
    FROM results GROUP BY session_id
)
SELECT s.id, s.harness, s.external_id AS session, p.external_id AS parent, s.project, s.started_at,
       k.recall_calls, k.remember_calls, coalesce(r.results, 0) AS results, r.result_chars_median
FROM counted k
JOIN archive_sessions s ON s.id = k.session_id
LEFT JOIN measured r ON r.session_id = k.session_id
LEFT JOIN archive_sessions p ON p.id = s.parent_session
ORDER BY s.started_at DESC NULLS LAST, s.id DESC;

-- name: quoted_per_session
-- The hits later quoted (rule: cli_org/archive/quoted.py), read from the verdicts stored at
-- import (migration 0029): per session started in the window that holds a recall call, and
-- per arm of its hits. Rule 1 within the window: a call id is tied in the session that started
-- first (then the lower id), so each session's "dropped" ids are those an earlier session in
-- the window holds, and its stored set for exactly those is read. `judged` is false for a
-- session whose verdicts for the rule of %(rule)s are not stored (yet): `cli-org archive judge`.
WITH recalls AS (
    SELECT m.session_id, s.started_at, m.tool_call_id
    FROM archive_messages m
    JOIN archive_sessions s ON s.id = m.session_id
    WHERE m.recall_call AND s.started_at >= now() - %(window)s::interval
),
firsts AS (
    SELECT session_id, tool_call_id,
           first_value(session_id) OVER (PARTITION BY tool_call_id ORDER BY started_at, session_id) AS tied_in
    FROM recalls
),
windowed AS (
    SELECT session_id,
           coalesce(array_agg(DISTINCT tool_call_id COLLATE "C" ORDER BY tool_call_id COLLATE "C")
                    FILTER (WHERE tool_call_id IS NOT NULL AND tied_in <> session_id), '{}') AS dropped
    FROM firsts
    GROUP BY session_id
)
SELECT w.session_id, q.id IS NOT NULL AS judged, coalesce(q.calls, 0) AS calls,
       (SELECT count(*) FROM quoted_recalls r WHERE r.judged = q.id) AS tied,
       h.arm,
       count(DISTINCT h.call_message) AS recalls,
       count(h.arm) AS hits,
       count(*) FILTER (WHERE h.quoted) AS quoted,
       count(*) FILTER (WHERE h.how = 'id') AS by_id,
       count(*) FILTER (WHERE h.how = 'path') AS by_path,
       count(*) FILTER (WHERE h.how = 'phrase') AS by_phrase
FROM windowed w
LEFT JOIN quoted_sessions q
       ON q.session_id = w.session_id AND q.dropped = w.dropped AND q.rule_version = %(rule)s
LEFT JOIN quoted_hits h ON h.judged = q.id
GROUP BY w.session_id, q.id, q.calls, h.arm;

-- name: archive_span
-- Every archived session, whatever the window: how many, and when the newest began (the
-- Usage page says what lies outside its window). An index-only scan of archive_sessions_started.
SELECT count(*) AS sessions, max(started_at) AS newest FROM archive_sessions;
