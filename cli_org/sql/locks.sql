-- name: try
SELECT pg_try_advisory_lock(%(key)s) AS ok;

-- name: release
SELECT pg_advisory_unlock(%(key)s);

-- name: holders
-- Who holds an advisory lock (a bigint key is stored as two 32-bit halves).
SELECT a.pid, a.usename AS role, a.application_name AS application, a.backend_start, a.state
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = (%(key)s::bigint >> 32)::oid AND l.objid = (%(key)s::bigint & 4294967295)::oid AND l.objsubid = 1
  AND l.pid <> pg_backend_pid()
ORDER BY a.backend_start;

-- name: table_holders
-- Other sessions holding locks on this database's tables (what a DDL statement waits for).
SELECT DISTINCT a.pid, a.usename AS role, a.application_name AS application, a.backend_start, a.state
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'relation' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.pid <> pg_backend_pid()
ORDER BY a.backend_start;

-- name: try_xact
-- The same lock, held until the transaction ends (behind a pooler: db/locks.py).
SELECT pg_try_advisory_xact_lock(%(key)s) AS ok;
