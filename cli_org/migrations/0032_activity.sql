-- The activity feed (cli_org/store/activity.py, sql/activity.sql): what changed, by agent and
-- by harness. Two parts.
--
-- 1. Which harness made each write. A fact says so in `via` (the writer passes it); the other
-- writes said nothing. Now every write records the harness of the transaction that made it:
-- the library says it once per transaction, `set_config('cli_org.via', VIA, true)`
-- (store/activity.py say_via), and the database stamps it on the rows that write makes:
--   notebook_versions.via        the version an edit made
--   memory_pins.pinned_via       pinned; unpinned_via: unpinned (or ended by a retirement)
--   org_todos.via                added;  done_via: marked done
--   memory_facts.retired_via     forgotten or superseded (cleared when restored)
--   memory_restores.retired_via  the retirement a restore undid; restored_via: the restore
-- Who may write them: no member has a grant on any of these columns, and each is stamped by a
-- trigger from the writer's own transaction, so a member records only its own writes' harness,
-- never another's (the rule of the tables' other columns: who, when). The shape is that of a
-- fact's via (RUNTIME@HOST, org_field_rules); anything else is refused with the write. A value
-- an import or the admin gives on INSERT is kept (members cannot insert into these tables, or,
-- for org_todos, hold no grant on the column).
--
-- 2. Indexes: each source of the feed is read newest first from its own time column, from the
-- page's cursor back to `since`, and stops after a page (EXPLAIN ANALYZE numbers in the docs).

CREATE FUNCTION public.org_via() RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v text := nullif(current_setting('cli_org.via', true), '');
    problem text := public.org_field_problem('via', 'via', v);
BEGIN
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    RETURN v;
END $$;

ALTER TABLE public.notebook_versions ADD COLUMN via text;
ALTER TABLE public.memory_pins ADD COLUMN pinned_via text, ADD COLUMN unpinned_via text;
ALTER TABLE public.org_todos ADD COLUMN via text, ADD COLUMN done_via text;
ALTER TABLE public.memory_facts ADD COLUMN retired_via text;
ALTER TABLE public.memory_restores ADD COLUMN retired_via text, ADD COLUMN restored_via text;

CREATE FUNCTION public.org_stamp_via() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF TG_TABLE_NAME = 'notebook_versions' THEN
        NEW.via := coalesce(NEW.via, public.org_via());
    ELSIF TG_TABLE_NAME = 'memory_pins' THEN
        IF TG_OP = 'INSERT' THEN
            NEW.pinned_via := coalesce(NEW.pinned_via, public.org_via());
        ELSIF OLD.unpinned_at IS NULL AND NEW.unpinned_at IS NOT NULL THEN
            NEW.unpinned_via := public.org_via();
        ELSE
            NEW.pinned_via := OLD.pinned_via;
            NEW.unpinned_via := OLD.unpinned_via;
        END IF;
    ELSIF TG_TABLE_NAME = 'org_todos' THEN
        IF TG_OP = 'INSERT' THEN
            NEW.via := coalesce(NEW.via, public.org_via());  -- done_via: only an import gives one
        ELSIF OLD.done_at IS NULL AND NEW.done_at IS NOT NULL THEN
            NEW.via := OLD.via;
            NEW.done_via := public.org_via();
        ELSE
            NEW.via := OLD.via;
            NEW.done_via := OLD.done_via;
        END IF;
    ELSIF TG_TABLE_NAME = 'memory_facts' THEN
        IF TG_OP = 'INSERT' THEN
            NULL;  -- retired_via: only an import gives one (members hold no grant on it)
        ELSIF OLD.valid_to IS NULL AND NEW.valid_to IS NOT NULL THEN
            NEW.retired_via := public.org_via();
        ELSIF NEW.valid_to IS NULL THEN
            NEW.retired_via := NULL;  -- restored: memory_restores keeps the retirement's
        ELSE
            NEW.retired_via := OLD.retired_via;
        END IF;
    ELSIF TG_TABLE_NAME = 'memory_restores' THEN
        NEW.retired_via := coalesce(NEW.retired_via,
                                    (SELECT f.retired_via FROM public.memory_facts f WHERE f.id = NEW.fact_id));
        NEW.restored_via := coalesce(NEW.restored_via, public.org_via());
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER notebook_versions_via BEFORE INSERT ON public.notebook_versions
    FOR EACH ROW EXECUTE FUNCTION public.org_stamp_via();
