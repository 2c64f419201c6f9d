-- name: current
SELECT {facts.columns}, source_hash
FROM memory_facts
WHERE valid_to IS NULL AND (%(project)s::text IS NULL OR project = %(project)s)
ORDER BY id;

-- name: log
INSERT INTO memory_tidy_log (action, fact_id, kept_id, evidence)
VALUES (%(action)s, %(fact_id)s, %(kept_id)s, %(evidence)s)
RETURNING id;

-- name: current_newest
-- The newest %(newest)s current facts (the web page's bounded tidy), oldest first as `current`.
SELECT * FROM (
    SELECT {facts.columns}, source_hash
    FROM memory_facts
    WHERE valid_to IS NULL AND (%(project)s::text IS NULL OR project = %(project)s)
    ORDER BY created_at DESC, id DESC
    LIMIT %(newest)s
) recent ORDER BY id;
