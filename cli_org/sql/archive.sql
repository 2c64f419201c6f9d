-- name: lock
SELECT pg_advisory_lock(726170003);

-- name: unlock
SELECT pg_advisory_unlock(726170003);

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
