-- requires: vector
-- (stays pending on a server without pgvector, like 0017 whose vectors it follows;
-- cli_org/db/migrate.py)
-- The facts that lack their author's vector (issue 33): recall says so, with the command
-- that stores them, while any current fact its reader can see is among them. Asking the
-- question of memory_facts and memory_fact_vectors directly is an anti-join over every
-- current fact, a scan per recall at 1M facts; this small table answers it by its key.
--
-- A row appears when a fact is written (every fact starts without a vector) and goes when
-- a vector of that fact computed by its author arrives (remember, import, restore, `facts
-- embed`, `vault embed`: cli_org/store/vectors.py). Vectors are never deleted and a fact's
-- text never changes, so a row that went never has to come back. Rows of facts retired
-- without a vector stay; the query joins the current facts.
--
-- Who writes: only the two triggers below (definer functions). Who reads: nobody directly
-- (no grant to members); recall asks org_facts_unembedded(), a definer function that returns
-- the ids of the newest current facts on the list, and counts those of them it can read
-- through memory_facts and its own row-level security (cli_org/sql/fact_vectors.sql,
-- `unembedded_visible`), so a rule that hides a fact from a reader hides it from the count.
-- What a member learns by calling the function itself: ids of current facts without a
-- vector, no text and no author (fact ids are a sequence anyway). A row-level policy on this
-- table that asks memory_facts was tried and dropped: the planner hashed all of memory_facts
-- for it, a scan per recall.
CREATE TABLE public.memory_facts_unembedded (
    fact_id bigint PRIMARY KEY REFERENCES public.memory_facts (id),
    author  text NOT NULL
);
INSERT INTO public.memory_facts_unembedded (fact_id, author)
SELECT f.id, f.author
FROM public.memory_facts f
WHERE NOT EXISTS (SELECT 1 FROM public.memory_fact_vectors v
                  WHERE v.fact_id = f.id AND v.computed_by = f.author);

ALTER TABLE public.memory_facts_unembedded ENABLE ROW LEVEL SECURITY;  -- and no policy: members read nothing
REVOKE ALL ON public.memory_facts_unembedded FROM PUBLIC;
