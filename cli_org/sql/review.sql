-- name: due
-- Whether the caller's refresh is due (read only: the claim below writes, so it runs only then).
SELECT org_is_reviewer()
       AND NOT EXISTS (SELECT 1 FROM memory_review_runs
                       WHERE agent = org_me() AND claimed_at >= now() - make_interval(secs => %(after)s)) AS yes;

-- name: claim
-- An owner's or a team lead's session start claims the caller's refresh when none ran (or was claimed) within
-- %(after)s seconds; a refresh that holds the row (running now) is skipped, never waited
-- for. One row comes back when this call claimed it.
-- Only an owner's or a team lead's: a member's session start claims nothing.
WITH fresh AS (
    INSERT INTO memory_review_runs (agent, claimed_at) SELECT org_me(), now() WHERE org_is_reviewer()
    ON CONFLICT (agent) DO NOTHING
    RETURNING agent
), due AS (
    UPDATE memory_review_runs r SET claimed_at = now()
    WHERE r.agent = (SELECT agent FROM memory_review_runs
                     WHERE agent = org_me() AND claimed_at < now() - make_interval(secs => %(after)s)
                     FOR UPDATE SKIP LOCKED)
      AND org_is_reviewer()
    RETURNING r.agent
)
SELECT agent FROM fresh UNION ALL SELECT agent FROM due;

-- name: hold
-- The refresh's lock: the caller's run row, held by an open transaction of its own for the
-- whole refresh (members may not take advisory locks, migration 0008); taken without waiting:
-- a second refresh of the same agent is refused while one runs.
SELECT agent, claimed_at, refreshed_at, error FROM memory_review_runs WHERE agent = org_me() FOR UPDATE NOWAIT;

-- name: ensure_run
INSERT INTO memory_review_runs (agent) VALUES (org_me()) ON CONFLICT (agent) DO NOTHING;

-- name: run
SELECT agent, claimed_at, refreshed_at, error FROM memory_review_runs WHERE agent = org_me();

-- name: finished
UPDATE memory_review_runs SET refreshed_at = now(), error = %(error)s WHERE agent = org_me();

-- name: failed
UPDATE memory_review_runs SET error = %(error)s WHERE agent = org_me();

-- name: forget_items
-- The items of one kind the refresher can see (the delete policy), but those found again.
DELETE FROM memory_review_items
WHERE kind = %(kind)s AND (%(project)s::text IS NULL OR fact_id IN (SELECT id FROM memory_facts WHERE project = %(project)s))
  AND NOT (fact_id = ANY(%(fact_ids)s::bigint[]));

-- name: keep_item
INSERT INTO memory_review_items (kind, fact_id, other_id, detail)
VALUES (%(kind)s, %(fact_id)s, %(other_id)s, %(detail)s)
ON CONFLICT (kind, fact_id, coalesce(other_id, 0))
DO UPDATE SET detail = EXCLUDED.detail, found_by = org_me(), found_at = now();

-- name: items
-- The stored items of one kind whose facts are all still current and one of which the caller
-- may retire (forget's rule: its author, the author's team lead, an owner): what waits for it.
SELECT i.id, i.kind, i.fact_id, i.other_id, i.detail, i.found_at,
       f.subject, f.claim, f.source, f.author, f.project,
       o.subject AS other_subject, o.claim AS other_claim, o.author AS other_author
FROM {review.settled_by_me}
  AND i.kind = %(kind)s
ORDER BY i.fact_id, i.other_id
LIMIT %(limit)s;

-- name: item_counts
SELECT i.kind, count(*) AS n FROM {review.settled_by_me} GROUP BY i.kind;

-- name: settled_by_me
-- The stored items waiting for the caller: the tables and the conditions (a query adds its own
-- with AND).
memory_review_items i
JOIN memory_facts f ON f.id = i.fact_id AND f.valid_to IS NULL
LEFT JOIN memory_facts o ON o.id = i.other_id
WHERE (i.other_id IS NULL OR o.valid_to IS NULL)
  AND (f.author = org_me() OR (SELECT org_is_owner())
       OR EXISTS (SELECT 1 FROM org_agents g WHERE g.team_lead = org_me() AND g.name IN (f.author, o.author)))

-- name: contradictions
-- Live contradicts links between two current facts, one of which (or the link) the caller may
-- settle: retire a fact (supersede, forget) or dismiss the link (unlink).
SELECT l.id, l.from_id, l.to_id, l.author, l.reason, l.created_at,
       a.subject, a.claim, a.author AS from_author, a.project,
       b.subject AS other_subject, b.claim AS other_claim, b.author AS to_author
FROM {review.contradicting}
ORDER BY l.id
LIMIT %(limit)s;

-- name: contradiction_count
SELECT count(*) AS n FROM {review.contradicting};

-- name: contradicting
-- The tables and conditions of the two queries above.
memory_links l
JOIN memory_facts a ON a.id = l.from_id AND a.valid_to IS NULL
JOIN memory_facts b ON b.id = l.to_id AND b.valid_to IS NULL
WHERE l.kind = 'contradicts' AND l.removed_at IS NULL
  AND (org_me() IN (a.author, b.author, l.author) OR (SELECT org_is_owner())
       OR EXISTS (SELECT 1 FROM org_agents g WHERE g.team_lead = org_me() AND g.name IN (a.author, b.author, l.author)))

-- name: is_reviewer
SELECT org_is_reviewer() AS yes;

-- name: fact_projects
SELECT id, project FROM memory_facts WHERE id = ANY(%(ids)s::bigint[]);

-- name: agent_reviews
-- Whether an agent is an owner or a team lead (another agent's block: context.py).
SELECT coalesce(bool_or(a.is_owner) OR EXISTS (SELECT 1 FROM org_agents g WHERE g.team_lead = %(agent)s), false) AS yes
FROM org_agents a WHERE a.name = %(agent)s;
