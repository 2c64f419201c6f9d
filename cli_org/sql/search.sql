-- name: bm25
-- Okapi BM25 over whole notes, from the postings the scan keeps. A term in more than
-- %(per_term)s notes is scored on its %(per_term)s densest postings only (its weight in the
-- others is small); every other term, and every document frequency (kept by the scan in
-- vault_terms), is exact.
WITH q AS (
    SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', %(query)s))
), s AS (
    SELECT (value::json ->> 'n')::float8 AS n,
           greatest((value::json ->> 'avgdl')::float8, 1) AS avgdl
    FROM vault_meta WHERE key = 'bm25_stats'
), df AS (
    -- Per term, once: its document frequency, its idf, and the length-normalisation terms.
    SELECT q.term, coalesce(t.df, 0) AS df,
           ln(1 + (s.n - coalesce(t.df, 0) + 0.5) / (coalesce(t.df, 0) + 0.5)) AS idf,
           %(k1)s * (1 - %(b)s) AS k_base, %(k1)s * %(b)s / s.avgdl AS k_len
    -- A term counts once per kind of note (migration 0023): sum the rows the caller may see.
    FROM q CROSS JOIN s LEFT JOIN (
        SELECT term, sum(df)::integer AS df FROM vault_terms WHERE term IN (SELECT term FROM q) GROUP BY term
    ) t ON t.term = q.term
), p AS (
    SELECT t.file_id, d.term, d.idf * t.tf * (%(k1)s + 1) / (t.tf + d.k_base + d.k_len * t.dl) AS w
    FROM df d CROSS JOIN LATERAL (
        SELECT p.file_id, p.tf, p.dl FROM vault_postings p
        WHERE p.term = d.term
        ORDER BY p.tf::real / p.dl DESC
        LIMIT %(per_term)s
    ) t
), scored AS (
    SELECT file_id, sum(w) AS score, count(*) AS matched, array_agg(term ORDER BY term) AS words
    FROM p GROUP BY file_id
)
-- `words`: the query's terms the note holds; `idfs`: every query term's idf (a term no note
-- holds included), so recall can weigh the shared words by rarity.
SELECT sc.file_id, sc.score, sc.matched, sc.words, (SELECT count(*) FROM q) AS terms,
       (SELECT json_object_agg(term, df) FROM df WHERE df > 0) AS dfs,
       (SELECT json_object_agg(term, idf) FROM df) AS idfs, (SELECT n FROM s) AS n,
       (SELECT avgdl FROM s) AS avgdl
-- Best first, and only as many notes looked up for the path rules as the limit needs: a
-- note shows if it is visible to the caller (row-level security), not private (unless
-- asked for) and not under an excluded prefix.
FROM (SELECT * FROM scored ORDER BY score DESC, file_id) sc
WHERE EXISTS (SELECT 1 FROM vault_files f WHERE f.id = sc.file_id AND (%(private)s OR NOT f.private)
              AND NOT f.path LIKE ANY (%(exclude)s))
ORDER BY sc.score DESC, sc.file_id
LIMIT %(limit)s;

-- name: dense
-- The chunks nearest the query, nearest first, as the HNSW index gives them. Search keeps a
-- note's nearest chunk for the %(depth)s nearest notes (the first found first on a tie): that
-- chunk brings its text (`hit_rows`'s columns; NULL on the other rows), so the hits found here
-- need no statement for their text, and the BM25 of its note when the keyword side did not
-- find that note (%(scored)s), with the document frequencies the ranked query (`bm25`)
-- already counted (%(terms)s, %(dfs)s, %(n)s, %(avgdl)s; NULL: none scored): a few index
-- probes, not another pass over the postings.
WITH near AS MATERIALIZED (
    SELECT c.id AS chunk_id, c.file_id, 1 - (c.embedding <=> %(vector)s::vector) AS similarity
    FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
    WHERE c.embedding IS NOT NULL AND (%(private)s OR NOT f.private) AND NOT (f.path LIKE ANY (%(exclude)s))
    ORDER BY c.embedding <=> %(vector)s::vector
    LIMIT %(limit)s
), ranked AS (
    -- the index's order kept as `ord` (a window with no ORDER BY reads its input in order)
    SELECT near.*, row_number() OVER () AS ord FROM near
), best AS (
    SELECT ranked.*, similarity = max(similarity) OVER (PARTITION BY file_id) AS nearest FROM ranked
), kept AS (
    SELECT file_id FROM ranked GROUP BY file_id ORDER BY max(similarity) DESC, min(ord) LIMIT %(depth)s
), keyword AS (
    SELECT p.file_id,
           sum(ln(1 + (%(n)s - d.df + 0.5) / (d.df + 0.5))
               * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / %(avgdl)s))) AS keyword_score,
           count(*) AS keyword_matched, array_agg(d.term ORDER BY d.term) AS keyword_words
    FROM unnest(%(terms)s::text[], %(dfs)s::float8[]) AS d (term, df)
    CROSS JOIN (SELECT file_id FROM kept WHERE NOT file_id = ANY (%(scored)s::bigint[])) AS i
    -- One primary-key probe per (term, note); LIMIT 1 keeps the planner from turning the
    -- probes into scans of every posting of a common term.
    CROSS JOIN LATERAL (
        SELECT q.file_id, q.tf, q.dl FROM vault_postings q
        WHERE q.term = d.term AND q.file_id = i.file_id LIMIT 1
    ) p
    GROUP BY p.file_id
)
SELECT b.chunk_id, b.file_id, b.similarity, t.path, t.title, t.heading, t.content,
       k.keyword_score, k.keyword_matched, k.keyword_words
FROM best b
-- By key, row by row: a plain join here read every chunk (a hash join over a sequential
-- scan); LIMIT 1 (a chunk has one id) keeps the planner from making it one.
LEFT JOIN LATERAL (
    SELECT f.path, f.title, c.heading, c.content
    FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
    WHERE c.id = b.chunk_id AND b.nearest AND b.file_id IN (SELECT file_id FROM kept)
    LIMIT 1
) t ON true
LEFT JOIN keyword k ON b.nearest AND k.file_id = b.file_id
ORDER BY b.ord;

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

-- name: note_chunks
-- Every chunk of the given notes, in order: a stand-in when a hit's chunk is all boilerplate.
SELECT c.file_id, c.id AS chunk_id, c.heading, c.content
FROM vault_chunks c
WHERE c.file_id = ANY (%(ids)s)
ORDER BY c.file_id, c.ord;

-- name: hit_rows
-- The text of the hits' chunks that `dense` and `dense_for` did not bring.
SELECT c.id AS chunk_id, f.id AS file_id, f.path, f.title, c.heading, c.content
FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
WHERE c.id = ANY (%(ids)s);

-- name: dense_for
-- Best chunk similarity of the given notes (those the keyword side found), with the chunk's
-- text (`hit_rows`'s columns).
SELECT n.file_id, n.chunk_id, n.similarity, f.path, f.title, n.heading, n.content
FROM (
    SELECT DISTINCT ON (file_id) file_id, id AS chunk_id, 1 - (embedding <=> %(vector)s::vector) AS similarity,
           heading, content
    FROM vault_chunks
    WHERE file_id = ANY (%(ids)s) AND embedding IS NOT NULL
    ORDER BY file_id, embedding <=> %(vector)s::vector
) n JOIN vault_files f ON f.id = n.file_id;

-- name: may_see_private
-- Owners and the admin may (a role with no agent behind it is not the admin);
-- row-level security decides for members.
SELECT org_is_owner() OR org_is_admin() AS yes;
