-- name: known_files
SELECT id, path, hash, size, mtime FROM vault_files;

-- name: upsert_file
INSERT INTO vault_files (path, title, hash, size, mtime, frontmatter, private)
VALUES (%(path)s, %(title)s, %(hash)s, %(size)s, %(mtime)s, %(frontmatter)s, org_vault_private(%(path)s))
ON CONFLICT (path) DO UPDATE
SET title = EXCLUDED.title, hash = EXCLUDED.hash, size = EXCLUDED.size, mtime = EXCLUDED.mtime,
    frontmatter = EXCLUDED.frontmatter, private = EXCLUDED.private, scanned_at = now()
RETURNING id;

-- name: touch_file
UPDATE vault_files SET size = %(size)s, mtime = %(mtime)s WHERE id = %(id)s;

-- name: drop_chunks
DELETE FROM vault_chunks WHERE file_id = %(id)s RETURNING hash, embedding::text AS embedding, embed_model;

-- name: drop_links
DELETE FROM vault_links WHERE file_id = %(id)s;

-- name: drop_tags
DELETE FROM vault_tags WHERE file_id = %(id)s;

-- name: drop_postings
-- A note holds each term once, so each removed posting lowers that term's count by one,
-- in the count of its kind of note (private or not: migration 0023).
WITH gone AS (
    DELETE FROM vault_postings WHERE file_id = ANY (%(ids)s) RETURNING term, file_id
), counted AS (
    SELECT g.term, f.private, count(*) AS n FROM gone g JOIN vault_files f ON f.id = g.file_id GROUP BY 1, 2
)
UPDATE vault_terms t SET df = t.df - c.n FROM counted c WHERE t.term = c.term AND t.private = c.private;

-- name: count_terms
INSERT INTO vault_terms (term, private, df)
SELECT p.term, f.private, count(*) FROM vault_postings p JOIN vault_files f ON f.id = p.file_id
WHERE p.file_id = ANY (%(ids)s) GROUP BY 1, 2
ON CONFLICT (term, private) DO UPDATE SET df = vault_terms.df + EXCLUDED.df;

-- name: forget_unused_terms
DELETE FROM vault_terms WHERE df = 0;

-- name: insert_chunk
INSERT INTO vault_chunks (file_id, ord, heading, content, hash, tsv, embedding, embed_model)
VALUES (%(file_id)s, %(ord)s, %(heading)s, %(content)s, %(hash)s, to_tsvector('english', %(index_text)s),
        %(embedding)s::vector, %(embed_model)s);

-- name: insert_link
INSERT INTO vault_links (file_id, target, target_path, heading, alias, kind)
VALUES (%(file_id)s, %(target)s, %(target_path)s, %(heading)s, %(alias)s, %(kind)s);

-- name: insert_tag
INSERT INTO vault_tags (file_id, tag) VALUES (%(file_id)s, %(tag)s) ON CONFLICT DO NOTHING;

-- name: build_postings
-- Term frequencies per note, summed over its chunks' tsvectors, and the note's length.
WITH tf AS (
    SELECT c.file_id, t.lexeme AS term, sum(coalesce(array_length(t.positions, 1), 1))::int AS tf
    FROM vault_chunks c, unnest(c.tsv) t
    WHERE c.file_id = ANY(%(ids)s)
    GROUP BY 1, 2
), dl AS (
    SELECT file_id, sum(tf)::int AS dl FROM tf GROUP BY 1
), lengths AS (
    UPDATE vault_files f SET length = dl.dl FROM dl WHERE f.id = dl.file_id
)
INSERT INTO vault_postings (term, file_id, tf, dl)
SELECT tf.term, tf.file_id, tf.tf, dl.dl FROM tf JOIN dl USING (file_id);

-- name: remove_files
DELETE FROM vault_files WHERE id = ANY(%(ids)s);

-- name: get_meta
SELECT value FROM vault_meta WHERE key = %(key)s;

-- name: set_meta
INSERT INTO vault_meta (key, value) VALUES (%(key)s, %(value)s)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;

-- name: refresh_stats
INSERT INTO vault_meta (key, value)
SELECT 'bm25_stats', json_build_object('n', count(*), 'avgdl', coalesce(avg(length), 0))::text FROM vault_files
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;

-- name: counts
SELECT (SELECT count(*) FROM vault_files) AS files,
       (SELECT count(*) FROM vault_chunks) AS chunks,
       (SELECT count(*) FROM vault_chunks WHERE embedding IS NOT NULL) AS vectors;

-- name: private_prefixes
SELECT prefix FROM vault_private_prefixes ORDER BY prefix;

-- name: clear_private_prefixes
DELETE FROM vault_private_prefixes;

-- name: add_private_prefix
INSERT INTO vault_private_prefixes (prefix) VALUES (%(prefix)s) ON CONFLICT DO NOTHING;

-- name: mark_private
-- Each note whose verdict changed, with the new one.
UPDATE vault_files SET private = org_vault_private(path) WHERE private <> org_vault_private(path)
RETURNING path, private;

-- name: drop_chunks_plain
-- drop_chunks on a server without pgvector (no embedding column yet).
DELETE FROM vault_chunks WHERE file_id = %(id)s RETURNING hash, NULL::text AS embedding, embed_model;

-- name: insert_chunk_plain
-- insert_chunk on a server without pgvector: no vectors to keep.
INSERT INTO vault_chunks (file_id, ord, heading, content, hash, tsv, embed_model)
VALUES (%(file_id)s, %(ord)s, %(heading)s, %(content)s, %(hash)s, to_tsvector('english', %(index_text)s),
        %(embed_model)s);

-- name: counts_plain
-- counts on a server without pgvector.
SELECT (SELECT count(*) FROM vault_files) AS files,
       (SELECT count(*) FROM vault_chunks) AS chunks,
       0::bigint AS vectors;
