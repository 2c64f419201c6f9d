-- name: insert
-- A link as the connected agent (links_insert_as_self); the live one already there is kept.
INSERT INTO memory_links (from_id, kind, to_id, reason)
VALUES (%(from_id)s, %(kind)s, %(to_id)s, %(reason)s)
ON CONFLICT (to_id, kind, coalesce(from_id, 0), (CASE WHEN from_id IS NULL THEN author ELSE '' END))
    WHERE removed_at IS NULL DO NOTHING
RETURNING id;

-- name: live_between
SELECT id FROM memory_links
WHERE removed_at IS NULL AND to_id = %(to_id)s AND kind = %(kind)s
  AND coalesce(from_id, 0) = coalesce(%(from_id)s::bigint, 0)
  AND (from_id IS NOT NULL OR author = org_me());

-- name: get
SELECT id, from_id, kind, to_id, author, reason, via, created_at, removed_by, removed_at, removed_reason
FROM memory_links WHERE id = %(id)s;

-- name: unlink
SELECT org_unlink(%(id)s, %(why)s) AS id;

-- name: of_facts
-- The live links that touch any of these facts, at either end, oldest first.
SELECT id, from_id, kind, to_id, author, reason, via, created_at, removed_by, removed_at, removed_reason
FROM memory_links
WHERE removed_at IS NULL AND (to_id = ANY(%(ids)s::bigint[]) OR from_id = ANY(%(ids)s::bigint[]))
ORDER BY id;

-- name: fact_state
-- The two ends of a link the caller asks for, as it may read them.
SELECT id, author, project, valid_to IS NULL AS current FROM memory_facts WHERE id = ANY(%(ids)s::bigint[]);

-- name: shown
-- The live links of one fact, both ways, each with the fact at its other end (none for an
-- agent's own confirmation), oldest first; row-level security hides what the caller may not read.
SELECT l.id, CASE WHEN l.from_id = %(id)s THEN 'out' ELSE 'in' END AS direction, l.kind,
       o.id AS other_id, o.subject AS other_subject, o.claim AS other_claim, o.author AS other_author,
       o.valid_to IS NULL AS other_current, l.author, l.reason, l.via, l.created_at
FROM memory_links l
LEFT JOIN memory_facts o ON o.id = CASE WHEN l.from_id = %(id)s THEN l.to_id ELSE l.from_id END
WHERE l.removed_at IS NULL AND (l.to_id = %(id)s OR l.from_id = %(id)s)
ORDER BY l.id;

-- name: marks
-- The live links touching these facts, a row per fact and link, with the fact at the link's
-- other end as the caller reads it: a link to a fact the caller may not read is hidden by
-- links_read, and an agent's own confirmation has no other end (its columns are NULL). One
-- statement for every fact a recall answer or a context block shows (recall/marks.py).
WITH ends AS (
    SELECT l.to_id AS hit, l.id AS link_id, l.kind AS link_kind, l.from_id AS link_from, l.to_id AS link_to,
           l.author AS link_author, l.from_id AS other
    FROM memory_links l
    WHERE l.removed_at IS NULL AND l.to_id = ANY(%(ids)s::bigint[])
    UNION ALL
    SELECT l.from_id, l.id, l.kind, l.from_id, l.to_id, l.author, l.to_id
    FROM memory_links l
    WHERE l.removed_at IS NULL AND l.from_id = ANY(%(ids)s::bigint[])
)
SELECT e.hit, e.link_id, e.link_kind, e.link_from, e.link_to, e.link_author, o.*
FROM ends e
LEFT JOIN LATERAL (SELECT {facts.columns} FROM memory_facts WHERE id = e.other) o ON true
ORDER BY e.link_id;
