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
