-- What each recall returned, hit by hit (issue 26: "which answers were used"), so a past
-- recall is shown as it was answered instead of asked again, and a fact's page counts how
-- often it was a hit. Written with its recall_events row in one statement (cli_org/sql/
-- recall.sql `log`: a warm recall's statement count stays as tests/test_answer_shape.py
-- bounds it).
--
-- Who reads a recall's hits: the rule of the notebooks (migrations 0013, 0019, 0032): the
-- recalling agent itself, its team lead, an owner, and the administrator.
-- A hit can quote the agent's own notebook (the [memory] arm reads it), so its hits are no
-- more public than that notebook; the question, time and counts stay in recall_events, which
-- every member reads. A recall the administrator made (agent NULL) is read by owners and the
-- administrator. Private vault notes never reach a recall (migration 0008), so none is here.
--
-- Who writes: an agent adds hits only as itself, and only to its own recall's row: the policy
-- holds the row's agent to org_me(), and the foreign key (event_id, agent) holds it to the
-- event's agent. A foreign key is checked at the end of the statement, so it sees the event
-- the same statement inserted (a policy's subquery would not: one snapshot per statement).
-- Nobody changes or deletes a hit (no grant; row-level security forced).

-- The notebooks' read rule as a set: org_notebooks_readable() (migration 0032) gives the
-- agents whose notebooks the caller may read, or NULL for every one, and a policy reads it
-- once per query (an initplan). org_notebook_readable(agent), the same rule a row at a time
-- (0013, 0019), is now derived from it, so the rule is written once. The per-row call (a SQL
-- function with its own search_path is never inlined) cost 1.3 s to count a fact's 20,000
-- hits for an owner; read once as a set, 21 ms (benchmarks/web_agents.py, 100k facts, 20k
-- recalls).

-- The referenced key of the (event_id, agent) foreign key.
ALTER TABLE public.recall_events ADD CONSTRAINT recall_events_id_agent UNIQUE (id, agent);

CREATE TABLE public.recall_hits (
    event_id  bigint NOT NULL REFERENCES public.recall_events (id),
    agent     text DEFAULT public.org_me() REFERENCES public.org_agents (name),
    at        timestamptz NOT NULL DEFAULT now(),
    rank      smallint NOT NULL CHECK (rank BETWEEN 1 AND 50),  -- limits.RECALL_HITS
    arm       text NOT NULL CHECK (arm IN ('fact', 'memory', 'vault')),
    fact_id   bigint,                                 -- the fact arm's fact
    path      text CHECK (length(path) <= 1000),      -- the memory file (or notebook:STORE), the vault note
    line      integer,                                -- the memory file's line (the notebook entry's id)
    text      text NOT NULL CHECK (length(text) <= 2000),  -- the line the agent was shown (cut at 2,000)
    PRIMARY KEY (event_id, rank),
    FOREIGN KEY (event_id, agent) REFERENCES public.recall_events (id, agent)
);
-- A fact's page: how often it was a hit, by whom, the last time (cli_org/sql/recall.sql
-- fact_recalls): its hits alone, read from this index.
CREATE INDEX recall_hits_fact ON public.recall_hits (fact_id) INCLUDE (agent, at) WHERE fact_id IS NOT NULL;

-- An agent's page lists its latest recalls (cli_org/sql/agents.sql recent_recalls) and counts
-- them: by agent, newest first, not a walk of every agent's recalls by time.
CREATE INDEX recall_events_agent ON public.recall_events (agent, created_at DESC, id DESC);

-- A fact's page counts the archived sessions' verdicts on it (quoted_hits, migration 0029):
-- a fact hit's key is its id.
CREATE INDEX quoted_hits_fact ON public.quoted_hits (key) WHERE arm = 'fact';

ALTER TABLE public.recall_hits ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.recall_hits FORCE ROW LEVEL SECURITY;

REVOKE ALL ON public.recall_hits FROM PUBLIC;
DO $$
BEGIN
    -- Members read (what the policy shows) and add their own recall's hits; never change or
    -- delete one.
    EXECUTE format('GRANT SELECT ON public.recall_hits TO %I', public.org_member_role());
    EXECUTE format('GRANT INSERT (event_id, agent, rank, arm, fact_id, path, line, text) ON public.recall_hits TO %I',
                   public.org_member_role());
END $$;
