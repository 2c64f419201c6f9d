-- Proposals (migration 0040, store/proposals.py, archive/propose.py).

-- name: columns
p.id, p.agent, p.project, p.subject, p.claim, p.kind, p.why, p.score, s.harness,
s.external_id AS session, p.message_key AS message, p.session_id, p.state, p.fact_id, p.decided_by,
p.decided_at, p.reason, p.created_at

-- name: list
-- A page of proposals the caller may decide (the read policy), newest first; with a project,
-- its own and the org-wide ones.
SELECT {proposals.columns}
FROM memory_proposals p JOIN archive_sessions s ON s.id = p.session_id
WHERE (%(state)s = 'all' OR p.state = %(state)s)
  AND (%(project)s::text IS NULL OR p.project IS NULL OR p.project = %(project)s)
  AND (%(agent)s::text IS NULL OR p.agent = %(agent)s)
ORDER BY p.id DESC
LIMIT %(limit)s;

-- name: get
SELECT {proposals.columns}
FROM memory_proposals p JOIN archive_sessions s ON s.id = p.session_id
WHERE p.id = %(id)s;

-- name: count_pending
-- The pending proposals the caller may decide; with an agent, that agent's.
SELECT count(*) AS n FROM memory_proposals
WHERE state = 'pending' AND (%(agent)s::text IS NULL OR agent = %(agent)s);

-- name: accept
SELECT org_proposal_accept(%(id)s, %(agent)s, %(subject)s, %(claim)s) AS fact_id;

-- name: reject
SELECT org_proposal_reject(%(id)s, %(reason)s) AS id;

-- name: sessions_to_read
-- The archived sessions with messages not yet read for proposals (all of them with %(all)s).
SELECT s.id, s.harness, s.external_id, s.project, s.cwd, s.proposed_to,
       (SELECT max(m.position) FROM archive_messages m WHERE m.session_id = s.id) AS last
FROM archive_sessions s
WHERE EXISTS (SELECT 1 FROM archive_messages m WHERE m.session_id = s.id
              AND (%(all)s OR s.proposed_to IS NULL OR m.position > s.proposed_to))
ORDER BY s.id;

-- name: messages_from
-- A session's messages from a position on (the detector reads a few before what is new, for
-- the turn a correction answers), in order. The harness's record only where the detector
-- reads it (a tool call or result, and every part of a record with several): decoding every
-- message's record took a quarter of proposing's time on the real transcripts.
SELECT source_key, position, kind, text, tool_name, command,
       CASE WHEN kind IN ('user', 'assistant') AND tool_name IS NULL
                 AND count(*) OVER (PARTITION BY position) = 1 THEN NULL ELSE raw END AS raw
FROM archive_messages
WHERE session_id = %(session)s AND position >= %(from)s
ORDER BY position, part;

-- name: insert
INSERT INTO memory_proposals (session_id, message_key, agent, project, subject, claim, kind, why, score, claim_key)
VALUES (%(session_id)s, %(message_key)s, %(agent)s, %(project)s, %(subject)s, %(claim)s, %(kind)s, %(why)s,
        %(score)s, %(claim_key)s)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: agent_exists
SELECT 1 AS found FROM org_agents WHERE name = %(name)s;

-- name: read_to
UPDATE archive_sessions SET proposed_to = %(to)s WHERE id = %(session)s;
