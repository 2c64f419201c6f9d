-- requires: vector
-- (stays pending on a server without pgvector, like 0017 whose table it indexes;
-- cli_org/db/migrate.py)
-- The semantic pass of the [fact] arm reads the nearest vectors from this graph instead of
-- computing the cosine to every fact (issue 14, part 4). The trust rule does not change:
-- the index only proposes candidates; cli_org/sql/fact_vectors.sql `search` still scores each
-- fact through one vector its author or the caller computed. No new grants: an index adds
-- no way in.
CREATE INDEX IF NOT EXISTS memory_fact_vectors_embedding
    ON public.memory_fact_vectors USING hnsw (embedding vector_cosine_ops);
