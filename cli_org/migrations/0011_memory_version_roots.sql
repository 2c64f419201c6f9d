-- Memory-file versions keyed by where the file lives: `root` is the folder the file belongs
-- to and `path` is relative to it, so the specification's own query
--   SELECT path, captured_at, length(content) FROM archive_memory_versions WHERE path = 'MEMORY.md'
-- finds Claude Code's and Hermes' index files. `abs_path` keeps the absolute path the copy
-- was read from, as provenance only.
--
-- The root of each source (the same rule as memory_versions.locate() in Python, which
-- writes every new row; this copy only backfills the rows stored before 0011):
--   org-memory     the folder holding .agents/org/memory/ (the project root recall reads)
--   claude-memory  the last folder named memory (projects/<project>/memory)
--   hermes-memory  the memories folder
--   file           the file's own folder

ALTER TABLE archive_memory_versions
    ADD COLUMN root text,
    ADD COLUMN abs_path text;

UPDATE archive_memory_versions SET abs_path = path;

UPDATE archive_memory_versions
SET root = coalesce(nullif(CASE
        WHEN source = 'org-memory' AND strpos(abs_path, '/.agents/org/memory/') > 0
            THEN left(abs_path, strpos(abs_path, '/.agents/org/memory/') - 1)
        WHEN source = 'claude-memory' AND abs_path ~ '^.*/memory/.+$'
            THEN substring(abs_path FROM '^(.*/memory)/.+$')
        ELSE substring(abs_path FROM '^(.*)/[^/]*$')
    END, ''), '/');

UPDATE archive_memory_versions
SET path = ltrim(substr(abs_path, length(root) + 1), '/')
WHERE abs_path LIKE '/%';

-- A path stored relative before 0011 (never written by cli-org, which resolves paths) stays
-- as it was, under the root '.'.
UPDATE archive_memory_versions SET root = '.' WHERE abs_path NOT LIKE '/%';

ALTER TABLE archive_memory_versions
    ALTER COLUMN root SET NOT NULL,
    ALTER COLUMN abs_path SET NOT NULL,
    DROP CONSTRAINT archive_memory_versions_path_version_key,
    -- Many projects hold a MEMORY.md: the version number counts per file, i.e. per root and path.
    ADD CONSTRAINT archive_memory_versions_file_version UNIQUE (root, path, version);

CREATE INDEX archive_memory_versions_path ON archive_memory_versions (path);
