-- Pins with caps, restoring a forgotten fact, per-project todos, and the tidy-up log.
-- The rights are those of forget (org_may_retire: the author, the author's team lead, or an
-- owner). Members get no write grant on memory_pins or the restore log: every change goes
-- through a SECURITY DEFINER function below. Nothing is deleted: unpinning, restoring and
-- marking a todo done each leave their row and say who and when.

-- The caps (cli_org/rules.py PIN_CAP_ORG and PIN_CAP_PROJECT; tests/test_pins.py compares).

CREATE TABLE public.memory_pins (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fact_id      bigint NOT NULL REFERENCES public.memory_facts (id),
    project      text CHECK (project IS NULL OR btrim(project) <> ''),  -- NULL: org-wide
    pinned_by    text NOT NULL REFERENCES public.org_agents (name),
    pinned_at    timestamptz NOT NULL DEFAULT now(),
    unpinned_by  text REFERENCES public.org_agents (name),
    unpinned_at  timestamptz,
    unpin_reason text,
    CHECK ((unpinned_at IS NULL) = (unpinned_by IS NULL))
);
-- One live pin per fact.
CREATE UNIQUE INDEX memory_pins_live ON public.memory_pins (fact_id) WHERE unpinned_at IS NULL;

ALTER TABLE public.memory_pins ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_pins FORCE ROW LEVEL SECURITY;

-- Restore. Each row is one retirement undone: what it was (who, when, why, successor) and
-- who brought the fact back, when and why. The fact's own row shows only its latest state.
CREATE TABLE public.memory_restores (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fact_id        bigint NOT NULL REFERENCES public.memory_facts (id),
    retired_at     timestamptz NOT NULL,
    retired_by     text NOT NULL REFERENCES public.org_agents (name),
    retired_reason text,
    superseded_by  bigint REFERENCES public.memory_facts (id),
    restored_at    timestamptz NOT NULL DEFAULT now(),
    restored_by    text NOT NULL REFERENCES public.org_agents (name),
    why            text NOT NULL CHECK (btrim(why) <> '')
);
CREATE INDEX memory_restores_fact ON public.memory_restores (fact_id);
ALTER TABLE public.memory_restores ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_restores FORCE ROW LEVEL SECURITY;

-- Todos: open items per project (NULL: org-wide), no expiry, never deleted.
CREATE TABLE public.org_todos (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    text       text NOT NULL,  -- its length: repeatable/rule_checks.sql
    project    text CHECK (project IS NULL OR btrim(project) <> ''),
    author     text NOT NULL DEFAULT org_me() REFERENCES public.org_agents (name),
    created_at timestamptz NOT NULL DEFAULT now(),
    done_by    text REFERENCES public.org_agents (name),
    done_at    timestamptz,
    CHECK ((done_at IS NULL) = (done_by IS NULL))
);
CREATE INDEX org_todos_open ON public.org_todos (project) WHERE done_at IS NULL;
ALTER TABLE public.org_todos ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.org_todos FORCE ROW LEVEL SECURITY;

-- The tidy-up log: every change `cli-org tidy --apply` made, with its evidence. A member
-- logs only a fact it retired itself in this very transaction (valid_to = now()).
CREATE TABLE public.memory_tidy_log (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    actor    text NOT NULL DEFAULT org_me() REFERENCES public.org_agents (name),
    action   text NOT NULL CHECK (action IN ('merge', 'missing_source')),
    fact_id  bigint NOT NULL REFERENCES public.memory_facts (id),
    kept_id  bigint REFERENCES public.memory_facts (id),
    evidence jsonb NOT NULL CHECK (jsonb_typeof(evidence) = 'object')
);
ALTER TABLE public.memory_tidy_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_tidy_log FORCE ROW LEVEL SECURITY;

REVOKE ALL ON public.memory_pins, public.memory_restores, public.org_todos, public.memory_tidy_log FROM PUBLIC;
DO $$
DECLARE
    grp text := org_member_role();
BEGIN
    EXECUTE format('GRANT SELECT ON public.memory_pins, public.memory_restores, public.org_todos,'
                   ' public.memory_tidy_log TO %I', grp);
    EXECUTE format('GRANT INSERT (text, project, author) ON public.org_todos TO %I', grp);
    EXECUTE format('GRANT INSERT (action, fact_id, kept_id, evidence, actor) ON public.memory_tidy_log TO %I', grp);
END $$;
