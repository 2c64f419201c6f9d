-- name: delivered
-- The entry keys already delivered to the caller in a session (row-level security: its own).
SELECT hit_key FROM context_delivered WHERE session = %(session)s;

-- name: deliver
INSERT INTO context_delivered (session, hit_key) VALUES (%(session)s, %(key)s)
ON CONFLICT DO NOTHING;

-- name: facts
-- The newest current facts of one kind in scope, at most %(window)s: org-wide, and with
-- %(project)s that project's, each scope read from migration 0030's index, walked and
-- stopped, and the two merged newest first.
SELECT * FROM (
    (SELECT {facts.columns} FROM memory_facts
     WHERE valid_to IS NULL AND kind = %(kind)s AND project IS NULL
     ORDER BY created_at DESC, id DESC LIMIT %(window)s)
    UNION ALL
    (SELECT {facts.columns} FROM memory_facts
     WHERE valid_to IS NULL AND kind = %(kind)s AND project = %(project)s
     ORDER BY created_at DESC, id DESC LIMIT %(window)s)
) f
ORDER BY created_at DESC, id DESC
LIMIT %(window)s;

-- name: pinned
-- The pinned facts in scope (org-wide, or the project's), current or not.
SELECT {facts.columns} FROM memory_facts
WHERE id = ANY(%(ids)s::bigint[]) AND (project IS NULL OR project = %(project)s);

-- name: counts
-- The facts in scope by state: current, retired, superseded (what the block counts and
-- does not list). Each scope is read from an index that holds it alone (migration 0030).
SELECT (SELECT count(*) FROM memory_facts WHERE valid_to IS NULL AND project IS NULL)
       + (SELECT count(*) FROM memory_facts WHERE valid_to IS NULL AND project = %(project)s) AS current,
       count(*) FILTER (WHERE e.superseded_by IS NULL) AS retired,
       count(*) FILTER (WHERE e.superseded_by IS NOT NULL) AS superseded
FROM (SELECT superseded_by FROM memory_facts WHERE valid_to IS NOT NULL AND project IS NULL
      UNION ALL
      SELECT superseded_by FROM memory_facts WHERE valid_to IS NOT NULL AND project = %(project)s) e;
