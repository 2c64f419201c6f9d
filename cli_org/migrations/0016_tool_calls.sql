-- One row per call a long-lived face (the MCP server; later the web page and hooks) served,
-- under the tool's real name (org_recall, org_remember, ...), refused or not, so `cli-org
-- usage` counts MCP use from cli-org's own log instead of guessing names in transcripts.
-- The recall itself is still logged in recall_events and a remembered fact is its own record;
-- this table says which face and tool they came through, and counts the calls that wrote
-- nothing (refusals) as well. Nothing here is a secret (no arguments are kept), so every
-- member reads every row, like recall_events; an agent adds rows only as itself.
CREATE TABLE public.tool_calls (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    agent       text DEFAULT org_me() REFERENCES public.org_agents (name),
    face        text NOT NULL CHECK (face IN ('mcp', 'web', 'hook')),
    tool        text NOT NULL CHECK (tool ~ '^[a-z][a-z0-9_]{0,62}$'),
    ok          boolean NOT NULL,     -- false: refused (a write check, a right, a cap) or failed
    ms          integer NOT NULL CHECK (ms >= 0)
);
CREATE INDEX tool_calls_created ON public.tool_calls (created_at);

ALTER TABLE public.tool_calls ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.tool_calls FORCE ROW LEVEL SECURITY;

REVOKE ALL ON public.tool_calls FROM PUBLIC;
DO $$
BEGIN
    -- Members read the log and add to it; they never change or delete a row (no grant).
    EXECUTE format('GRANT SELECT ON public.tool_calls TO %I', org_member_role());
    EXECUTE format('GRANT INSERT (face, tool, ok, ms, agent) ON public.tool_calls TO %I', org_member_role());
END $$;
