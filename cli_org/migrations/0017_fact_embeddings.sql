-- requires: vector
-- (stays pending on a server without pgvector; cli_org/db/migrate.py)
-- Fact embeddings for the semantic pass of the [fact] arm (issue 13): one vector of a
-- fact's subject and claim per (fact, model, agent who computed it).
--
-- Who computes them: the recalling agent, lazily, just before its recall (a fact's text never
-- changes, so a vector once computed is good for the fact's whole life). The database cannot
-- check that a vector belongs to its text, so it records who computed it, and recall trusts
-- a vector only when it was computed by the fact's own author or by the recalling agent
-- itself (cli_org/sql/fact_vectors.sql, `search`). A hostile member can therefore forge
-- vectors only for its own recalls, or for its own facts, whose text it chose anyway: a
-- "magnet" vector on another agent's fact, or one that hides it, reaches nobody else.
-- Members read every row, as they read every fact; they insert rows as themselves only; no
-- one updates or deletes a row (a retired fact keeps its vector; nothing is ever deleted).
CREATE TABLE public.memory_fact_vectors (
    fact_id     bigint NOT NULL REFERENCES public.memory_facts (id),
    model       text NOT NULL CHECK (btrim(model) <> '' AND length(model) <= 200),
    computed_by text NOT NULL DEFAULT org_me() REFERENCES public.org_agents (name),
    embedding   vector(384) NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (fact_id, model, computed_by)
);

ALTER TABLE public.memory_fact_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_fact_vectors FORCE ROW LEVEL SECURITY;

REVOKE ALL ON public.memory_fact_vectors FROM PUBLIC;
DO $$
BEGIN
    -- Members read all rows and add their own; never UPDATE or DELETE (no grant, no policy).
    EXECUTE format('GRANT SELECT ON public.memory_fact_vectors TO %I', public.org_member_role());
    EXECUTE format('GRANT INSERT (fact_id, model, computed_by, embedding) ON public.memory_fact_vectors TO %I',
                   public.org_member_role());
END $$;
