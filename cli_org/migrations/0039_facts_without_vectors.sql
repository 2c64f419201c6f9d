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
-- Who writes: only the two triggers below (definer functions; members get no INSERT,
-- UPDATE or DELETE). Who reads: members, through the policy, only the rows of facts that
-- memory_facts' own row-level security lets them read (the policy asks memory_facts as the
-- reader), so a rule that hides a fact hides its row here too.
CREATE TABLE public.memory_facts_unembedded (
    fact_id bigint PRIMARY KEY REFERENCES public.memory_facts (id),
    author  text NOT NULL
);
INSERT INTO public.memory_facts_unembedded (fact_id, author)
SELECT f.id, f.author
FROM public.memory_facts f
WHERE NOT EXISTS (SELECT 1 FROM public.memory_fact_vectors v
                  WHERE v.fact_id = f.id AND v.computed_by = f.author);

ALTER TABLE public.memory_facts_unembedded ENABLE ROW LEVEL SECURITY;
CREATE POLICY facts_unembedded_read ON public.memory_facts_unembedded FOR SELECT
    USING (EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id));
REVOKE ALL ON public.memory_facts_unembedded FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.memory_facts_unembedded TO %I', public.org_member_role());
END $$;

CREATE FUNCTION public.org_fact_written_unembedded() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    INSERT INTO public.memory_facts_unembedded (fact_id, author) VALUES (NEW.id, NEW.author)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION public.org_fact_written_unembedded() FROM PUBLIC;
CREATE TRIGGER memory_facts_unembedded AFTER INSERT ON public.memory_facts
    FOR EACH ROW EXECUTE FUNCTION public.org_fact_written_unembedded();

CREATE FUNCTION public.org_fact_vector_stored() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    -- Only the author's vector counts: recall trusts it for every reader (migration 0017).
    DELETE FROM public.memory_facts_unembedded WHERE fact_id = NEW.fact_id AND author = NEW.computed_by;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION public.org_fact_vector_stored() FROM PUBLIC;
CREATE TRIGGER memory_fact_vectors_stored AFTER INSERT ON public.memory_fact_vectors
    FOR EACH ROW EXECUTE FUNCTION public.org_fact_vector_stored();