CREATE TRIGGER memory_pins_via BEFORE INSERT OR UPDATE ON public.memory_pins
    FOR EACH ROW EXECUTE FUNCTION public.org_stamp_via();
CREATE TRIGGER org_todos_via BEFORE INSERT OR UPDATE ON public.org_todos
    FOR EACH ROW EXECUTE FUNCTION public.org_stamp_via();
CREATE TRIGGER memory_facts_stamp_via BEFORE INSERT OR UPDATE ON public.memory_facts
    FOR EACH ROW EXECUTE FUNCTION public.org_stamp_via();
CREATE TRIGGER memory_restores_via BEFORE INSERT ON public.memory_restores
    FOR EACH ROW EXECUTE FUNCTION public.org_stamp_via();

REVOKE EXECUTE ON FUNCTION public.org_stamp_via() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.org_via() FROM PUBLIC;  -- members get it by the grant below
DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_via() TO %I', public.org_member_role());
END $$;

-- Reading notebook versions (the feed reads them newest first, across agents) as a member
-- paid the read rule once per version row: org_notebook_readable(agent) is a function with
-- its own search_path, so it is never inlined, and it runs three lookups per call (40 us: a
-- member's page of the feed took 120 ms at 3,000 versions, python -m benchmarks.activity).
-- The same rule (0013, 0019: the agent itself, the administrator, an owner, the agent's team
-- lead) is now computed once per statement: the agents whose notebooks the caller may read,
-- or NULL for all of them; each row is then an array lookup.
CREATE FUNCTION public.org_notebooks_readable() RETURNS text[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT CASE
        WHEN pg_catalog.pg_has_role(current_user,
                                    (SELECT c.relowner FROM pg_catalog.pg_class c
                                     WHERE c.oid = 'public.notebook_entries'::pg_catalog.regclass), 'USAGE')
             OR public.org_is_owner() THEN NULL
        ELSE ARRAY(SELECT a.name FROM public.org_agents a
                   WHERE a.name = public.org_me() OR a.team_lead = public.org_me())
    END
$$;
REVOKE EXECUTE ON FUNCTION public.org_notebooks_readable() FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_notebooks_readable() TO %I', public.org_member_role());
END $$;
DROP POLICY notebook_versions_read ON public.notebook_versions;
CREATE POLICY notebook_versions_read ON public.notebook_versions FOR SELECT
    USING ((SELECT public.org_notebooks_readable()) IS NULL
           OR agent = ANY ((SELECT public.org_notebooks_readable())::text[]));

-- The feed's sources, newest first (the recall and tool-call logs have their created_at
-- indexes, 0004 and 0016), and for the facts, which grow largest, by who and by harness too:
-- without these, a filter that matches little walked every fact back to `since` (at 100,000
-- facts, 86-207 ms per page with `since all`; python -m benchmarks.activity). A harness's
-- index holds only the facts that name one.
CREATE INDEX memory_facts_written ON public.memory_facts (created_at, id);
CREATE INDEX memory_facts_written_by ON public.memory_facts (author, created_at, id);
CREATE INDEX memory_facts_written_via ON public.memory_facts (split_part(via, '@', 1), created_at, id)
    WHERE via IS NOT NULL;
CREATE INDEX memory_facts_retired ON public.memory_facts (valid_to, id) WHERE valid_to IS NOT NULL;
CREATE INDEX memory_facts_retired_by ON public.memory_facts (retired_by, valid_to, id) WHERE valid_to IS NOT NULL;
CREATE INDEX memory_facts_retired_via ON public.memory_facts (split_part(retired_via, '@', 1), valid_to, id)
    WHERE retired_via IS NOT NULL;
CREATE INDEX memory_restores_restored ON public.memory_restores (restored_at, id);
CREATE INDEX memory_restores_retired ON public.memory_restores (retired_at, id);
CREATE INDEX memory_pins_pinned ON public.memory_pins (pinned_at, id);
CREATE INDEX memory_pins_unpinned ON public.memory_pins (unpinned_at, id) WHERE unpinned_at IS NOT NULL;
CREATE INDEX notebook_versions_at ON public.notebook_versions (at);
CREATE INDEX org_todos_created ON public.org_todos (created_at, id);
CREATE INDEX org_todos_done ON public.org_todos (done_at, id) WHERE done_at IS NOT NULL;
