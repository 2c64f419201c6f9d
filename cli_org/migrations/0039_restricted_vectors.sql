-- requires: vector
-- (stays pending on a server without pgvector, like 0017 whose table it guards;
-- cli_org/db/migrate.py)
-- A restricted project's fact vectors (0035): a vector is written only for a fact its writer
-- may read, and read only with it. 0035 could not say so where the vectors table does not
-- exist yet (a team server that gets pgvector later), so it is said here, after 0017 in
-- either order; the read policy takes the form that org_project_access calls for.
CREATE TRIGGER memory_fact_vectors_fact_guard BEFORE INSERT ON public.memory_fact_vectors
    FOR EACH ROW EXECUTE FUNCTION public.org_fact_write_guard();
SELECT public.org_project_policies_sync(true);
