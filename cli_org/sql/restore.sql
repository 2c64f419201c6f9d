-- name: tables
-- The tables a backup's rows may go into (the migrations' own, in the staging database):
-- the columns a COPY may name, whether row-level security is forced on the owner, and the
-- enabled triggers, which the load sets aside (rows that are history, not new writes).
SELECT c.relname AS name, c.relforcerowsecurity AS forced,
       array(SELECT a.attname::text FROM pg_attribute a
             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
             ORDER BY a.attnum) AS columns,
       array(SELECT t.tgname::text FROM pg_trigger t
             WHERE t.tgrelid = c.oid AND NOT t.tgisinternal AND t.tgenabled <> 'D' ORDER BY 1) AS triggers
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
ORDER BY 1;

-- name: foreign_keys
-- Dropped for the load and made again after it, which checks every row at once whatever
-- order the file holds the tables in (as pg_restore itself does).
SELECT c.relname AS tbl, k.conname AS name, pg_get_constraintdef(k.oid) AS definition
FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE k.contype = 'f' AND n.nspname = 'public'
ORDER BY 1, 2;

-- name: sequences
SELECT sequencename AS name FROM pg_sequences WHERE schemaname = 'public';

-- name: sessions
-- Other client sessions on a database (what renaming it waits for).
SELECT pid, usename AS role, application_name AS application, backend_start, state
FROM pg_stat_activity
WHERE datname = %(database)s AND pid <> pg_backend_pid() AND backend_type = 'client backend'
ORDER BY backend_start;

-- name: ghosts
-- Direct members of the org's member group that no agent of the restored data names.
SELECT m.rolname AS role
FROM pg_auth_members am JOIN pg_roles g ON g.oid = am.roleid JOIN pg_roles m ON m.oid = am.member
WHERE g.rolname = %(group)s AND NOT (m.rolname = ANY (%(agents)s))
ORDER BY 1;
