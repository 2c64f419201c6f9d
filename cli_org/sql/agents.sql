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
