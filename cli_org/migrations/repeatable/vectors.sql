-- requires: vector
-- The fact vectors' functions, triggers, grants and policies: they wait for pgvector, as the
-- numbered migrations that make those tables do (0017, 0038).
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

CREATE OR REPLACE FUNCTION public.org_fact_vector_stored() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    -- Only the author's vector counts: recall trusts it for every reader (migration 0017).
    DELETE FROM public.memory_facts_unembedded WHERE fact_id = NEW.fact_id AND author = NEW.computed_by;
    RETURN NULL;
END $function$;
REVOKE ALL ON FUNCTION public.org_fact_vector_stored() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_fact_written_unembedded() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    INSERT INTO public.memory_facts_unembedded (fact_id, author) VALUES (NEW.id, NEW.author)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $function$;
REVOKE ALL ON FUNCTION public.org_fact_written_unembedded() FROM PUBLIC;


-- The newest current facts on the list, at most p_scan (bounded at 10,000) ids: a walk of the
-- list's key, each checked against memory_facts by its key.
CREATE OR REPLACE FUNCTION public.org_facts_unembedded(p_scan integer) RETURNS bigint[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT coalesce(array_agg(newest.fact_id), '{}')
    FROM (SELECT u.fact_id
          FROM public.memory_facts_unembedded u
          JOIN public.memory_facts f ON f.id = u.fact_id AND f.valid_to IS NULL
          ORDER BY u.fact_id DESC
          LIMIT least(greatest(p_scan, 0), 10000)) AS newest
$function$;
REVOKE ALL ON FUNCTION public.org_facts_unembedded(integer) FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_facts_unembedded(integer) TO %I', public.org_member_role());
END $$;

DROP POLICY IF EXISTS fact_vectors_erase ON public.memory_fact_vectors; CREATE POLICY fact_vectors_erase ON public.memory_fact_vectors FOR DELETE USING (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS fact_vectors_insert_as_self ON public.memory_fact_vectors; CREATE POLICY fact_vectors_insert_as_self ON public.memory_fact_vectors FOR INSERT WITH CHECK ((computed_by = org_me()));

DROP POLICY IF EXISTS fact_vectors_read ON public.memory_fact_vectors; CREATE POLICY fact_vectors_read ON public.memory_fact_vectors FOR SELECT USING (true);

-- requires: vector
-- (stays pending on a server without pgvector, like 0017 whose table it guards;
-- cli_org/db/migrate.py)
-- A restricted project's fact vectors (0035): a vector is written only for a fact its writer
-- may read, and read only with it. 0035 could not say so where the vectors table does not
-- exist yet (a team server that gets pgvector later), so it is said here, after 0017 in
-- either order; the read policy takes the form that org_project_access calls for.
DROP TRIGGER IF EXISTS memory_fact_vectors_fact_guard ON public.memory_fact_vectors; CREATE TRIGGER memory_fact_vectors_fact_guard BEFORE INSERT ON public.memory_fact_vectors FOR EACH ROW EXECUTE FUNCTION org_fact_write_guard();

DROP TRIGGER IF EXISTS memory_fact_vectors_stored ON public.memory_fact_vectors; CREATE TRIGGER memory_fact_vectors_stored AFTER INSERT ON public.memory_fact_vectors FOR EACH ROW EXECUTE FUNCTION org_fact_vector_stored();

DROP TRIGGER IF EXISTS memory_facts_unembedded ON public.memory_facts; CREATE TRIGGER memory_facts_unembedded AFTER INSERT ON public.memory_facts FOR EACH ROW EXECUTE FUNCTION org_fact_written_unembedded();

-- The restricted projects' read rules, in the form the org's rows call for.
SELECT public.org_project_policies_sync(true);
