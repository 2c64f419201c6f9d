-- The archive: agent sessions and their messages imported from each harness, how far each
-- source file has been read, and every version of the harness memory files.
-- Written only by the admin connection (`cli-org archive ...`); members may read it all.

CREATE TABLE archive_sessions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    harness         text NOT NULL,  -- its values: repeatable/rule_checks.sql
    external_id     text NOT NULL CHECK (btrim(external_id) <> ''),
    -- A subagent's or a compacted continuation's session points at the one that started it.
    parent_session  bigint REFERENCES archive_sessions (id),
    project         text,
    cwd             text,
    git_branch      text,
    model           text,
    title           text,
    started_at      timestamptz,
    ended_at        timestamptz,
    imported_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (harness, external_id)
);

CREATE INDEX archive_sessions_parent ON archive_sessions (parent_session);
CREATE INDEX archive_sessions_started ON archive_sessions (started_at);

CREATE TABLE archive_messages (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      bigint NOT NULL REFERENCES archive_sessions (id),
    -- Stable across re-imports: a line's uuid, a line number or a store's row id, with
    -- '#n' for the n-th further block or tool call of the same record.
    source_key      text NOT NULL,
    position        bigint NOT NULL,
    part            integer NOT NULL DEFAULT 0,
    kind            text NOT NULL,  -- its values: repeatable/rule_checks.sql
    occurred_at     timestamptz,
    text            text,
    tool_name       text,
    tool_call_id    text,
    command         text,
    raw             jsonb NOT NULL,
    -- Capped so one huge tool output cannot exceed tsvector's 1 MB limit.
    search          tsvector GENERATED ALWAYS AS (
                        to_tsvector('english', left(coalesce(text, ''), 100000) || ' ' || coalesce(tool_name, ''))
                    ) STORED,
    UNIQUE (session_id, source_key)
);

CREATE INDEX archive_messages_search ON archive_messages USING gin (search);
CREATE INDEX archive_messages_calls ON archive_messages (session_id) WHERE tool_name IS NOT NULL;
CREATE INDEX archive_messages_time ON archive_messages (occurred_at);

-- How far each source has been read, so a re-import reads only what is new.
CREATE TABLE archive_sources (
    harness         text NOT NULL,
    path            text NOT NULL,
    size            bigint NOT NULL DEFAULT 0,
    byte_offset     bigint NOT NULL DEFAULT 0,
    line_count      bigint NOT NULL DEFAULT 0,
    last_row_id     bigint,
    mtime           timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (harness, path)
);

CREATE TABLE archive_memory_versions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source          text NOT NULL CHECK (source IN ('claude-memory', 'hermes-memory', 'org-memory', 'file')),
    path            text NOT NULL,
    version         integer NOT NULL CHECK (version > 0),
    content         text NOT NULL,
    sha256          text NOT NULL,
    size            integer NOT NULL,
    modified_at     timestamptz,
    captured_at     timestamptz NOT NULL DEFAULT now(),
    -- Two concurrent captures of one file cannot both become version n.
    UNIQUE (path, version)
);

REVOKE ALL ON archive_sessions, archive_messages, archive_sources, archive_memory_versions FROM PUBLIC;

DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON archive_sessions, archive_messages, archive_sources,'
                   ' archive_memory_versions TO %I', org_member_role());
END $$;
