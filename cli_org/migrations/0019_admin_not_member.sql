-- Who counts as the administrator in the notebook read rule (issue 14, team server). 0013
-- said "a role outside the member group"; but on a team server the administrator is no
-- superuser and becomes a member of each agent's role so that it can act as the agent
-- (cli_org/agents.py), which makes it a member of the group too. The rule now names the
-- administrator by what it is: the role that owns the notebook table (the definer
-- functions run as it). A superuser passes this test too; an agent never does, since no
-- agent role is a member of the administrator's.
CREATE OR REPLACE FUNCTION public.org_notebook_readable(p_agent text) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT p_agent = public.org_me()
        OR pg_catalog.pg_has_role(current_user,
                                  (SELECT c.relowner FROM pg_catalog.pg_class c
                                   WHERE c.oid = 'public.notebook_entries'::pg_catalog.regclass), 'USAGE')
        OR public.org_is_owner()
        OR EXISTS (SELECT 1 FROM public.org_agents a WHERE a.name = p_agent AND a.team_lead = public.org_me())
$$;
