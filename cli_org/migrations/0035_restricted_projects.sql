-- Restricted projects (issue 33, item 8): a client's agent never sees another client's facts.
--
-- An owner restricts a project to named agents (`cli-org projects restrict NAME --to A,B`,
-- org_restrict_project below). From then on the project's rows are read only by those agents,
-- their team leads, the owners and the administrator; every other member reads the database
-- as if the project did not exist, and may not write into it. What is hidden, table by table
-- (each read policy below; tests/test_restricted.py lists every table a member may read from
-- the catalog, so that a new table cannot slip by unjudged):
--   memory_facts, eval_runs, recall_events, org_todos, archive_sessions   by their project
--   memory_pins                 by its scope, and by its fact
--   memory_fact_vectors, memory_restores, memory_tidy_log, recall_hits    by their fact
--   archive_messages, quoted_sessions    by their session; quoted_recalls, quoted_hits by
--                                        their verdict (so by its session)
--   org_project_access          the restriction itself: read by those who may read the project
-- A fact's word pieces and search terms are index expressions of memory_facts: no index is
-- read without the row's policy. The activity feed, the context block, recall, search, the
-- MCP tools, the web page and a member's export read these tables as the caller, so they show
-- what the caller may read and nothing else.
--
-- Who "the caller" is: the role the session acts as (SET ROLE, else the login), as
-- org_caller() and org_is_owner() read it, not current_user, so that the rule is the same
-- inside a SECURITY DEFINER function. Those functions run as the tables' owner, and an owner
-- that is a superuser (the embedded server's) skips row-level security even where it is
-- forced; so each definer function that looks a fact or a todo up by id (forget, supersede,
-- pin, unpin, restore, todo done) is redefined at the end of this file to look up only what
-- its caller may read: "no fact with id N", with no reason, author or project quoted.

CREATE TABLE public.org_project_access (
    project       text NOT NULL,
    agent         text NOT NULL REFERENCES public.org_agents (name),
    restricted_by text REFERENCES public.org_agents (name),  -- NULL: the administrator
    restricted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project, agent)
);
CREATE TRIGGER org_project_access_checks
    BEFORE INSERT OR UPDATE ON public.org_project_access
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks('project', 'project');

-- The projects the caller may not read, computed once per statement (a policy reads it as
-- an initplan: `(SELECT org_projects_hidden())`); each row then compares its project with a
-- short array. Empty, at the cost of one probe of an empty table, while no project is
-- restricted, and for the administrator and the owners. A definer function: members read
-- only their own projects' restrictions (the policy below), and the rule needs all of them.
CREATE FUNCTION public.org_projects_hidden() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
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
END $$;

-- The archived sessions of those projects: their messages and verdicts are hidden by id.
CREATE INDEX archive_sessions_project ON public.archive_sessions (project) WHERE project IS NOT NULL;
CREATE FUNCTION public.org_sessions_hidden() RETURNS bigint[]
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce((SELECT array_agg(s.id ORDER BY s.id) FROM archive_sessions s, org_projects_hidden() h
                     WHERE cardinality(h) > 0 AND s.project = ANY (h)), '{}')
$$;

-- One project, the same rule: for the definer functions' lookups by id.
CREATE FUNCTION public.org_project_readable(p_project text) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT p_project IS NULL OR p_project <> ALL (public.org_projects_hidden())
$$;

REVOKE EXECUTE ON FUNCTION public.org_projects_hidden(), public.org_sessions_hidden(),
    public.org_project_readable(text) FROM PUBLIC;

