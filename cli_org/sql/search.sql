-- name: bm25
-- Okapi BM25 over whole notes, from the postings the scan keeps. Document frequencies are
-- counted from the same postings rows the scoring reads, so they are never stale.
WITH q AS (
    SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', %(query)s))
), s AS (
    SELECT (value::json ->> 'n')::float8 AS n,
           greatest((value::json ->> 'avgdl')::float8, 1) AS avgdl
    FROM vault_meta WHERE key = 'bm25_stats'
), p AS MATERIALIZED (
    SELECT p.term, p.file_id, p.tf, p.dl FROM vault_postings p JOIN q ON p.term = q.term
), df AS (
    SELECT term, count(*) AS df FROM p GROUP BY term
), scored AS (
    SELECT p.file_id,
           sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
               * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / s.avgdl))) AS score,
           count(*) AS matched
    FROM p JOIN df USING (term) CROSS JOIN s
    GROUP BY p.file_id
)
SELECT sc.file_id, sc.score, sc.matched, (SELECT count(*) FROM q) AS terms,
       (SELECT json_object_agg(term, df) FROM df) AS dfs, (SELECT n FROM s) AS n, (SELECT avgdl FROM s) AS avgdl
FROM scored sc JOIN vault_files f ON f.id = sc.file_id
WHERE NOT (f.path LIKE ANY (%(exclude)s))
ORDER BY sc.score DESC, sc.file_id
LIMIT %(limit)s;

-- name: dense
SELECT c.id AS chunk_id, c.file_id, 1 - (c.embedding <=> %(vector)s::vector) AS similarity
FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
WHERE c.embedding IS NOT NULL AND NOT (f.path LIKE ANY (%(exclude)s))
ORDER BY c.embedding <=> %(vector)s::vector
LIMIT %(limit)s;

-- name: has_vectors
SELECT EXISTS (SELECT 1 FROM vault_chunks WHERE embedding IS NOT NULL) AS yes,
       (SELECT value FROM vault_meta WHERE key = 'embed_model') AS model;

-- name: best_chunks
-- For notes found by keyword only: the chunk that matches the query best.
SELECT DISTINCT ON (c.file_id) c.id AS chunk_id, c.file_id
FROM vault_chunks c
WHERE c.file_id = ANY (%(ids)s)
ORDER BY c.file_id,
         ts_rank(c.tsv, (SELECT coalesce(string_agg(quote_literal(lexeme), ' | '), '')::tsquery
                         FROM unnest(to_tsvector('english', %(query)s)))) DESC,
         c.ord;

-- name: hit_rows
SELECT c.id AS chunk_id, f.id AS file_id, f.path, f.title, c.heading, c.content
FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
WHERE c.id = ANY (%(ids)s);

-- name: bm25_for
-- BM25 of given notes (those only the dense side found), with the document frequencies the
-- ranked query already counted: a few index probes, not another pass over the postings.
SELECT p.file_id,
       sum(ln(1 + (%(n)s - d.df + 0.5) / (d.df + 0.5))
           * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / %(avgdl)s))) AS score,
       count(*) AS matched
FROM vault_postings p
JOIN unnest(%(terms)s::text[], %(dfs)s::float8[]) AS d (term, df) ON d.term = p.term
WHERE p.file_id = ANY (%(ids)s)
GROUP BY p.file_id;

-- name: dense_for
-- Best chunk similarity of the given notes (those the keyword side found).
SELECT DISTINCT ON (file_id) file_id, id AS chunk_id, 1 - (embedding <=> %(vector)s::vector) AS similarity
FROM vault_chunks
WHERE file_id = ANY (%(ids)s) AND embedding IS NOT NULL
ORDER BY file_id, embedding <=> %(vector)s::vector;
