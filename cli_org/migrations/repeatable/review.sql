-- The review list (migration 0043; issue 36): who reads its items, who writes them, and each
-- agent's refresh record. Its policies all live here.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.
--
-- Refreshed as whom: as the owner or team lead whose session started it (store/review.py),
-- with that agent's reads. Its scan sees only the facts it may read, so it replaces only the
-- items it can see: the items of a restricted project it may not read stay as the last refresh
-- by a reader of that project left them (an owner reads every project). An item is read with
-- the facts it names, like a link (links.sql): one whose fact the reader may not read is hidden
-- with it, by the reader's own policy on memory_facts.

-- Who refreshes: an owner or a team lead (the agents the session-start line speaks to).
CREATE OR REPLACE FUNCTION public.org_is_reviewer() RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT (SELECT public.org_is_owner())
        OR EXISTS (SELECT 1 FROM public.org_agents WHERE team_lead = public.org_me())
$function$;
REVOKE ALL ON FUNCTION public.org_is_reviewer() FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_is_reviewer() TO %I', public.org_member_role());
END $$;

DROP POLICY IF EXISTS review_items_read ON public.memory_review_items;
CREATE POLICY review_items_read ON public.memory_review_items FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id)
    AND (other_id IS NULL OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = other_id)));
-- A reviewer writes items as itself, between facts it may read; a member writes none.
DROP POLICY IF EXISTS review_items_insert ON public.memory_review_items;
CREATE POLICY review_items_insert ON public.memory_review_items FOR INSERT WITH CHECK (
    found_by = org_me() AND (SELECT org_is_reviewer())
    AND EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id)
    AND (other_id IS NULL OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = other_id)));
DROP POLICY IF EXISTS review_items_update ON public.memory_review_items;
CREATE POLICY review_items_update ON public.memory_review_items FOR UPDATE
    USING ((SELECT org_is_reviewer())
           AND EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id)
           AND (other_id IS NULL OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = other_id)))
    WITH CHECK (found_by = org_me());
DROP POLICY IF EXISTS review_items_delete ON public.memory_review_items;
CREATE POLICY review_items_delete ON public.memory_review_items FOR DELETE USING (
    (SELECT org_is_reviewer())
    AND EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id)
    AND (other_id IS NULL OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = other_id)));
DROP POLICY IF EXISTS review_items_admin ON public.memory_review_items;
CREATE POLICY review_items_admin ON public.memory_review_items FOR ALL
    USING ((SELECT org_is_admin())) WITH CHECK ((SELECT org_is_admin()));

-- Each agent reads and writes its own refresh record only.
DROP POLICY IF EXISTS review_runs_own ON public.memory_review_runs;
CREATE POLICY review_runs_own ON public.memory_review_runs FOR ALL
    USING (agent = org_me()) WITH CHECK (agent = org_me());
DROP POLICY IF EXISTS review_runs_admin ON public.memory_review_runs;
CREATE POLICY review_runs_admin ON public.memory_review_runs FOR ALL
    USING ((SELECT org_is_admin())) WITH CHECK ((SELECT org_is_admin()));
