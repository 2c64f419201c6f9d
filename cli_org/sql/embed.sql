-- name: reset
UPDATE vault_chunks SET embedding = NULL, embed_model = NULL WHERE embedding IS NOT NULL;

-- name: pending_count
SELECT count(*) AS n FROM vault_chunks WHERE embedding IS NULL;

-- name: pending_page
SELECT c.id, f.title, c.heading, c.content
FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
WHERE c.embedding IS NULL
ORDER BY c.id
LIMIT %(limit)s;

-- name: store
UPDATE vault_chunks SET embedding = %(embedding)s::vector, embed_model = %(model)s WHERE id = %(id)s;

-- name: vectors_ready
-- Whether the schema's vector parts exist (migrations marked `-- requires: vector`): false on
-- a server without pgvector, until it is added and `cli-org init` runs again.
SELECT EXISTS (SELECT 1 FROM pg_attribute
               WHERE attrelid = to_regclass('public.vault_chunks') AND attname = 'embedding' AND NOT attisdropped)
       AND to_regclass('public.memory_fact_vectors') IS NOT NULL
       AND to_regclass('public.memory_facts_unembedded') IS NOT NULL AS ready;
