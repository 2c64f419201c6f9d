-- name: facts_strict
-- Full text with every word ANDed, or the whole query as a substring of subject or claim.
-- Past the newest facts, the substring test runs only on the facts whose word pieces
-- (migration 0020) hold every word of three or more characters of the query (%(pieces)s,
-- from `pieces`); NULL when the query has no such word, and then every current fact is
-- tested. Only the newest %(cap)s matches are ranked (`newest_matches`).
WITH tested AS NOT MATERIALIZED (
    SELECT * FROM memory_facts
    WHERE valid_to IS NULL
      AND (%(project)s::text IS NULL OR project IS NULL OR project = %(project)s)
      AND (search @@ websearch_to_tsquery('english', %(query)s)
           OR (%(substring)s
               -- strpos first: cutting a fact into its pieces costs far more
               AND (strpos(lower(subject), lower(%(query)s)) > 0
                    OR strpos(lower(claim), lower(%(query)s)) > 0)))
), matching AS NOT MATERIALIZED (
    SELECT * FROM tested
    WHERE search @@ websearch_to_tsquery('english', %(query)s)
       OR %(pieces)s::tsquery IS NULL OR fact_word_pieces(subject, claim) @@ %(pieces)s::tsquery
), {recall.newest_matches}
SELECT {facts.columns},
       ts_rank_cd(search, websearch_to_tsquery('english', %(query)s)) AS rank
FROM newest
ORDER BY rank DESC, created_at DESC
LIMIT %(limit)s;

-- name: facts_loose
-- At least %(need)s of the query's terms start a word of the subject or claim. Past the
-- newest facts, the regex runs only on the facts whose word pieces (migration 0020) can hold
-- that many of the terms (%(pieces)s, built by facts_arm._loose_pieces); NULL: every current
-- fact. Only the newest %(cap)s matches are ranked (`newest_matches`).
WITH tested AS NOT MATERIALIZED (
    SELECT * FROM (
        SELECT *,
               (SELECT count(*) FROM unnest(%(patterns)s::text[]) AS p
                WHERE (subject || ' ' || claim) ~* p) AS matched
        FROM memory_facts
        WHERE valid_to IS NULL
          AND (%(project)s::text IS NULL OR project IS NULL OR project = %(project)s)
    ) f
    WHERE matched >= %(need)s
), matching AS NOT MATERIALIZED (
    SELECT * FROM tested
    WHERE %(pieces)s::tsquery IS NULL OR fact_word_pieces(subject, claim) @@ %(pieces)s::tsquery
), {recall.newest_matches}
SELECT {facts.columns}, matched
FROM newest
ORDER BY matched DESC, created_at DESC
LIMIT %(limit)s;

-- name: newest_matches
-- The newest %(cap)s matches of a lexical pass, by id, read in two tiers (facts_arm.RANK_CAP,
-- issue 38): the facts after id %(newest)s, each tested as written (`tested`: never the piece
-- index, whose answer to a common prefix costs seconds at 1M facts however few rows it is
-- asked about), then, only while they held fewer than %(cap)s matches (a one-time filter),
-- the older ones asked of the indexes first (`matching`). A common word stops in the first
-- tier; a rarer one's matches are few in the second. A fragment, included by facts_strict
-- and facts_loose.
recent AS MATERIALIZED (SELECT * FROM tested WHERE id > %(newest)s),
older AS (  -- inlined: its matches go straight to the top-N sort, never stored
    SELECT * FROM matching WHERE id <= %(newest)s AND (SELECT count(*) FROM recent) < %(cap)s
),
newest AS (
    SELECT * FROM (SELECT * FROM recent UNION ALL SELECT * FROM older) t
    ORDER BY id DESC
    LIMIT %(cap)s
)

-- name: inputs
-- What recall works out before its arms, in one round trip (`inputs_columns`).
SELECT {recall.inputs_columns}, NULL::bigint AS unembedded;

