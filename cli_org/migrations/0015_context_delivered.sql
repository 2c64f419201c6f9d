-- What `cli-org context --session ID` has already delivered to an agent in a session, so a
-- per-turn hook adds only what is new. One row per (agent, session, entry key); an agent
-- reads and writes only its own rows (row-level security, forced). Nothing here is a secret:
-- the keys name facts, todos, notebook entries and vault headings the agent was shown.
CREATE TABLE public.context_delivered (
    agent        text NOT NULL DEFAULT org_me() REFERENCES public.org_agents (name),
    session      text NOT NULL CHECK (btrim(session) <> '' AND length(session) <= 200),
    hit_key      text NOT NULL CHECK (hit_key <> '' AND length(hit_key) <= 1000),
    delivered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent, session, hit_key)
);

ALTER TABLE public.context_delivered ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.context_delivered FORCE ROW LEVEL SECURITY;

REVOKE ALL ON public.context_delivered FROM PUBLIC;
DO $$
BEGIN
    -- Members read their rows and add to them; they never change or delete one.
    EXECUTE format('GRANT SELECT ON public.context_delivered TO %I', org_member_role());
    EXECUTE format('GRANT INSERT (session, hit_key, agent) ON public.context_delivered TO %I', org_member_role());
END $$;
