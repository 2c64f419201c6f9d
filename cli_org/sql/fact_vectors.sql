-- Fact embeddings (migration 0017) for the semantic pass of the [fact] arm.

-- name: missing
-- Current facts without a vector of this model that recall trusts: one computed by the
-- fact's author or by the caller (org_me(); NULL for a connection that is no agent).
-- Among the ids after %(newest_after)s or from %(low)s to %(high)s only (two ranges of the
-- primary key, chosen by facts_arm.ensure_fact_vectors), so a recall never reads every fact.
SELECT f.id, f.subject, f.claim
FROM memory_facts f
WHERE f.valid_to IS NULL
  AND (f.id > %(newest_after)s OR f.id BETWEEN %(low)s AND %(high)s)
  -- One index probe per fact of those ranges (a NOT EXISTS became a hash join over every
  -- vector); org_me() once per statement, not per row.
  AND (SELECT v.fact_id FROM memory_fact_vectors v
       WHERE v.fact_id = f.id AND v.model = %(model)s
         AND (v.computed_by = f.author OR v.computed_by = (SELECT org_me()))
       LIMIT 1) IS NULL
-- The newest first, so that facts remembered since the last recalls are embedded before
-- the random window's older ones when the batch cannot take both.
ORDER BY f.id DESC
LIMIT %(limit)s;

-- name: top_id
SELECT coalesce(max(id), 0) AS top FROM memory_facts;

-- name: store
INSERT INTO memory_fact_vectors (fact_id, model, embedding)
VALUES (%(id)s, %(model)s, %(embedding)s::vector)
ON CONFLICT DO NOTHING;

-- name: search
-- Current facts nearest the query by cosine, each through one trusted vector (the author's
-- first, else the caller's own): a vector another member computed is never used. The
-- candidates come from the HNSW index of migration 0021 (the %(candidates)s nearest trusted
-- vectors of facts in scope; the caller sets hnsw.ef_search and an iterative scan so that
-- the filters do not starve it); each candidate fact is then scored through its one trusted
-- vector as before.
WITH near AS MATERIALIZED (
    SELECT v.fact_id
    FROM memory_fact_vectors v
    JOIN memory_facts f ON f.id = v.fact_id
    WHERE v.model = %(model)s
      AND (v.computed_by = f.author OR v.computed_by = (SELECT org_me()))
      AND f.valid_to IS NULL
      AND (%(project)s::text IS NULL OR f.project IS NULL OR f.project = %(project)s)
    ORDER BY v.embedding <=> %(query)s::vector
    LIMIT %(candidates)s
)
SELECT {facts.columns}, 1 - (v.embedding <=> %(query)s::vector) AS similarity
FROM memory_facts f
{fact_vectors.trusted}
WHERE f.id IN (SELECT fact_id FROM near)
ORDER BY similarity DESC, created_at DESC
LIMIT %(limit)s;

-- name: search_exact
-- The same answer as `search`, read from every fact in scope: for a short answer from the
-- index (cli_org/recall/facts_arm.py, `_nearest`), so that vectors nobody trusts crowding one
-- spot of the graph cannot hide anything.
SELECT {facts.columns}, 1 - (v.embedding <=> %(query)s::vector) AS similarity
FROM memory_facts f
{fact_vectors.trusted}
WHERE f.valid_to IS NULL
  AND (%(project)s::text IS NULL OR f.project IS NULL OR f.project = %(project)s)
ORDER BY similarity DESC, created_at DESC
LIMIT %(limit)s;

-- name: background
-- The query's background: how many facts in scope have a trusted vector, and the mean and
-- spread of their similarities to the query (FactShaping's z). Over every fact while the
-- table is small (%(percent)s = 100: the figures are exact), else over a fixed random
-- sample of its pages (TABLESAMPLE SYSTEM with a fixed seed; `facts_arm.BACKGROUND_SAMPLE`
-- facts on average), so a recall no longer reads every vector.
SELECT count(*) AS n, avg(similarity) AS mean, stddev_pop(similarity) AS sd
FROM (
    SELECT 1 - (v.embedding <=> %(query)s::vector) AS similarity
    FROM memory_facts f TABLESAMPLE SYSTEM (%(percent)s) REPEATABLE (14)
    {fact_vectors.trusted}
    WHERE f.valid_to IS NULL
      AND (%(project)s::text IS NULL OR f.project IS NULL OR f.project = %(project)s)
) s;

-- name: facts_estimate
-- The planner's estimate of the facts table's rows (-1 before its first ANALYZE).
SELECT reltuples AS estimate FROM pg_class WHERE oid = 'memory_facts'::regclass;

-- name: trusted
-- The one vector of fact `f` that recall trusts (migration 0017): the author's first, else
-- the caller's own; a vector another member computed is never used. A fragment, included
-- by `search`, `search_exact` and `background`.
CROSS JOIN LATERAL (
    SELECT embedding FROM memory_fact_vectors v
    WHERE v.fact_id = f.id AND v.model = %(model)s
      AND (v.computed_by = f.author OR v.computed_by = (SELECT org_me()))
    ORDER BY v.computed_by = f.author DESC
    LIMIT 1
) v