-- Writes: an agent who may not read a project may not write into it either, by any path (a
-- member's own INSERT, a definer function, the recall log). One line, before any other check.
CREATE FUNCTION public.org_project_write_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NEW.project IS NOT NULL AND NEW.project = ANY (org_projects_hidden()) THEN
        RAISE EXCEPTION 'project % is restricted: agent % may not read or write it', NEW.project,
            coalesce(org_caller(), 'nobody') USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER memory_facts_project_guard BEFORE INSERT OR UPDATE ON public.memory_facts
    FOR EACH ROW EXECUTE FUNCTION public.org_project_write_guard();
CREATE TRIGGER memory_pins_project_guard BEFORE INSERT OR UPDATE ON public.memory_pins
    FOR EACH ROW EXECUTE FUNCTION public.org_project_write_guard();
CREATE TRIGGER org_todos_project_guard BEFORE INSERT OR UPDATE ON public.org_todos
    FOR EACH ROW EXECUTE FUNCTION public.org_project_write_guard();
CREATE TRIGGER recall_events_project_guard BEFORE INSERT ON public.recall_events
    FOR EACH ROW EXECUTE FUNCTION public.org_project_write_guard();
CREATE TRIGGER eval_runs_project_guard BEFORE INSERT ON public.eval_runs
    FOR EACH ROW EXECUTE FUNCTION public.org_project_write_guard();

-- A vector, a restore or a tidy record names a fact: the writer must be able to read it (a
-- foreign key is checked without row-level security, so it would not say).
CREATE FUNCTION public.org_fact_write_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF cardinality(org_projects_hidden()) > 0
       AND NOT EXISTS (SELECT 1 FROM memory_facts f WHERE f.id = NEW.fact_id) THEN
        RAISE EXCEPTION 'no fact with id %', NEW.fact_id USING ERRCODE = 'P0002';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER memory_tidy_log_fact_guard BEFORE INSERT ON public.memory_tidy_log
    FOR EACH ROW EXECUTE FUNCTION public.org_fact_write_guard();

-- Reads. Rows without a project (org-wide) stay readable by every member.
DROP POLICY facts_read ON public.memory_facts;
CREATE POLICY facts_read ON public.memory_facts FOR SELECT
    USING (project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]));
-- The definer functions' UPDATE (retire, supersede, restore) sees what its caller may read.
DROP POLICY facts_retire ON public.memory_facts;
CREATE POLICY facts_retire ON public.memory_facts FOR UPDATE
    USING (project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]))
    WITH CHECK (true);

DROP POLICY todos_read ON public.org_todos;
CREATE POLICY todos_read ON public.org_todos FOR SELECT
    USING (project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]));
DROP POLICY todos_done ON public.org_todos;
CREATE POLICY todos_done ON public.org_todos FOR UPDATE
    USING (project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]))
    WITH CHECK (true);

DROP POLICY recall_events_read ON public.recall_events;
CREATE POLICY recall_events_read ON public.recall_events FOR SELECT
    USING (project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]));

DROP POLICY eval_runs_read ON public.eval_runs;
CREATE POLICY eval_runs_read ON public.eval_runs FOR SELECT
    USING (project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]));

-- A pin's scope is its fact's project (org_pin refuses another), so a restricted fact is
-- pinned in its own project only and counts against that project's cap (5), never the
-- org-wide 10. The fact test covers a pin written before the restriction, or by an import.
-- Only when a project is restricted: while none is, a pin is read as before.
DROP POLICY pins_read ON public.memory_pins;
CREATE POLICY pins_read ON public.memory_pins FOR SELECT
    USING (cardinality((SELECT public.org_projects_hidden())::text[]) = 0
           OR ((project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]))
               AND EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id)));
DROP POLICY pins_write ON public.memory_pins;
CREATE POLICY pins_write ON public.memory_pins FOR ALL
    USING (cardinality((SELECT public.org_projects_hidden())::text[]) = 0
           OR ((project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]))
               AND EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id)))
    WITH CHECK (true);

-- By the fact (the memory_facts policy applies inside the subquery), and only while some
-- project is hidden from the caller: otherwise no lookup per row at all.
DROP POLICY restores_read ON public.memory_restores;
CREATE POLICY restores_read ON public.memory_restores FOR SELECT
    USING (cardinality((SELECT public.org_projects_hidden())::text[]) = 0
           OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id));
DROP POLICY tidy_log_read ON public.memory_tidy_log;
CREATE POLICY tidy_log_read ON public.memory_tidy_log FOR SELECT
    USING (cardinality((SELECT public.org_projects_hidden())::text[]) = 0
           OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id));
-- A recall's hits: the notebooks' rule (0034), and a fact hit's fact.
DROP POLICY recall_hits_read ON public.recall_hits;
CREATE POLICY recall_hits_read ON public.recall_hits FOR SELECT
    USING (((SELECT public.org_notebooks_readable()) IS NULL
            OR agent = ANY ((SELECT public.org_notebooks_readable())::text[]))
           AND (fact_id IS NULL OR cardinality((SELECT public.org_projects_hidden())::text[]) = 0
                OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id)));

