-- Proposals (issue 35): lessons found in archived sessions, waiting for the agent whose session
-- it was (or its team lead, or an owner) to accept one as a fact or reject it. A proposal is
-- never a fact until accepted; nothing here is deleted. The archive import writes them as the
-- administrator (it reads every session); members read the ones they may decide and change
-- them only through org_proposal_accept and org_proposal_reject (repeatable/proposals.sql,
-- which holds this table's functions, grants, policies and trigger).
CREATE TABLE public.memory_proposals (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      bigint NOT NULL REFERENCES public.archive_sessions (id),
    message_key     text NOT NULL,  -- archive_messages.source_key of the message it came from
    -- Whose session it was (the harness set-up's agent); NULL: the importer's to assign.
    agent           text REFERENCES public.org_agents (name),
    project         text,
    subject         text NOT NULL CHECK (btrim(subject) <> '' AND length(subject) <= 200),
    claim           text NOT NULL CHECK (btrim(claim) <> '' AND length(claim) <= 300),
    kind            text NOT NULL CHECK (kind IN ('rule', 'decision', 'failure', 'workflow', 'preference', 'fact')),
    why             text NOT NULL,   -- the signal that found it (a correction, a failure and its fix, ...)
    score           real NOT NULL,
    -- A digest of the claim's words (store/proposals.py claim_key; no text, so an erased secret
    -- leaves nothing here): a claim proposed once in a project is never proposed again.
    claim_key       text NOT NULL,
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'accepted', 'rejected')),
    fact_id         bigint REFERENCES public.memory_facts (id),
    decided_by      text REFERENCES public.org_agents (name),
    decided_at      timestamptz,
    reason          text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX memory_proposals_once ON public.memory_proposals (claim_key, coalesce(project, ''));
CREATE INDEX memory_proposals_pending ON public.memory_proposals (agent, created_at) WHERE state = 'pending';
CREATE INDEX memory_proposals_session ON public.memory_proposals (session_id);

-- How far each session's messages have been read for proposals: a re-import reads only what
-- is new (the archive's own high-water mark is per source file, not per session).
ALTER TABLE public.archive_sessions ADD COLUMN proposed_to bigint;

ALTER TABLE public.memory_proposals ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_proposals FORCE ROW LEVEL SECURITY;
REVOKE ALL ON public.memory_proposals FROM PUBLIC;
DO $$
BEGIN
    -- Members read (the policy says which rows); they never insert, update or delete.
    EXECUTE format('GRANT SELECT ON public.memory_proposals TO %I', org_member_role());
END $$;
