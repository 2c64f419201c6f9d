-- Projects and their restrictions (migration 0035). Every query runs as the caller: a
-- project restricted away from the caller is in none of these answers.

-- name: restrict
-- The agents replace the project's list; NULL lifts the restriction. Owners only.
SELECT org_restrict_project(%(project)s, %(agents)s::text[]) AS n;

-- name: access
-- Who a project is restricted to, as the caller may read it (none: not restricted, or not
-- the caller's to know).
SELECT agent, restricted_by, restricted_at FROM org_project_access
WHERE project = %(project)s ORDER BY agent;

-- name: list
-- Every project the caller may read, from what names one, with its current facts, open
-- todos and archived sessions, and its restriction.
WITH named AS (
    SELECT project FROM memory_facts WHERE project IS NOT NULL AND valid_to IS NULL
    UNION SELECT project FROM org_todos WHERE project IS NOT NULL
    UNION SELECT project FROM archive_sessions WHERE project IS NOT NULL
    UNION SELECT project FROM org_project_access
)
SELECT n.project,
       (SELECT count(*) FROM memory_facts f WHERE f.project = n.project AND f.valid_to IS NULL) AS facts,
       (SELECT count(*) FROM org_todos t WHERE t.project = n.project AND t.done_at IS NULL) AS todos,
       (SELECT count(*) FROM archive_sessions s WHERE s.project = n.project) AS sessions,
       (SELECT array_agg(a.agent ORDER BY a.agent) FROM org_project_access a WHERE a.project = n.project)
           AS restricted_to
FROM named n
ORDER BY n.project
LIMIT %(limit)s;
