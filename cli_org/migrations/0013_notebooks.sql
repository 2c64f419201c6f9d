-- Bounded notebooks: per agent, two stores (`memory`: the agent's own notes; `user`: about
-- the person it works for), one row per entry, every change versioned, nothing deleted.
--
-- Who may do what (row-level security, forced):
--   read:  the agent itself, an owner, and the agent's team lead (org_agents.team_lead);
--   write: the agent itself only (insert its own entries, change or mark them removed).
-- The caps hold here as well as in the library (cli_org/rules.py NOTEBOOK_CAPS): an entry
-- may not exceed its store's cap (CHECK), and the store's total may not pass it (trigger,
-- under a lock on the agent, so two racing writes cannot pass the cap together). The write
-- checks of facts (migration 0012) apply to every entry.

CREATE TABLE public.notebook_entries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent       text NOT NULL DEFAULT public.org_me() REFERENCES public.org_agents (name),
    store       text NOT NULL CHECK (store IN ('memory', 'user')),
    body        text NOT NULL CHECK (btrim(body) <> '' AND length(body) <= CASE store WHEN 'memory' THEN 2200 WHEN 'user' THEN 1375 END),
    version     integer NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    changed_at  timestamptz NOT NULL DEFAULT now(),
    changed_by  text REFERENCES public.org_agents (name),
    removed_at  timestamptz,
    removed_by  text REFERENCES public.org_agents (name),
    CHECK ((removed_at IS NULL) = (removed_by IS NULL))
);

-- One live copy of an entry per agent and store; a concurrent duplicate loses here.
CREATE UNIQUE INDEX notebook_entries_no_duplicate
    ON public.notebook_entries (agent, store, md5(body)) WHERE removed_at IS NULL;
CREATE INDEX notebook_entries_live ON public.notebook_entries (agent, store) WHERE removed_at IS NULL;

-- Every state an entry has been in: written by the triggers below, never by members.
CREATE TABLE public.notebook_versions (
    entry_id    bigint NOT NULL REFERENCES public.notebook_entries (id),
    version     integer NOT NULL,
    agent       text NOT NULL REFERENCES public.org_agents (name),
    store       text NOT NULL,
    action      text NOT NULL CHECK (action IN ('added', 'replaced', 'removed')),
    body        text NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    by          text REFERENCES public.org_agents (name),
    PRIMARY KEY (entry_id, version)
);

