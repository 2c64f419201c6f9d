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
