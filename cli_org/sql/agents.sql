-- name: member_role
SELECT org_member_role() AS name;

-- name: get
SELECT name, kind, team_lead, is_owner, role_name, created_at FROM org_agents WHERE name = %(name)s;

-- name: insert
INSERT INTO org_agents (name, kind, team_lead, is_owner, role_name)
VALUES (%(name)s, %(kind)s, %(lead)s, %(owner)s, %(role)s);

-- name: list
SELECT name, kind, team_lead, is_owner, role_name, created_at FROM org_agents ORDER BY name;

-- name: owner_count
SELECT count(*) AS n FROM org_agents WHERE is_owner;

-- name: admin_may_become
-- Whether the connected administrator may SET ROLE to the agent's role (a superuser may).
-- PostgreSQL 16 split membership: a CREATEROLE admin holds ADMIN on the roles it makes
-- but may SET ROLE to them only with the SET option.
SELECT pg_has_role(current_user, %(role)s,
                   CASE WHEN current_setting('server_version_num')::int >= 160000 THEN 'SET' ELSE 'MEMBER' END) AS yes;

-- name: role_exists
SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %(role)s) AS found;

-- name: login
-- The agent's role and whether it may log in itself (`agents add --login`).
SELECT a.role_name, coalesce(r.rolcanlogin, false) AS can_login
FROM org_agents a LEFT JOIN pg_roles r ON r.rolname = a.role_name
WHERE a.name = %(name)s;

-- name: overview
-- Every agent with what the Agents page shows, in one statement (no query per agent):
-- facts written (current / all), notebook use per store where row-level security lets the
-- caller read it (org_notebook_readable, migration 0013: the agent, its team lead, an
-- owner), and its recall calls. Bounded by the number of agents; the aggregates scan
-- memory_facts, notebook_entries and recall_events once each (only the named agent's rows
-- when `name` is given: its own page).
WITH written AS (
    SELECT author, count(*) FILTER (WHERE valid_to IS NULL) AS current, count(*) AS total
    FROM memory_facts WHERE %(name)s::text IS NULL OR author = %(name)s GROUP BY author
), notes AS (
    SELECT agent,
           coalesce(sum(length(body)) FILTER (WHERE store = 'memory'), 0) AS memory,
           coalesce(sum(length(body)) FILTER (WHERE store = 'user'), 0) AS "user"
    FROM notebook_entries WHERE removed_at IS NULL AND (%(name)s::text IS NULL OR agent = %(name)s) GROUP BY agent
), recalls AS (
    SELECT agent, count(*) AS calls, max(created_at) AS last FROM recall_events
    WHERE agent IS NOT NULL AND (%(name)s::text IS NULL OR agent = %(name)s) GROUP BY agent
)
SELECT a.name, a.kind, a.team_lead, a.is_owner, a.created_at,
       coalesce(w.current, 0) AS facts_current, coalesce(w.total, 0) AS facts_all,
       org_notebook_readable(a.name) AS notebook_readable,
       CASE WHEN org_notebook_readable(a.name) THEN coalesce(n.memory, 0) END AS notebook_memory,
       CASE WHEN org_notebook_readable(a.name) THEN coalesce(n."user", 0) END AS notebook_user,
       coalesce(r.calls, 0) AS recalls, r.last AS last_recall
FROM org_agents a
LEFT JOIN written w ON w.author = a.name
LEFT JOIN notes n ON n.agent = a.name
LEFT JOIN recalls r ON r.agent = a.name
WHERE %(name)s::text IS NULL OR a.name = %(name)s
ORDER BY a.name;

-- name: recent_recalls
-- An agent's latest recall calls, newest first (recall_events, migration 0004; members
-- read every line, as `usage` does).
SELECT id, created_at, project, query, arms, hits, chars, ms
FROM recall_events WHERE agent = %(name)s
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: current_login
SELECT current_user AS me;

-- name: become
-- The agent's role, the login, the role acting now, and the server process answering (a
-- pooler gives its client a pid of its own: db/connect.py note_pooler).
SELECT role_name, session_user AS login, current_user AS acting, pg_backend_pid() AS pid
FROM org_agents WHERE name = %(name)s;

-- name: server_pid
SELECT pg_backend_pid() AS pid;

-- name: become
-- The agent's role, the login, the role acting now, and the server process answering (a
-- pooler gives its client a pid of its own: db/connect.py note_pooler).
SELECT role_name, session_user AS login, current_user AS acting, pg_backend_pid() AS pid
FROM org_agents WHERE name = %(name)s;

-- name: server_pid
SELECT pg_backend_pid() AS pid;
