-- name: save_run
INSERT INTO eval_runs (name, git_commit, embedder, vault_files, vault_chunks, golden_file, k, project,
                       summary, cases)
VALUES (%(name)s, %(git_commit)s, %(embedder)s, %(vault_files)s, %(vault_chunks)s, %(golden_file)s, %(k)s,
        %(project)s, %(summary)s, %(cases)s)
RETURNING id, created_at;

-- name: get_run
-- By AUTHOR/NAME, or by NAME: the caller's own run (the admin's, for the admin) if there
-- is one, else every run of that name.
WITH named AS (
    SELECT * FROM eval_runs
    WHERE name = %(name)s AND (%(author)s::text IS NULL OR author = %(author)s)
)
SELECT * FROM named
WHERE %(author)s::text IS NOT NULL
   OR author IS NOT DISTINCT FROM org_me()
   OR NOT EXISTS (SELECT 1 FROM named WHERE author IS NOT DISTINCT FROM org_me())
ORDER BY created_at, id;

-- name: runs
-- The newest %(limit)s runs after skipping %(offset)s (a NULL limit: all of them), given
-- back oldest first.
SELECT * FROM (
    SELECT id, name, author, created_at, git_commit, embedder, vault_files, vault_chunks, golden_file, k, project,
           summary
    FROM eval_runs ORDER BY created_at DESC, id DESC LIMIT %(limit)s OFFSET %(offset)s
) newest ORDER BY created_at, id;

-- name: vault_size
SELECT (SELECT count(*) FROM vault_files) AS files, (SELECT count(*) FROM vault_chunks) AS chunks,
       (SELECT value FROM vault_meta WHERE key = 'embed_model') AS embedder;

-- name: typical_recall
SELECT count(*) AS calls, percentile_cont(0.5) WITHIN GROUP (ORDER BY chars) AS median_chars
FROM recall_events WHERE created_at >= now() - interval '30 days';

-- name: facts_for_stale
SELECT id, subject, claim, source, created_at FROM memory_facts WHERE valid_to IS NULL ORDER BY id;
