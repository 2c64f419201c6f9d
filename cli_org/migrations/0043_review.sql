-- The review list (issue 36): what a scheduled refresh found that waits for a person, and when
-- each agent's refresh last ran. Only the expensive scans are stored here (near-duplicates, by
-- tidy's rule over every current fact; stale sources, by reading files); contradictions and
-- proposals are counted live (store/review.py). An item names facts by id and carries no words
-- of theirs, so erasing a fact's text leaves nothing here. Policies and grants:
-- repeatable/review.sql.
CREATE TABLE public.memory_review_items (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('near-duplicate', 'stale-source')),
    fact_id     bigint NOT NULL REFERENCES public.memory_facts (id),
    other_id    bigint REFERENCES public.memory_facts (id),  -- the fact a merge keeps
    -- Why, in the scan's own words: a merge's overlap, a source's problem (never fact text).
    detail      text NOT NULL CHECK (length(detail) <= 200),
    found_by    text NOT NULL DEFAULT org_me() REFERENCES public.org_agents (name),
    found_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (kind = 'near-duplicate' OR other_id IS NULL),
    CHECK (other_id IS NULL OR other_id <> fact_id)
);
CREATE UNIQUE INDEX memory_review_items_once ON public.memory_review_items (kind, fact_id, coalesce(other_id, 0));
CREATE INDEX memory_review_items_other ON public.memory_review_items (other_id) WHERE other_id IS NOT NULL;

-- One row per agent whose sessions refresh the list: when a refresh was last claimed (by a
-- session start, hooks.py), when one last finished, and why the last one failed.
CREATE TABLE public.memory_review_runs (
    agent         text PRIMARY KEY DEFAULT org_me() REFERENCES public.org_agents (name),
    claimed_at    timestamptz NOT NULL DEFAULT now(),
    refreshed_at  timestamptz,
    error         text CHECK (length(error) <= 500)
);

ALTER TABLE public.memory_review_items ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_review_items FORCE ROW LEVEL SECURITY;
ALTER TABLE public.memory_review_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_review_runs FORCE ROW LEVEL SECURITY;
REVOKE ALL ON public.memory_review_items FROM PUBLIC;
REVOKE ALL ON public.memory_review_runs FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT, INSERT (kind, fact_id, other_id, detail), UPDATE (detail, found_by, found_at), DELETE '
                   'ON public.memory_review_items TO %I', org_member_role());
    EXECUTE format('GRANT SELECT, INSERT (agent, claimed_at), UPDATE (claimed_at, refreshed_at, error) '
                   'ON public.memory_review_runs TO %I', org_member_role());
END $$;
