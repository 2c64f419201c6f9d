-- runs before the numbered migrations
-- Restricted projects: who may read which project, and the policies' two forms.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

-- A vector, a restore or a tidy record names a fact: the writer must be able to read it (a
-- foreign key is checked without row-level security, so it would not say).
CREATE OR REPLACE FUNCTION public.org_fact_write_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    IF cardinality(org_projects_hidden()) > 0
       AND NOT EXISTS (SELECT 1 FROM memory_facts f WHERE f.id = NEW.fact_id) THEN
        RAISE EXCEPTION 'no fact with id %', NEW.fact_id USING ERRCODE = 'P0002';
    END IF;
    RETURN NEW;
END $function$;

CREATE OR REPLACE FUNCTION public.org_project_access_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    PERFORM public.org_project_policies_sync();
    RETURN NULL;
END $function$;
REVOKE ALL ON FUNCTION public.org_project_access_changed() FROM PUBLIC;

-- What a read rule costs. A policy with any condition is a security barrier: PostgreSQL then
-- evaluates a query's own conditions only after it, and uses none of them as an index
-- condition unless its operator is leakproof. Full-text `@@`, `strpos`, regular expressions
-- and pgvector's `<=>` are not, so a member's lexical fact arm lost the GIN index and read
-- every fact (at 100,000 facts, 86 ms became about 2 s a query; python -m benchmarks.restricted).
-- A policy of `true` is no barrier at all. So each read policy above has two forms: the
-- restricting one, and the one it had before this migration (no condition), used while no
-- project is restricted; org_project_policies_sync() puts in the form that the rows of
-- org_project_access call for. It runs after every change to that table (the trigger below),
-- at the end of this migration, and after `db restore` loads a backup's rows (whose triggers
-- are off). It fails closed: the policies are created restricting, above, and an org with a
-- restriction never reads with the open form. An org that restricts a project pays the
-- barrier on every read (docs/security.md says what it costs).
-- The fact vectors' policy and guard come with pgvector (repeatable/vectors.sql, which waits
-- for it as 0017 does); until then the sync passes over the policy it does not find. `force` rewrites every
-- policy even when the facts' is already in the wanted form (0039 uses it).
CREATE OR REPLACE FUNCTION public.org_project_policies_sync(force boolean DEFAULT false) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    restricted boolean := EXISTS (SELECT 1 FROM public.org_project_access);
    hidden text := '((SELECT public.org_projects_hidden())::text[])';
    any_hidden text := 'cardinality((SELECT public.org_projects_hidden())::text[]) = 0';
    sessions text := '((SELECT public.org_sessions_hidden())::bigint[])';
    by_project text := format('project IS NULL OR project <> ALL %s', hidden);
    by_fact text := format('%s OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id)', any_hidden);
    by_pin text := format('%s OR ((%s) AND EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id))',
                          any_hidden, by_project);
    by_verdict text := format('cardinality(%s) = 0 OR EXISTS (SELECT 1 FROM public.quoted_sessions q WHERE q.id = judged)',
                              sessions);
    notebooks text := '(SELECT public.org_notebooks_readable()) IS NULL'
                      ' OR agent = ANY ((SELECT public.org_notebooks_readable())::text[])';
    p record;
BEGIN
    IF NOT force AND restricted = (SELECT pg_get_expr(polqual, polrelid) <> 'true' FROM pg_policy
                     WHERE polrelid = 'public.memory_facts'::regclass AND polname = 'facts_read') THEN
        RETURN restricted;  -- already in that form
    END IF;
    FOR p IN SELECT * FROM (VALUES
        ('memory_facts', 'facts_read', by_project, 'true'),
        ('memory_facts', 'facts_retire', by_project, 'true'),
        ('org_todos', 'todos_read', by_project, 'true'),
        ('org_todos', 'todos_done', by_project, 'true'),
        ('recall_events', 'recall_events_read', by_project, 'true'),
        ('eval_runs', 'eval_runs_read', by_project, 'true'),
        ('archive_sessions', 'archive_sessions_read', by_project, 'true'),
        ('memory_proposals', 'proposals_read', format('(%s) AND org_proposal_decider(agent)', by_project),
         'org_proposal_decider(agent)'),
        ('memory_pins', 'pins_read', by_pin, 'true'),
        ('memory_pins', 'pins_write', by_pin, 'true'),
        ('memory_fact_vectors', 'fact_vectors_read', by_fact, 'true'),
        ('memory_restores', 'restores_read', by_fact, 'true'),
        ('memory_tidy_log', 'tidy_log_read', by_fact, 'true'),
        ('recall_hits', 'recall_hits_read',
         format('(%s) AND (fact_id IS NULL OR %s)', notebooks, by_fact), notebooks),
        ('archive_messages', 'archive_messages_read', format('session_id <> ALL %s', sessions), 'true'),
        ('quoted_sessions', 'quoted_sessions_read', format('session_id <> ALL %s', sessions), 'true'),
        ('quoted_recalls', 'quoted_recalls_read', by_verdict, 'true'),
        ('quoted_hits', 'quoted_hits_read', by_verdict, 'true')
    ) AS x(tbl, pol, closed, open)
      WHERE EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = to_regclass('public.' || tbl) AND polname = pol) LOOP
        EXECUTE format('ALTER POLICY %I ON public.%I USING (%s)', p.pol, p.tbl,
                       CASE WHEN restricted THEN p.closed ELSE p.open END);
    END LOOP;
    RETURN restricted;
