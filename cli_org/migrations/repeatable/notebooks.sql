-- runs before the numbered migrations
-- The agents' notebooks: who may read whose, the caps and the version history.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

-- After a write: the new state becomes a version.
CREATE OR REPLACE FUNCTION public.org_notebook_after() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    INSERT INTO public.notebook_versions (entry_id, version, agent, store, action, body, at, by)
    VALUES (NEW.id, NEW.version, NEW.agent, NEW.store,
            CASE WHEN TG_OP = 'INSERT' THEN 'added' WHEN NEW.removed_at IS NOT NULL THEN 'removed' ELSE 'replaced' END,
            NEW.body, NEW.changed_at, NEW.changed_by);
    RETURN NULL;
END $function$;
REVOKE ALL ON FUNCTION public.org_notebook_after() FROM PUBLIC;

-- 0013's stamping trigger without its own count (a sum over a snapshot, which REPEATABLE READ
-- could hold stale): the cap is the counter's above.
CREATE OR REPLACE FUNCTION public.org_notebook_before() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := public.org_caller();  -- a definer: current_user is the owner here
    problem text;
    checked text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.version := 1;
        NEW.created_at := now();
        NEW.changed_at := now();
        NEW.changed_by := coalesce(me, NEW.agent);
        NEW.removed_at := NULL;
        NEW.removed_by := NULL;
    ELSE
        IF NEW.id <> OLD.id OR NEW.agent <> OLD.agent OR NEW.store <> OLD.store
           OR NEW.created_at <> OLD.created_at THEN
            RAISE EXCEPTION 'a notebook entry keeps its id, agent, store and creation time' USING ERRCODE = '23514';
        END IF;
        IF OLD.removed_at IS NOT NULL THEN
            RAISE EXCEPTION 'notebook entry % was removed; add it again instead', OLD.id USING ERRCODE = '55000';
        END IF;
        IF NEW.body IS NOT DISTINCT FROM OLD.body AND NEW.removed_at IS NULL THEN
            RETURN NULL;  -- nothing changed: no new version
        END IF;
        NEW.version := OLD.version + 1;
        NEW.changed_at := now();
        NEW.changed_by := coalesce(me, OLD.agent);
        IF NEW.removed_at IS NOT NULL OR NEW.removed_by IS NOT NULL THEN
            NEW.body := OLD.body;  -- removing keeps the text it had
            NEW.removed_at := now();
            NEW.removed_by := coalesce(me, OLD.agent);
            RETURN NEW;
        END IF;
    END IF;
    IF NEW.body ~ '(^|\n)[ \t]*§[ \t]*(\n|$)' THEN
        RAISE EXCEPTION 'entry contains a line holding only §, the entry separator' USING ERRCODE = '23514';
    END IF;
    checked := pg_catalog.replace(NEW.body, E'\n', ' ');
    problem := coalesce(public.org_write_problem('entry', checked, false),
                        public.org_write_scan(ARRAY['entry'], ARRAY[checked]));
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END $function$;
REVOKE ALL ON FUNCTION public.org_notebook_before() FROM PUBLIC;

-- Serialise the notebook writes of the calling agent: a row lock on its org_agents row,
-- held to the end of the transaction. The library takes it before it reads the usage, so
-- its friendly refusal is computed under the same lock the trigger takes.
CREATE OR REPLACE FUNCTION public.org_notebook_lock() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := public.org_caller();
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    PERFORM 1 FROM public.org_agents WHERE name = me FOR NO KEY UPDATE;
END $function$;
REVOKE ALL ON FUNCTION public.org_notebook_lock() FROM PUBLIC;

-- The notebooks' read rule as a set: org_notebooks_readable() (migration 0032) gives the
-- agents whose notebooks the caller may read, or NULL for every one, and a policy reads it
-- once per query (an initplan). org_notebook_readable(agent), the same rule a row at a time
-- (0013, 0019), is now derived from it, so the rule is written once. The per-row call (a SQL
-- function with its own search_path is never inlined) cost 1.3 s to count a fact's 20,000
-- hits for an owner; read once as a set, 21 ms (benchmarks/web_agents.py, 100k facts, 20k
-- recalls).
CREATE OR REPLACE FUNCTION public.org_notebook_readable(p_agent text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT r IS NULL OR p_agent = ANY (r) FROM (SELECT public.org_notebooks_readable() AS r) x
$function$;
REVOKE ALL ON FUNCTION public.org_notebook_readable(text) FROM PUBLIC;
