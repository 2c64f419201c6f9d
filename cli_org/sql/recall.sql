-- name: facts_strict
-- Full text with every word ANDed, or the whole query as a substring of subject or claim.
-- The substring test runs only on the facts whose word pieces (migration 0020) hold every
-- word of three or more characters of the query (%(pieces)s, from `pieces`); NULL when the
-- query has no such word, and then every current fact is tested.
-- Only the newest %(cap)s matches are ranked (facts_arm.RANK_CAP): a common word's matches
-- are then found walking migration 0031's index newest first and stopped, not all ranked.
SELECT {facts.columns},
       ts_rank_cd(search, websearch_to_tsquery('english', %(query)s)) AS rank
FROM (
    SELECT * FROM memory_facts
    WHERE valid_to IS NULL
      AND (%(project)s::text IS NULL OR project IS NULL OR project = %(project)s)
      AND (search @@ websearch_to_tsquery('english', %(query)s)
           OR (%(substring)s
               -- strpos first: a walk down the newest-first index tests each row as written,
               -- and cutting a fact into its pieces costs far more than strpos
               AND (strpos(lower(subject), lower(%(query)s)) > 0
                    OR strpos(lower(claim), lower(%(query)s)) > 0)
               AND (%(pieces)s::tsquery IS NULL OR fact_word_pieces(subject, claim) @@ %(pieces)s::tsquery)))
    ORDER BY created_at DESC, id DESC
    LIMIT %(cap)s
) f
ORDER BY rank DESC, created_at DESC
LIMIT %(limit)s;

-- name: facts_loose
-- At least %(need)s of the query's terms start a word of the subject or claim. The regex
-- runs only on the facts whose word pieces (migration 0020) can hold that many of the terms
-- (%(pieces)s, built by facts_arm._loose_pieces); NULL: every current fact. Only the newest
-- %(cap)s matches are ranked (facts_arm.RANK_CAP), as in facts_strict.
SELECT * FROM (
    SELECT * FROM (
        SELECT {facts.columns},
               (SELECT count(*) FROM unnest(%(patterns)s::text[]) AS p
                WHERE (subject || ' ' || claim) ~* p) AS matched
        FROM memory_facts
        WHERE valid_to IS NULL
          AND (%(project)s::text IS NULL OR project IS NULL OR project = %(project)s)
          AND (%(pieces)s::tsquery IS NULL OR fact_word_pieces(subject, claim) @@ %(pieces)s::tsquery)
    ) f
    WHERE matched >= %(need)s
    ORDER BY created_at DESC, id DESC
    LIMIT %(cap)s
) f
ORDER BY matched DESC, created_at DESC
LIMIT %(limit)s;

-- name: pieces
-- The runs of word characters of each text, as migration 0020's fact_word_pieces cuts a
-- fact (lower case, split on \W+, 60 characters at most), for the lexical passes' index
-- queries: cut by the server, so a query's words and a fact's pieces are cut the same way.
SELECT t.ord,
       (SELECT array_agg(left(s.w, 60) ORDER BY s.n)
        FROM unnest(regexp_split_to_array(lower(t.text), '\W+')) WITH ORDINALITY AS s(w, n)
        WHERE s.w <> '') AS words
FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS t(text, ord)
ORDER BY t.ord;

-- name: unknown_terms
-- The question's words none of whose lexemes any vault note or current fact holds: a
-- question naming something the memory has never seen (recall raises its floors for it).
SELECT array_agg(w.word ORDER BY w.word) FILTER (WHERE w.word IS NOT NULL) AS unknown
FROM unnest(%(words)s::text[]) AS w(word)
WHERE EXISTS (SELECT 1 FROM unnest(to_tsvector('english', w.word)))  -- a stop word is no subject
  AND NOT EXISTS (
    SELECT 1 FROM unnest(to_tsvector('english', w.word)) u
    WHERE EXISTS (SELECT 1 FROM vault_terms t WHERE t.term = u.lexeme)
       OR EXISTS (SELECT 1 FROM memory_facts f
                  WHERE f.valid_to IS NULL AND f.search @@ to_tsquery('simple', quote_literal(u.lexeme))));

-- name: log
INSERT INTO recall_events (project, query, arms, hits, chars, ms)
VALUES (%(project)s, %(query)s, %(arms)s, %(hits)s, %(chars)s, %(ms)s);
