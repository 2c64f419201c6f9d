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
    store       text NOT NULL,  -- its values and each store's cap: repeatable/rule_checks.sql
    body        text NOT NULL,
    version     integer NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    changed_at  timestamptz NOT NULL DEFAULT now(),
    changed_by  text REFERENCES public.org_agents (name),
    removed_at  timestamptz,
    removed_by  text REFERENCES public.org_agents (name),
    CONSTRAINT notebook_entries_check1 CHECK ((removed_at IS NULL) = (removed_by IS NULL))  -- named as it was when the body's cap came first
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

ALTER TABLE public.notebook_entries ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.notebook_entries FORCE ROW LEVEL SECURITY;
ALTER TABLE public.notebook_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.notebook_versions FORCE ROW LEVEL SECURITY;

REVOKE ALL ON public.notebook_entries, public.notebook_versions FROM PUBLIC;
DO $$
BEGIN
    -- Members read (what the policies show), insert their own entries and change the text or
    -- the removal mark of their own; never delete, never write versions directly.
    EXECUTE format('GRANT SELECT ON public.notebook_entries, public.notebook_versions TO %I', public.org_member_role());
    EXECUTE format('GRANT INSERT (store, body, agent) ON public.notebook_entries TO %I', public.org_member_role());
    EXECUTE format('GRANT UPDATE (body, removed_at, removed_by) ON public.notebook_entries TO %I',
                   public.org_member_role());
END $$;
