-- Fact embeddings (migration 0017) for the semantic pass of the [fact] arm.

-- name: missing_count
-- How many current facts lack their author's vector of this model: the caller's own facts,
-- or with %(all)s (the admin) everyone's.
SELECT count(*) AS n
FROM memory_facts f
WHERE f.valid_to IS NULL
  AND (%(all)s OR f.author = (SELECT org_me()))
  AND NOT EXISTS (SELECT 1 FROM memory_fact_vectors v
                  WHERE v.fact_id = f.id AND v.model = %(model)s AND v.computed_by = f.author);

-- name: missing
-- The next batch of those facts after id %(after)s, in id order (store/vectors.py).
SELECT f.id, f.subject, f.claim, f.author
FROM memory_facts f
WHERE f.valid_to IS NULL
  AND f.id > %(after)s
  AND (%(all)s OR f.author = (SELECT org_me()))
  AND NOT EXISTS (SELECT 1 FROM memory_fact_vectors v
                  WHERE v.fact_id = f.id AND v.model = %(model)s AND v.computed_by = f.author)
ORDER BY f.id
LIMIT %(limit)s;

-- name: unembedded
-- Of the given facts, the current ones without their author's vector of this model.
SELECT f.id, f.subject, f.claim, f.author
FROM memory_facts f
WHERE f.id = ANY(%(ids)s)
  AND f.valid_to IS NULL
  AND NOT EXISTS (SELECT 1 FROM memory_fact_vectors v
                  WHERE v.fact_id = f.id AND v.model = %(model)s AND v.computed_by = f.author);

-- name: is_admin
SELECT public.org_is_admin() AS admin;

-- name: store
-- As the caller; as the fact's author when %(author)s is given (only the admin, with
-- row-level security lifted, may write that: store/vectors.py).
INSERT INTO memory_fact_vectors (fact_id, model, computed_by, embedding)
VALUES (%(id)s, %(model)s, coalesce(%(author)s, org_me()), %(embedding)s::vector)
ON CONFLICT DO NOTHING;

-- name: nearest
-- Current facts nearest the query by cosine, each through one trusted vector (the author's
-- first, else the caller's own): a vector another member computed is never used. The
-- candidates come from the HNSW index of migration 0021 (the %(candidates)s nearest trusted
-- vectors of facts in scope; the caller sets hnsw.ef_search and an iterative scan so that
-- the filters do not starve it); each candidate fact is then scored through its one trusted
-- vector as before. Every row also carries the query's background: how many facts in scope
-- have a trusted vector, and the mean and spread of their similarities to the query
-- (FactShaping's z). Over every fact while the table is small (%(percent)s = 100: the
-- figures are exact), else over a fixed random sample of its pages (TABLESAMPLE SYSTEM with
-- a fixed seed; `facts_arm.BACKGROUND_SAMPLE` facts on average), so a recall does not read
-- every vector. No fact near: one row of the background alone (id NULL).
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
), found AS (
    SELECT {facts.columns}, 1 - (v.embedding <=> %(query)s::vector) AS similarity
    FROM memory_facts f
    {fact_vectors.trusted}
    WHERE f.id IN (SELECT fact_id FROM near)
    ORDER BY similarity DESC, created_at DESC
    LIMIT %(limit)s
), background AS (
    SELECT count(*) AS background_n, avg(similarity) AS background_mean, stddev_pop(similarity) AS background_sd
    FROM (
        SELECT 1 - (v.embedding <=> %(query)s::vector) AS similarity
        FROM memory_facts f TABLESAMPLE SYSTEM (%(percent)s) REPEATABLE (14)
        {fact_vectors.trusted}
        WHERE f.valid_to IS NULL
          AND (%(project)s::text IS NULL OR f.project IS NULL OR f.project = %(project)s)
    ) s
)
SELECT found.*, background.*
FROM background LEFT JOIN found ON true
ORDER BY found.similarity DESC, found.created_at DESC;

-- name: search_exact
-- The same facts as `nearest`, read from every fact in scope: for a short answer from the
-- index (cli_org/recall/facts_arm.py, `_nearest`), so that vectors nobody trusts crowding one
-- spot of the graph cannot hide anything.
SELECT {facts.columns}, 1 - (v.embedding <=> %(query)s::vector) AS similarity
FROM memory_facts f
{fact_vectors.trusted}
WHERE f.valid_to IS NULL
  AND (%(project)s::text IS NULL OR f.project IS NULL OR f.project = %(project)s)
ORDER BY similarity DESC, created_at DESC
LIMIT %(limit)s;

-- name: facts_estimate
-- The planner's estimate of the facts table's rows (-1 before its first ANALYZE).
SELECT reltuples AS estimate FROM pg_class WHERE oid = 'memory_facts'::regclass;

-- name: trusted
-- The one vector of fact `f` that recall trusts (migration 0017): the author's first, else
-- the caller's own; a vector another member computed is never used. A fragment, included
-- by `nearest` and `search_exact`.
CROSS JOIN LATERAL (
    SELECT embedding FROM memory_fact_vectors v
    WHERE v.fact_id = f.id AND v.model = %(model)s
      AND (v.computed_by = f.author OR v.computed_by = (SELECT org_me()))
    ORDER BY v.computed_by = f.author DESC
    LIMIT 1
) v

-- name: unembedded_visible
-- How many of the newest %(scan)s current facts without their author's vector (migration
-- 0038) the caller can read: recall's notice. Probes of memory_facts by its key, never a
-- scan of the facts. A fragment, included by `recall.inputs_counted`.
SELECT count(*)
FROM unnest(org_facts_unembedded(%(scan)s)) AS listed (id)
JOIN memory_facts f ON f.id = listed.id
WHERE f.valid_to IS NULL

-- name: related
-- `facts.related_by_words`, and the %(limit)s nearest by meaning (the HNSW index, as `nearest`
-- reads it), each with its similarity through its one trusted vector (NULL: none).
WITH by_words AS MATERIALIZED (
    SELECT id FROM memory_facts
    WHERE valid_to IS NULL
      AND (project IS NULL OR project = %(project)s)
      AND search @@ replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery
    ORDER BY ts_rank(search, replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery) DESC, id DESC
    LIMIT %(limit)s
), near AS MATERIALIZED (
    SELECT v.fact_id AS id
    FROM memory_fact_vectors v
    JOIN memory_facts f ON f.id = v.fact_id
    WHERE v.model = %(model)s
      AND (v.computed_by = f.author OR v.computed_by = (SELECT org_me()))
      AND f.valid_to IS NULL
      AND (f.project IS NULL OR f.project = %(project)s)
    ORDER BY v.embedding <=> %(query)s::vector
    LIMIT %(limit)s
)
SELECT f.id, f.subject, f.claim, f.author, f.project,
       (SELECT 1 - (v.embedding <=> %(query)s::vector) FROM memory_fact_vectors v
        WHERE v.fact_id = f.id AND v.model = %(model)s
          AND (v.computed_by = f.author OR v.computed_by = (SELECT org_me()))
        ORDER BY v.computed_by = f.author DESC LIMIT 1) AS similarity
FROM memory_facts f
WHERE f.id IN (SELECT id FROM by_words UNION SELECT id FROM near);