END $function$;
REVOKE ALL ON FUNCTION public.org_project_policies_sync(boolean) FROM PUBLIC;

-- One project, the same rule: for the definer functions' lookups by id.
CREATE OR REPLACE FUNCTION public.org_project_readable(p_project text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT p_project IS NULL OR p_project <> ALL (public.org_projects_hidden())
$function$;
REVOKE ALL ON FUNCTION public.org_project_readable(text) FROM PUBLIC;

-- Writes: an agent who may not read a project may not write into it either, by any path (a
-- member's own INSERT, a definer function, the recall log). One line, before any other check.
CREATE OR REPLACE FUNCTION public.org_project_write_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    IF NEW.project IS NOT NULL AND NEW.project = ANY (org_projects_hidden()) THEN
        RAISE EXCEPTION 'project % is restricted: agent % may not read or write it', NEW.project,
            coalesce(org_caller(), 'nobody') USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $function$;

-- The projects the caller may not read, computed once per statement (a policy reads it as
-- an initplan: `(SELECT org_projects_hidden())`); each row then compares its project with a
-- short array. Empty, at the cost of one probe of an empty table, while no project is
-- restricted, and for the administrator and the owners. A definer function: members read
-- only their own projects' restrictions (the policy below), and the rule needs all of them.
CREATE OR REPLACE FUNCTION public.org_projects_hidden() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    acting text := CASE current_setting('role') WHEN 'none' THEN session_user::text ELSE current_setting('role') END;
    me text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM org_project_access) THEN
        RETURN '{}';
    END IF;
    IF pg_has_role(acting, (SELECT c.relowner FROM pg_class c WHERE c.oid = 'public.org_agents'::regclass), 'USAGE')
       OR org_is_owner() THEN
        RETURN '{}';
    END IF;
    me := org_caller();  -- NULL (the member group itself): nobody, every restricted project hidden
    RETURN ARRAY(
        SELECT DISTINCT a.project FROM org_project_access a
        WHERE NOT EXISTS (SELECT 1 FROM org_project_access b JOIN org_agents g ON g.name = b.agent
                          WHERE b.project = a.project AND (g.name = me OR g.team_lead = me))
        ORDER BY 1);
END $function$;
REVOKE ALL ON FUNCTION public.org_projects_hidden() FROM PUBLIC;

-- Restrict a project to the given agents (the list replaces the one before), or lift the
-- restriction. Owners only (and the administrator): the caller must be an owner by
-- org_is_owner(), which reads the session's role, so a member's login or SET ROLE is refused.
CREATE OR REPLACE FUNCTION public.org_restrict_project(p_project text, p_agents text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    acting text := CASE current_setting('role') WHEN 'none' THEN session_user::text ELSE current_setting('role') END;
    problem text := org_field_problem('project', 'project', p_project);
    unknown text;
    n integer;
BEGIN
    IF NOT (org_is_owner()
            OR pg_has_role(acting, (SELECT c.relowner FROM pg_class c WHERE c.oid = 'public.org_agents'::regclass), 'USAGE')) THEN
        RAISE EXCEPTION 'agent % may not restrict a project: only an owner may', coalesce(me, 'nobody')
            USING ERRCODE = '42501';
    END IF;
    IF p_project IS NULL OR problem IS NOT NULL THEN
        RAISE EXCEPTION '%', coalesce(problem, 'name the project') USING ERRCODE = '22023';
    END IF;
    IF p_agents IS NOT NULL THEN
        IF cardinality(p_agents) = 0 OR array_position(p_agents, NULL) IS NOT NULL THEN
            RAISE EXCEPTION 'name at least one agent who may read project %', p_project USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(DISTINCT x, ', ') INTO unknown FROM unnest(p_agents) x
        WHERE NOT EXISTS (SELECT 1 FROM org_agents a WHERE a.name = x);
        IF unknown IS NOT NULL THEN
            RAISE EXCEPTION 'no agent named %', unknown USING ERRCODE = 'P0002';
        END IF;
    END IF;
    LOCK TABLE org_project_access IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM org_project_access WHERE project = p_project;
    IF p_agents IS NULL THEN
        GET DIAGNOSTICS n = ROW_COUNT;
        RETURN n;  -- lifted: how many agents it named
    END IF;
    INSERT INTO org_project_access (project, agent, restricted_by)
    SELECT DISTINCT p_project, x, me FROM unnest(p_agents) x;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $function$;
REVOKE ALL ON FUNCTION public.org_restrict_project(text,text[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_sessions_hidden() RETURNS bigint[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT coalesce((SELECT array_agg(s.id ORDER BY s.id) FROM archive_sessions s, org_projects_hidden() h
                     WHERE cardinality(h) > 0 AND s.project = ANY (h)), '{}')
$function$;
REVOKE ALL ON FUNCTION public.org_sessions_hidden() FROM PUBLIC;