-- The archive: members read it, the administrator (the tables' owner) writes it. Row-level
-- security is enabled, not forced (as for the vault's tables): the owner's import is not
-- filtered, members are.
ALTER TABLE public.archive_sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY archive_sessions_read ON public.archive_sessions FOR SELECT
    USING (project IS NULL OR project <> ALL ((SELECT public.org_projects_hidden())::text[]));
ALTER TABLE public.archive_messages ENABLE ROW LEVEL SECURITY;
CREATE POLICY archive_messages_read ON public.archive_messages FOR SELECT
    USING (session_id <> ALL ((SELECT public.org_sessions_hidden())::bigint[]));
DROP POLICY quoted_sessions_read ON public.quoted_sessions;
CREATE POLICY quoted_sessions_read ON public.quoted_sessions FOR SELECT
    USING (session_id <> ALL ((SELECT public.org_sessions_hidden())::bigint[]));
DROP POLICY quoted_recalls_read ON public.quoted_recalls;
CREATE POLICY quoted_recalls_read ON public.quoted_recalls FOR SELECT
    USING (cardinality((SELECT public.org_sessions_hidden())::bigint[]) = 0
           OR EXISTS (SELECT 1 FROM public.quoted_sessions q WHERE q.id = judged));
DROP POLICY quoted_hits_read ON public.quoted_hits;
CREATE POLICY quoted_hits_read ON public.quoted_hits FOR SELECT
    USING (cardinality((SELECT public.org_sessions_hidden())::bigint[]) = 0
           OR EXISTS (SELECT 1 FROM public.quoted_sessions q WHERE q.id = judged));

-- The restrictions: read by those who may read the project; written only through the two
-- functions below (members hold SELECT alone). Enabled, not forced: org_projects_hidden()
-- reads every row as the owner.
ALTER TABLE public.org_project_access ENABLE ROW LEVEL SECURITY;
CREATE POLICY project_access_read ON public.org_project_access FOR SELECT
    USING (project <> ALL ((SELECT public.org_projects_hidden())::text[]));

-- Restrict a project to the given agents (the list replaces the one before), or lift the
-- restriction. Owners only (and the administrator): the caller must be an owner by
-- org_is_owner(), which reads the session's role, so a member's login or SET ROLE is refused.
CREATE FUNCTION public.org_restrict_project(p_project text, p_agents text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
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
END $$;
REVOKE EXECUTE ON FUNCTION public.org_restrict_project(text, text[]) FROM PUBLIC;

REVOKE ALL ON public.org_project_access FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.org_project_access TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_projects_hidden(), public.org_sessions_hidden(),'
                   ' public.org_project_readable(text), public.org_restrict_project(text, text[]) TO %I',
                   public.org_member_role());
END $$;

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
-- The fact vectors' policy and guard come with pgvector (0039, which waits for it as 0017
-- does); until then the sync passes over the table it does not find. `force` rewrites every
-- policy even when the facts' is already in the wanted form (0039 uses it).
CREATE FUNCTION public.org_project_policies_sync(force boolean DEFAULT false) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
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
    ) AS x(tbl, pol, closed, open) WHERE to_regclass('public.' || tbl) IS NOT NULL LOOP
        EXECUTE format('ALTER POLICY %I ON public.%I USING (%s)', p.pol, p.tbl,
                       CASE WHEN restricted THEN p.closed ELSE p.open END);
    END LOOP;
    RETURN restricted;
END $$;
REVOKE EXECUTE ON FUNCTION public.org_project_policies_sync(boolean) FROM PUBLIC;

CREATE FUNCTION public.org_project_access_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    PERFORM public.org_project_policies_sync();
    RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION public.org_project_access_changed() FROM PUBLIC;
CREATE TRIGGER org_project_access_sync AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.org_project_access
    FOR EACH STATEMENT EXECUTE FUNCTION public.org_project_access_changed();

SELECT public.org_project_policies_sync();

-- The definer functions that look a fact (or a todo) up by id, as they were (0001, 0014,
-- 0026, 0032), with one change each: the lookup adds `AND org_project_readable(project)`, so a
-- row of a project the caller may not read is not found (see the top of this file).
CREATE OR REPLACE FUNCTION public.org_forget(p_id bigint, p_why text)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
    me text := org_caller();
    f memory_facts;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    IF btrim(coalesce(p_why, '')) = '' THEN
        RAISE EXCEPTION 'say why the fact is retired' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO f FROM memory_facts WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    PERFORM org_retire_check(me, f);
    UPDATE memory_facts SET valid_to = now(), retired_by = me, retired_reason = btrim(p_why)
    WHERE id = p_id;
    RETURN p_id;
