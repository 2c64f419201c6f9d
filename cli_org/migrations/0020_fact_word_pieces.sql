-- The [fact] arm's lexical passes read an index, not every fact (issue 14, part 4: at 1M
-- facts the substring test and the loose pass ran a sequential scan each).
--
-- The substring test (`strpos`, the strict pass) and the word-start test (a regex, the loose
-- pass) cannot use the full-text index: a substring may sit inside a word ("gres" in
-- "postgresql") and the full-text lexemes are stemmed. This index holds, for every current
-- fact, each word of its subject and claim (lower case, split where `\W+` splits) and every
-- tail of that word of three or more characters. Any run of word characters of three or more
-- that occurs in a fact is then the start of one of its pieces, so a prefix query
-- (`'piece':*`) finds every fact that can hold it. The passes ask the index for those
-- candidates and keep their exact tests (strpos, the regex) on the candidates alone: the
-- same answers, from a bounded part of the index (cli_org/recall/facts_arm.py, `pieces`).
--
-- Pieces are cut at 60 characters (a tsvector lexeme may not pass 2 kB, and a claim may
-- hold one 1,000-character word); the queries cut their words the same way. pg_trgm would
-- do the same job, but the embedded server does not ship it.

-- Only current facts: every lexical pass asks for `valid_to IS NULL`.
CREATE INDEX memory_facts_pieces ON public.memory_facts USING gin (public.fact_word_pieces(subject, claim))
    WHERE valid_to IS NULL;
