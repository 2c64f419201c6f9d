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
-- back oldest first; each with the run saved just before it of the same golden file and k
-- (its trend's previous point), which may lie on an older page.
SELECT * FROM (
    SELECT id, name, author, created_at, git_commit, embedder, vault_files, vault_chunks, golden_file, k, project,
           summary,
           lag(name) OVER same_set AS previous_name, lag(author) OVER same_set AS previous_author
    FROM eval_runs
    WINDOW same_set AS (PARTITION BY golden_file, k ORDER BY created_at, id)
    ORDER BY created_at DESC, id DESC LIMIT %(limit)s OFFSET %(offset)s
) newest ORDER BY created_at, id;

-- name: previous_run
-- The run of the same golden file and k saved just before run %(id)s.
SELECT p.* FROM eval_runs r JOIN eval_runs p ON p.golden_file = r.golden_file AND p.k = r.k
WHERE r.id = %(id)s AND (p.created_at, p.id) < (r.created_at, r.id)
ORDER BY p.created_at DESC, p.id DESC LIMIT 1;

-- name: vault_size
SELECT (SELECT count(*) FROM vault_files) AS files, (SELECT count(*) FROM vault_chunks) AS chunks,
       (SELECT value FROM vault_meta WHERE key = 'embed_model') AS embedder;

-- name: typical_recall
SELECT count(*) AS calls, percentile_cont(0.5) WITHIN GROUP (ORDER BY chars) AS median_chars
FROM recall_events WHERE created_at >= now() - interval '30 days';

-- name: facts_for_stale
SELECT id, subject, claim, source, source_hash, created_at FROM memory_facts WHERE valid_to IS NULL ORDER BY id;
