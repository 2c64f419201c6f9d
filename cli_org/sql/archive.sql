-- name: upsert_session
INSERT INTO archive_sessions AS s
    (harness, external_id, parent_session, project, cwd, git_branch, model, title, started_at, ended_at)
VALUES (%(harness)s, %(external_id)s, %(parent_session)s, %(project)s, %(cwd)s, %(git_branch)s,
        %(model)s, %(title)s, %(started_at)s, %(ended_at)s)
ON CONFLICT (harness, external_id) DO UPDATE SET
    parent_session = coalesce(s.parent_session, EXCLUDED.parent_session),
    project = coalesce(s.project, EXCLUDED.project),
    cwd = coalesce(s.cwd, EXCLUDED.cwd),
    git_branch = coalesce(s.git_branch, EXCLUDED.git_branch),
    model = coalesce(s.model, EXCLUDED.model),
    title = coalesce(EXCLUDED.title, s.title),
    started_at = least(s.started_at, EXCLUDED.started_at),
    ended_at = greatest(s.ended_at, EXCLUDED.ended_at)
RETURNING id, (xmax = 0) AS inserted;

-- name: insert_message
INSERT INTO archive_messages
    (session_id, source_key, position, part, kind, occurred_at, text, tool_name, tool_call_id, command, raw)
VALUES (%(session_id)s, %(source_key)s, %(position)s, %(part)s, %(kind)s, %(occurred_at)s, %(text)s,
        %(tool_name)s, %(tool_call_id)s, %(command)s, %(raw)s)
ON CONFLICT (session_id, source_key) DO NOTHING;

-- name: source_get
SELECT size, byte_offset, line_count, last_row_id FROM archive_sources
WHERE harness = %(harness)s AND path = %(path)s;

-- name: source_save
INSERT INTO archive_sources (harness, path, size, byte_offset, line_count, last_row_id, mtime)
VALUES (%(harness)s, %(path)s, %(size)s, %(byte_offset)s, %(line_count)s, %(last_row_id)s, %(mtime)s)
ON CONFLICT (harness, path) DO UPDATE SET
    size = EXCLUDED.size,
    byte_offset = EXCLUDED.byte_offset,
    line_count = EXCLUDED.line_count,
    last_row_id = EXCLUDED.last_row_id,
    mtime = EXCLUDED.mtime,
    updated_at = now();

-- name: memory_latest
SELECT version, sha256 FROM archive_memory_versions
WHERE root = %(root)s AND path = %(path)s
ORDER BY version DESC
LIMIT 1;

-- name: memory_insert
INSERT INTO archive_memory_versions (source, root, path, abs_path, version, content, sha256, size, modified_at)
VALUES (%(source)s, %(root)s, %(path)s, %(abs_path)s, %(version)s, %(content)s, %(sha256)s, %(size)s,
        %(modified_at)s)
ON CONFLICT (root, path, version) DO NOTHING
RETURNING version;

-- name: memory_files
-- The archived files a name may mean: an absolute path (as stored, or where a file now
-- lives), a path relative to its root ('MEMORY.md'), or the end of root/path
-- ('memories/USER.md').
SELECT DISTINCT root, path FROM archive_memory_versions
WHERE abs_path = %(exact)s
   OR root || '/' || path = %(exact)s
   OR path = %(name)s
   OR right(root || '/' || path, length(%(suffix)s)) = %(suffix)s
ORDER BY root, path;

-- name: memory_history
SELECT source, root, path, abs_path, version, content, sha256, size, modified_at, captured_at
FROM archive_memory_versions
WHERE root = %(root)s AND path = %(path)s
ORDER BY version;

-- name: search_terms
SELECT numnode(websearch_to_tsquery('english', %(query)s)) AS terms;

-- name: search_messages
WITH query AS (SELECT websearch_to_tsquery('english', %(query)s) AS q),
hits AS (
    SELECT m.id, s.harness, s.external_id AS session, s.project, m.occurred_at, m.kind, m.tool_name,
           left(m.text, 100000) AS text, ts_rank_cd(m.search, query.q) AS rank, query.q
    FROM archive_messages m
    JOIN archive_sessions s ON s.id = m.session_id
    CROSS JOIN query
    WHERE m.search @@ query.q
      AND (%(harness)s::text IS NULL OR s.harness = %(harness)s)
    ORDER BY m.occurred_at DESC NULLS LAST, rank DESC, m.id DESC
    LIMIT %(limit)s
)
-- The snippet is made for the returned rows only: ts_headline re-parses the whole text.
SELECT harness, session, project, occurred_at, kind, tool_name, rank,
       ts_headline('english', coalesce(text, ''), q,
                   'MaxFragments=2, MaxWords=20, MinWords=6, StartSel=«, StopSel=», FragmentDelimiter=" ... "')
           AS snippet
FROM hits
ORDER BY occurred_at DESC NULLS LAST, rank DESC, id DESC;

-- name: session_find
SELECT s.id, s.harness, s.external_id, p.external_id AS parent, s.project, s.cwd, s.git_branch, s.model,
       s.title, s.started_at, s.ended_at
FROM archive_sessions s
LEFT JOIN archive_sessions p ON p.id = s.parent_session
WHERE s.external_id = %(external_id)s
  AND (%(harness)s::text IS NULL OR s.harness = %(harness)s)
ORDER BY s.harness;

-- name: session_messages
-- A session's messages in order; with `limit`, a page; with `chars`, each text cut to that
-- many characters (`length` says how long it was). The page's ids come first, from the index
-- alone (archive_messages_order), so the rows an OFFSET skips are never read or cut.
WITH page AS (
    SELECT id FROM archive_messages
    WHERE session_id = %(id)s
    ORDER BY position, part, id
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT m.position, m.part, m.kind, m.occurred_at,
       CASE WHEN %(chars)s::int IS NULL THEN m.text ELSE left(m.text, %(chars)s::int) END AS text,
       length(m.text) AS length, m.tool_name, m.tool_call_id, m.command
FROM archive_messages m JOIN page USING (id)
ORDER BY m.position, m.part, m.id;

-- name: session_size
SELECT count(*) AS n FROM archive_messages WHERE session_id = %(id)s;

-- name: session_list
-- Archived sessions, newest first (index archive_sessions_newest), a page, each with its
-- message count: one index-only count (archive_messages_order) per session of the page,
-- counted after the page is cut (in the select list, it ran for every row an OFFSET skips).
WITH page AS (
    SELECT s.id, s.harness, s.external_id, s.project, s.model, s.title, s.started_at, s.ended_at
    FROM archive_sessions s
    WHERE (%(harness)s::text IS NULL OR s.harness = %(harness)s)
      AND (%(project)s::text IS NULL OR s.project = %(project)s)
    ORDER BY s.started_at DESC NULLS LAST, s.id DESC
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT p.harness, p.external_id, p.project, p.model, p.title, p.started_at, p.ended_at,
       (SELECT count(*) FROM archive_messages m WHERE m.session_id = p.id) AS messages
FROM page p
ORDER BY p.started_at DESC NULLS LAST, p.id DESC;

-- name: analyze
-- After an import that added rows: fresh planner statistics. Without them the usage queries
-- (usage.sql), planned for an archive of a few rows, ran nested loops: by_harness took 330 s
-- over 1,000 freshly imported sessions, and 0.2 s after ANALYZE (benchmarks/usage_scale.py).
ANALYZE archive_sessions, archive_messages;
