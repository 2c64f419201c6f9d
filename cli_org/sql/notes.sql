-- The vault's notes as indexed (cli_org/vault/notes.py), as row-level security shows them.

-- name: list
-- A page of notes by path (vault_files' unique index on path), each with its tags, gathered
-- after the page is cut (in the select list they were gathered for every row OFFSET skips).
WITH page AS (
    SELECT f.id, f.path, f.title, f.size, f.private, f.scanned_at
    FROM vault_files f
    WHERE (%(private)s OR NOT f.private)
      AND (%(like)s::text IS NULL OR f.path ILIKE %(like)s OR f.title ILIKE %(like)s)
      AND (%(tag)s::text IS NULL
           OR EXISTS (SELECT 1 FROM vault_tags t WHERE t.file_id = f.id AND lower(t.tag) = lower(%(tag)s)))
    ORDER BY f.path
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT p.*,
       coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM vault_tags t WHERE t.file_id = p.id), '{}') AS tags
FROM page p
ORDER BY p.path;

-- name: get
SELECT f.id, f.path, f.title, f.size, f.private, f.scanned_at, f.frontmatter,
       coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM vault_tags t WHERE t.file_id = f.id), '{}') AS tags
FROM vault_files f
WHERE f.path = %(path)s OR f.id = %(id)s
ORDER BY f.path = %(path)s DESC
LIMIT 1;

-- name: sections
SELECT heading, content FROM vault_chunks WHERE file_id = %(id)s ORDER BY ord LIMIT %(limit)s;

-- name: section_count
SELECT count(*) AS n FROM vault_chunks WHERE file_id = %(id)s;

-- name: links
SELECT target, target_path, heading, alias, kind FROM vault_links WHERE file_id = %(id)s
ORDER BY target LIMIT %(limit)s;

-- name: linked_from
-- The notes linking to this one (index vault_links_target).
SELECT DISTINCT f.path FROM vault_links l JOIN vault_files f ON f.id = l.file_id
WHERE l.target_path = %(path)s AND (%(private)s OR NOT f.private)
ORDER BY f.path LIMIT %(limit)s;
