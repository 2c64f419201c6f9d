-- The stored verdicts of "hits later quoted" (migration 0029; cli_org/archive/verdicts.py).
-- Written by the administrator only; the usage queries read them (usage.sql, quoted_per_session).

-- name: sharing
-- The sessions of %(ids)s that hold a recall call, and every session holding one of their
-- recall call ids (its verdicts depend on theirs: rule 1 ties a call id in the first).
SELECT DISTINCT m.session_id FROM archive_messages m
WHERE m.session_id = ANY(%(ids)s) AND m.recall_call
UNION
SELECT o.session_id FROM archive_messages m
JOIN archive_messages o ON o.tool_call_id = m.tool_call_id AND o.recall_call
WHERE m.session_id = ANY(%(ids)s) AND m.recall_call AND m.tool_call_id IS NOT NULL;

-- name: earlier_holders
-- For each session of %(ids)s, each session started before it (by start, then id) that holds
-- one of its recall call ids: when that one started, and the ids they share.
SELECT m.session_id, e.started_at, array_agg(DISTINCT m.tool_call_id) AS shared
FROM archive_messages m
JOIN archive_sessions s ON s.id = m.session_id
JOIN archive_messages o ON o.tool_call_id = m.tool_call_id AND o.recall_call AND o.session_id <> m.session_id
JOIN archive_sessions e ON e.id = o.session_id
WHERE m.session_id = ANY(%(ids)s) AND m.recall_call AND m.tool_call_id IS NOT NULL
  AND (e.started_at, e.id) < (s.started_at, s.id)
GROUP BY m.session_id, e.id, e.started_at;

-- name: recalling
-- Every session holding a recall call: its newest message and how many it holds.
SELECT m.session_id, max(m.id) AS newest, count(*) AS messages
FROM archive_messages m
WHERE m.session_id IN (SELECT session_id FROM archive_messages WHERE recall_call)
GROUP BY m.session_id;

-- name: stored
SELECT session_id, dropped, rule_version, newest, messages FROM quoted_sessions;

-- name: forget
DELETE FROM quoted_sessions WHERE session_id = ANY(%(ids)s);

-- name: messages
-- The sessions' messages in order, as the rule reads them.
SELECT m.session_id, m.id, m.kind, m.text, m.tool_call_id, m.recall_call AS is_recall
FROM archive_messages m
WHERE m.session_id = ANY(%(ids)s)
ORDER BY m.session_id, m.position, m.part, m.id;

-- name: store_session
INSERT INTO quoted_sessions (session_id, dropped, rule_version, newest, messages, calls)
VALUES (%(session_id)s, %(dropped)s::text[], %(rule_version)s, %(newest)s, %(messages)s, %(calls)s)
RETURNING id;

-- name: store_recalls
INSERT INTO quoted_recalls (judged, call_message, result_message)
SELECT * FROM unnest(%(judged)s::bigint[], %(call)s::bigint[], %(result)s::bigint[]);

-- name: store_hits
INSERT INTO quoted_hits (judged, call_message, ordinal, arm, key, quoted, how, evidence)
SELECT * FROM unnest(%(judged)s::bigint[], %(call)s::bigint[], %(ordinal)s::integer[], %(arm)s::text[],
                     %(key)s::text[], %(quoted)s::boolean[], %(how)s::text[], %(evidence)s::text[]);

-- name: fact_recalls
-- How often a fact was a recall hit (of the recalls the caller may read: migration 0034's
-- policy), by how many agents, the last time; and of the archived sessions' recalls that
-- returned it, how many later quoted it (the verdicts of the current rule, migration 0029;
-- a recall judged in several of a session's verdict sets counts once).
SELECT r.hits, r.agents, r.last_hit, v.judged, v.quoted
FROM (SELECT count(*) AS hits, count(DISTINCT agent) AS agents, max(at) AS last_hit
      FROM recall_hits WHERE fact_id = %(id)s) r,
     (SELECT count(DISTINCT q.call_message) AS judged,
             count(DISTINCT q.call_message) FILTER (WHERE q.quoted) AS quoted
      FROM quoted_hits q JOIN quoted_sessions s ON s.id = q.judged AND s.rule_version = %(rule)s
      WHERE q.arm = 'fact' AND q.key = %(id)s::text) v;
