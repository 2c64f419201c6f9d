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

-- The archived sessions of those projects: their messages and verdicts are hidden by id.
CREATE INDEX archive_sessions_project ON public.archive_sessions (project) WHERE project IS NOT NULL;

-- The archive: members read it, the administrator (the tables' owner) writes it. Row-level
-- security is enabled, not forced (as for the vault's tables): the owner's import is not
-- filtered, members are.
ALTER TABLE public.archive_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.archive_messages ENABLE ROW LEVEL SECURITY;

-- The restrictions: read by those who may read the project; written only through the two
-- functions below (members hold SELECT alone). Enabled, not forced: org_projects_hidden()
-- reads every row as the owner.
ALTER TABLE public.org_project_access ENABLE ROW LEVEL SECURITY;

REVOKE ALL ON public.org_project_access FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.org_project_access TO %I', public.org_member_role());
END $$;