-- name: inputs_counted
-- `inputs`, and the count of facts without a vector for recall's notice
-- (`fact_vectors.unembedded_visible`, which needs pgvector's tables: migration 0038).
SELECT {recall.inputs_columns}, ({fact_vectors.unembedded_visible}) AS unembedded;

-- name: inputs_columns
-- Each part is NULL when its parameter is. `pieces`: the runs of word characters of each of
-- %(texts)s, as migration 0020's fact_word_pieces cuts a fact (lower case, split on \W+, 60
-- characters at most), for the lexical passes' index queries: cut by the server, so a
-- query's words and a fact's pieces are cut the same way. `unknown`: those of %(words)s none
-- of whose lexemes any vault note or current fact holds, a question naming something the
-- memory has never seen (recall raises its floors for it; a stop word names no subject).
-- `notebook` (given %(notebook)s): the caller's own live entries (`notebook.mine`).
-- `hnsw`: the fact arm's HNSW scan settings for %(ef_search)s candidates, local to the
-- transaction (vault/search.py, hnsw_scan). `top` (given %(texts)s): the newest fact's id,
-- where the lexical passes' tiers start (`newest_matches`).
(SELECT json_agg(
            (SELECT array_agg(left(s.w, 60) ORDER BY s.n)
             FROM unnest(regexp_split_to_array(lower(t.text), '\W+')) WITH ORDINALITY AS s(w, n)
             WHERE s.w <> '')
            ORDER BY t.ord)
 FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS t(text, ord)) AS pieces,
CASE WHEN %(words)s::text[] IS NOT NULL THEN (
    SELECT coalesce(array_agg(w.word ORDER BY w.word) FILTER (WHERE w.word IS NOT NULL), '{}')
    FROM unnest(%(words)s::text[]) AS w(word)
    WHERE EXISTS (SELECT 1 FROM unnest(to_tsvector('english', w.word)))
      AND NOT EXISTS (
        SELECT 1 FROM unnest(to_tsvector('english', w.word)) u
        WHERE EXISTS (SELECT 1 FROM vault_terms t WHERE t.term = u.lexeme)
           OR EXISTS (SELECT 1 FROM memory_facts f
                      WHERE f.valid_to IS NULL AND f.search @@ to_tsquery('simple', quote_literal(u.lexeme)))))
END AS unknown,
CASE WHEN %(notebook)s THEN (
    SELECT coalesce(json_agg(m ORDER BY m.store, m.id), '[]') FROM ({notebook.mine}) m)
END AS notebook,
CASE WHEN %(ef_search)s::text IS NOT NULL THEN
    set_config('hnsw.ef_search', %(ef_search)s, true) || ' ' || set_config('hnsw.iterative_scan', 'relaxed_order', true)
END AS hnsw,
CASE WHEN %(texts)s::text[] IS NOT NULL THEN (SELECT coalesce(max(id), 0) FROM memory_facts) END AS top

-- name: log
-- The call and the hits it returned (migration 0034), in one statement: the arrays are the
-- hits in order, one element each; a hit's text is cut at 2,000 characters (the column's
-- bound). The event's agent is the caller (org_me(), NULL for the administrator).
WITH event AS (
    INSERT INTO recall_events (project, query, arms, hits, chars, ms)
    VALUES (%(project)s, %(query)s, %(arms)s, %(hits)s, %(chars)s, %(ms)s)
    RETURNING id, agent
)
INSERT INTO recall_hits (event_id, agent, rank, arm, fact_id, path, line, text)
SELECT event.id, event.agent, h.rank, h.arm, h.fact_id, left(h.path, 1000), h.line, left(h.text, 2000)
FROM event,
     unnest(%(hit_arms)s::text[], %(hit_facts)s::bigint[], %(hit_paths)s::text[], %(hit_lines)s::int[],
            %(hit_texts)s::text[]) WITH ORDINALITY AS h(arm, fact_id, path, line, text, rank);

-- name: event
-- One past recall as recall_events holds it (every member reads it), and whether the caller
-- may read its hits (the notebooks' rule, migration 0034's policy).
SELECT id, created_at, agent, project, query, arms, hits, chars, ms,
       coalesce(org_notebook_readable(agent), false) AS readable  -- NULL for the admin's own recalls
FROM recall_events WHERE id = %(id)s;

-- name: event_hits
-- A past recall's stored hits in the order returned (as row-level security shows them).
SELECT rank, arm, fact_id, path, line, text FROM recall_hits
WHERE event_id = %(id)s ORDER BY rank;