END $function$;

CREATE OR REPLACE FUNCTION public.org_supersede(p_old bigint, p_new bigint)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
    me text := org_caller();
    old_fact memory_facts;
    new_fact memory_facts;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO old_fact FROM memory_facts WHERE id = p_old AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_old USING ERRCODE = 'P0002';
    END IF;
    SELECT * INTO new_fact FROM memory_facts WHERE id = p_new AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND OR new_fact.author <> me OR new_fact.valid_to IS NOT NULL
       OR new_fact.supersedes IS NOT NULL OR p_new = p_old THEN
        RAISE EXCEPTION 'fact % is not a new current fact of %', p_new, me USING ERRCODE = '22023';
    END IF;
    PERFORM org_retire_check(me, old_fact);
    UPDATE memory_facts
    SET valid_to = now(), retired_by = me, retired_reason = format('superseded by #%s', p_new),
        superseded_by = p_new
    WHERE id = p_old;
    UPDATE memory_facts SET supersedes = p_old WHERE id = p_new;
    RETURN p_new;
END $function$;

CREATE OR REPLACE FUNCTION public.org_pin(p_id bigint, p_project text)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
    me text := org_caller();
    f memory_facts;
    scope text;
    live memory_pins;
    cap integer;
    n integer;
    new_id bigint;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    -- The fact row first, then the table: the order forget takes them (no deadlock).
    SELECT * INTO f FROM memory_facts WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF f.valid_to IS NOT NULL THEN
        RAISE EXCEPTION 'fact % is not current (retired by %: %); only current facts can be pinned',
            p_id, f.retired_by, f.retired_reason USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, f.author) THEN
        RAISE EXCEPTION 'agent % may not pin fact %: only its author (%), their team lead, or an owner may',
            me, p_id, f.author USING ERRCODE = '42501';
    END IF;
    scope := coalesce(nullif(btrim(p_project), ''), f.project);
    IF f.project IS NOT NULL AND scope IS DISTINCT FROM f.project THEN
        RAISE EXCEPTION 'fact % belongs to project %; pin it there (--project %)', p_id, f.project, f.project
            USING ERRCODE = '22023';
    END IF;
    -- Two pins racing for the last place: the second waits here and then counts the first.
    LOCK TABLE memory_pins IN SHARE ROW EXCLUSIVE MODE;
    SELECT * INTO live FROM memory_pins WHERE fact_id = p_id AND unpinned_at IS NULL;
    IF FOUND THEN
        IF live.project IS NOT DISTINCT FROM scope THEN
            RETURN live.id;  -- already pinned there: nothing to do
        END IF;
        RAISE EXCEPTION 'fact % is already pinned %; unpin it first', p_id,
            CASE WHEN live.project IS NULL THEN 'org-wide' ELSE 'in project ' || live.project END
            USING ERRCODE = '55000';
    END IF;
    SELECT CASE WHEN scope IS NULL THEN c.org_cap ELSE c.project_cap END INTO cap FROM org_pin_caps() c;
    SELECT count(*) INTO n FROM memory_pins WHERE unpinned_at IS NULL AND project IS NOT DISTINCT FROM scope;
    IF n >= cap THEN
        RAISE EXCEPTION '% already holds % pins, the cap; unpin one first. Pinned: %',
            CASE WHEN scope IS NULL THEN 'the org-wide scope' ELSE 'project ' || scope END, n,
            org_pins_listed(scope) USING ERRCODE = '55000';
    END IF;
    INSERT INTO memory_pins (fact_id, project, pinned_by) VALUES (p_id, scope, me) RETURNING id INTO new_id;
    RETURN new_id;
END $function$;

CREATE OR REPLACE FUNCTION public.org_unpin(p_id bigint)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
    me text := org_caller();
    f memory_facts;
    live memory_pins;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO f FROM memory_facts WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF NOT org_may_retire(me, f.author) THEN
        RAISE EXCEPTION 'agent % may not unpin fact %: only its author (%), their team lead, or an owner may',
            me, p_id, f.author USING ERRCODE = '42501';
    END IF;
    SELECT * INTO live FROM memory_pins WHERE fact_id = p_id AND unpinned_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fact % is not pinned', p_id USING ERRCODE = '55000';
    END IF;
    UPDATE memory_pins SET unpinned_at = now(), unpinned_by = me, unpin_reason = 'unpinned' WHERE id = live.id;
    RETURN live.id;