-- The cap of a store, in characters (the one SQL copy of rules.NOTEBOOK_CAPS; a test
-- compares them).
CREATE FUNCTION public.org_notebook_cap(p_store text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT CASE p_store WHEN 'memory' THEN 2200 WHEN 'user' THEN 1375 END
$$;

-- Serialise the notebook writes of the calling agent: a row lock on its org_agents row,
-- held to the end of the transaction. The library takes it before it reads the usage, so
-- its friendly refusal is computed under the same lock the trigger takes.
CREATE FUNCTION public.org_notebook_lock() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := public.org_caller();
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    PERFORM 1 FROM public.org_agents WHERE name = me FOR NO KEY UPDATE;
END $$;

-- Before a write: the metadata is the database's (a member cannot forge who or when), a
-- removed entry stays removed, the write checks of facts apply to the text, and the store's
-- total stays within its cap. Definer: it locks the agent row and sums the agent's entries.
CREATE FUNCTION public.org_notebook_before() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := public.org_caller();  -- a definer: current_user is the owner here
    problem text;
    checked text;
    used integer;
    cap integer := public.org_notebook_cap(NEW.store);
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
    -- The write checks of facts (migration 0012): control and invisible characters, then the
    -- secret and injection patterns. A line break inside an entry is allowed; it is checked as
    -- a space, and a line holding only the separator is refused.
    IF NEW.body ~ '(^|\n)[ \t]*§[ \t]*(\n|$)' THEN
        RAISE EXCEPTION 'entry contains a line holding only §, the entry separator' USING ERRCODE = '23514';
    END IF;
    checked := pg_catalog.replace(NEW.body, E'\n', ' ');
    problem := coalesce(public.org_write_problem('entry', checked, false),
                        public.org_write_scan(ARRAY['entry'], ARRAY[checked]));
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    PERFORM 1 FROM public.org_agents WHERE name = NEW.agent FOR NO KEY UPDATE;
    SELECT coalesce(sum(length(e.body)), 0) INTO used FROM public.notebook_entries e
    WHERE e.agent = NEW.agent AND e.store = NEW.store AND e.removed_at IS NULL
      AND (TG_OP = 'INSERT' OR e.id <> NEW.id);
    IF used + length(NEW.body) > cap THEN
        RAISE EXCEPTION 'the % notebook of % would hold %/% chars; it holds %/%: shorten or remove entries first',
            NEW.store, NEW.agent, used + length(NEW.body), cap, used, cap USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END $$;

-- After a write: the new state becomes a version.
CREATE FUNCTION public.org_notebook_after() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    INSERT INTO public.notebook_versions (entry_id, version, agent, store, action, body, at, by)
    VALUES (NEW.id, NEW.version, NEW.agent, NEW.store,
            CASE WHEN TG_OP = 'INSERT' THEN 'added' WHEN NEW.removed_at IS NOT NULL THEN 'removed' ELSE 'replaced' END,
            NEW.body, NEW.changed_at, NEW.changed_by);
    RETURN NULL;
END $$;

CREATE TRIGGER notebook_entries_before BEFORE INSERT OR UPDATE ON public.notebook_entries
    FOR EACH ROW EXECUTE FUNCTION public.org_notebook_before();
CREATE TRIGGER notebook_entries_after AFTER INSERT OR UPDATE ON public.notebook_entries
    FOR EACH ROW EXECUTE FUNCTION public.org_notebook_after();

-- Who may read an agent's notebook: the agent, an owner, the agent's team lead; and a role
-- outside the member group (the admin, and the definer functions above, which run as it;
-- other roles have no grant on the tables at all).
CREATE FUNCTION public.org_notebook_readable(p_agent text) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT p_agent = public.org_me()
        OR NOT pg_catalog.pg_has_role(current_user, public.org_member_role(), 'member')
        OR public.org_is_owner()
        OR EXISTS (SELECT 1 FROM public.org_agents a WHERE a.name = p_agent AND a.team_lead = public.org_me())
$$;

ALTER TABLE public.notebook_entries ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.notebook_entries FORCE ROW LEVEL SECURITY;
ALTER TABLE public.notebook_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.notebook_versions FORCE ROW LEVEL SECURITY;

CREATE POLICY notebook_read ON public.notebook_entries FOR SELECT USING (public.org_notebook_readable(agent));
CREATE POLICY notebook_insert_own ON public.notebook_entries FOR INSERT WITH CHECK (agent = public.org_me());
CREATE POLICY notebook_update_own ON public.notebook_entries FOR UPDATE
    USING (agent = public.org_me()) WITH CHECK (agent = public.org_me());
CREATE POLICY notebook_versions_read ON public.notebook_versions FOR SELECT
    USING (public.org_notebook_readable(agent));
-- The after trigger writes versions as the definer (the admin, who bypasses nothing else).
CREATE POLICY notebook_versions_write ON public.notebook_versions FOR INSERT WITH CHECK (true);

REVOKE ALL ON public.notebook_entries, public.notebook_versions FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.org_notebook_lock(), public.org_notebook_before(), public.org_notebook_after(),
    public.org_notebook_readable(text) FROM PUBLIC;
DO $$
BEGIN
    -- Members read (what the policies show), insert their own entries and change the text or
    -- the removal mark of their own; never delete, never write versions directly.
    EXECUTE format('GRANT SELECT ON public.notebook_entries, public.notebook_versions TO %I', public.org_member_role());
    EXECUTE format('GRANT INSERT (store, body, agent) ON public.notebook_entries TO %I', public.org_member_role());
    EXECUTE format('GRANT UPDATE (body, removed_at, removed_by) ON public.notebook_entries TO %I',
                   public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_notebook_lock(), public.org_notebook_readable(text),'
                   ' public.org_notebook_cap(text) TO %I', public.org_member_role());
END $$;
