-- Fact embeddings (migration 0017) for the semantic pass of the [fact] arm.

-- name: missing
-- Current facts without a vector of this model that recall trusts: one computed by the
-- fact's author or by the caller (org_me(); NULL for a connection that is no agent).
SELECT f.id, f.subject, f.claim
FROM memory_facts f
WHERE f.valid_to IS NULL
  AND NOT EXISTS (SELECT 1 FROM memory_fact_vectors v
                  WHERE v.fact_id = f.id AND v.model = %(model)s
                    AND (v.computed_by = f.author OR v.computed_by = org_me()))
ORDER BY f.id
LIMIT %(limit)s;

-- name: store
INSERT INTO memory_fact_vectors (fact_id, model, embedding)
VALUES (%(id)s, %(model)s, %(embedding)s::vector)
ON CONFLICT DO NOTHING;

-- name: search
-- Current facts nearest the query by cosine, each through one trusted vector (the author's
-- first, else the caller's own): a vector another member computed is never used. Beside
-- each, the query's background over every fact in scope (how many, mean and spread of the
-- similarities), computed before the LIMIT.
SELECT *, count(*) OVER () AS n, avg(similarity) OVER () AS mean,
       stddev_pop(similarity) OVER () AS sd
FROM (
    SELECT {facts.columns}, 1 - (v.embedding <=> %(query)s::vector) AS similarity
    FROM memory_facts f
    CROSS JOIN LATERAL (
        SELECT embedding FROM memory_fact_vectors v
        WHERE v.fact_id = f.id AND v.model = %(model)s
          AND (v.computed_by = f.author OR v.computed_by = org_me())
        ORDER BY v.computed_by = f.author DESC
        LIMIT 1
    ) v
    WHERE f.valid_to IS NULL
      AND (%(project)s::text IS NULL OR f.project IS NULL OR f.project = %(project)s)
) s
ORDER BY similarity DESC, created_at DESC
LIMIT %(limit)s;
