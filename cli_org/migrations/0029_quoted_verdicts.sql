-- The verdicts of "hits later quoted" (cli_org/archive/quoted.py), stored when a session is
-- imported instead of judged on every read: judging 1,000 archived sessions that recalled
-- took about 1 s in Python, on each server start (benchmarks/usage_scale.py).
--
-- Who writes them: only the administrator, who writes the archive they are computed from
-- (`cli-org archive import`, `cli-org archive judge`; cli_org/archive/verdicts.py). Members
-- read them, as they read the archive. A member has no INSERT, UPDATE, DELETE or TRUNCATE
-- grant, and row-level security is forced with a write policy that only the administrator
-- passes (org_is_admin, migration 0023), so a grant added by mistake still writes nothing.
-- Each verdict names the archived messages it was read from (foreign keys).
--
-- One session can have several sets of verdicts, one per "dropped" set: rule 1 ties a call
-- id in the session that started first within the usage window, so which of a session's
-- call ids an earlier session already holds depends on the window. Every set a window can
-- ask for is stored; the usage query picks the one for its window (cli_org/sql/usage.sql).

CREATE TABLE public.quoted_sessions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      bigint NOT NULL REFERENCES public.archive_sessions (id),
    -- The session's recall call ids tied in an earlier session (sorted, as COLLATE "C").
    dropped         text[] NOT NULL,
    -- quoted.RULE_VERSION when judged: rows of an older rule are judged again.
    rule_version    integer NOT NULL CHECK (rule_version > 0),
    -- What was judged: the session's newest message and how many it had.
    newest          bigint NOT NULL,
    messages        integer NOT NULL CHECK (messages >= 0),
    calls           integer NOT NULL CHECK (calls >= 0),  -- recall calls counted (rule 1)
    judged_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, dropped)
);

-- One tied recall: its call and its result (rule 1).
CREATE TABLE public.quoted_recalls (
    judged          bigint NOT NULL REFERENCES public.quoted_sessions (id) ON DELETE CASCADE,
    call_message    bigint NOT NULL REFERENCES public.archive_messages (id),
    result_message  bigint NOT NULL REFERENCES public.archive_messages (id),
    PRIMARY KEY (judged, call_message)
);

-- One hit of a tied recall and its verdict (rules 2 and 4).
CREATE TABLE public.quoted_hits (
    judged          bigint NOT NULL,
    call_message    bigint NOT NULL,
    ordinal         integer NOT NULL,
    arm             text NOT NULL CHECK (arm IN ('fact', 'memory', 'vault')),
    key             text NOT NULL,
    quoted          boolean NOT NULL,
    how             text CHECK (how IN ('id', 'path', 'phrase')),
    evidence        text,
    CHECK (quoted = (how IS NOT NULL)),
    PRIMARY KEY (judged, call_message, ordinal),
    FOREIGN KEY (judged, call_message) REFERENCES public.quoted_recalls (judged, call_message) ON DELETE CASCADE
);

-- The sessions holding a given recall call id (rule 1 across sessions), read when judging.
CREATE INDEX archive_messages_recall_ids ON public.archive_messages (tool_call_id) WHERE recall_call;

REVOKE ALL ON public.quoted_sessions, public.quoted_recalls, public.quoted_hits FROM PUBLIC;
ALTER TABLE public.quoted_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.quoted_sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE public.quoted_recalls ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.quoted_recalls FORCE ROW LEVEL SECURITY;
ALTER TABLE public.quoted_hits ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.quoted_hits FORCE ROW LEVEL SECURITY;

DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.quoted_sessions, public.quoted_recalls, public.quoted_hits TO %I',
                   public.org_member_role());
END $$;