END $function$;

CREATE OR REPLACE FUNCTION public.org_restore(p_id bigint, p_why text)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
    me text := org_caller();
    f memory_facts;
    successor memory_facts;
    twin bigint;
    ended memory_pins;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    IF btrim(coalesce(p_why, '')) = '' THEN
        RAISE EXCEPTION 'say why the fact comes back' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO f FROM memory_facts WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF f.valid_to IS NULL THEN
        RAISE EXCEPTION 'fact % is current; there is nothing to restore', p_id USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, f.author) THEN
        RAISE EXCEPTION 'agent % may not restore fact %: only its author (%), their team lead, or an owner may',
            me, p_id, f.author USING ERRCODE = '42501';
    END IF;
    IF f.superseded_by IS NOT NULL THEN
        SELECT * INTO successor FROM memory_facts WHERE id = f.superseded_by;
        IF successor.valid_to IS NULL THEN
            RAISE EXCEPTION 'fact % was superseded by #%, which is current; a superseded fact comes back only '
                            'by retiring its successor: `cli-org forget % WHY`, then restore %',
                p_id, successor.id, successor.id, p_id USING ERRCODE = '55000';
        END IF;
    END IF;
    SELECT id INTO twin FROM memory_facts
    WHERE valid_to IS NULL AND author = f.author AND subject = f.subject AND md5(claim) = md5(f.claim)
      AND coalesce(project, '') = coalesce(f.project, '');
    IF FOUND THEN
        RAISE EXCEPTION 'fact % cannot come back: the same claim by % is current again as #%', p_id, f.author, twin
            USING ERRCODE = '55000';
    END IF;
    -- Read before the fact changes: the pin this retirement ended, if it ended one.
    SELECT * INTO ended FROM org_retirement_pin(p_id, f.valid_to, f.retired_reason);
    INSERT INTO memory_restores (fact_id, retired_at, retired_by, retired_reason, superseded_by, restored_by, why)
    VALUES (f.id, f.valid_to, f.retired_by, f.retired_reason, f.superseded_by, me, btrim(p_why));
    BEGIN
        UPDATE memory_facts
        SET valid_to = NULL, retired_by = NULL, retired_reason = NULL, superseded_by = NULL
        WHERE id = p_id;
    EXCEPTION WHEN unique_violation THEN  -- a twin written concurrently
        RAISE EXCEPTION 'fact % cannot come back: the same claim by % is current again', p_id, f.author
            USING ERRCODE = '55000';
    END;
    IF ended.id IS NOT NULL THEN
        -- The same pin again, as a new row: its scope and who pinned it (the ended row keeps
        -- why it ended). A pin is made only under a name that may pin this fact: a pinner who
        -- may not (a row an import brought, a lead since replaced) yields to the restorer,
        -- who may (checked above). The cap trigger (0023) still counts: a scope filled since
        -- stays full, and the fact comes back unpinned (the client says so).
        BEGIN
            INSERT INTO memory_pins (fact_id, project, pinned_by)
            VALUES (p_id, ended.project,
                    CASE WHEN org_may_retire(ended.pinned_by, f.author) THEN ended.pinned_by ELSE me END);
        EXCEPTION WHEN object_not_in_prerequisite_state THEN
            NULL;
        END;
    END IF;
    RETURN p_id;
END $function$;

CREATE OR REPLACE FUNCTION public.org_todo_done(p_id bigint)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
DECLARE
    me text := org_caller();
    t org_todos;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO t FROM org_todos WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no todo with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF t.done_at IS NOT NULL THEN
        RAISE EXCEPTION 'todo % is already done (by %)', p_id, t.done_by USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, t.author) THEN
        RAISE EXCEPTION 'agent % may not mark todo % done: only its author (%), their team lead, or an owner may',
            me, p_id, t.author USING ERRCODE = '42501';
    END IF;
    UPDATE org_todos SET done_at = now(), done_by = me WHERE id = p_id;
    RETURN p_id;
END $function$;
