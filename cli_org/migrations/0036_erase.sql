-- An audited erase (issue 33, item 9): "nothing is deleted" must not mean that a leaked
-- secret lives forever. Two owner-only functions remove a text from every place the database
-- keeps it, and record who did it, when and why:
--
--   org_erase_fact(ID, WHY, ALSO)       a fact's subject, claim and source; its vectors; the
--                                       recall hits that showed it; and, wherever its claim
--                                       (or a string of ALSO, each a part of the fact's text)
--                                       is quoted: reasons, notebooks and their versions,
--                                       todos, the recall log, tidy evidence, archived
--                                       sessions, messages, memory-file versions and the
--                                       quoted-hit verdicts (org_erase_scrub below).
--   org_erase_message(SESSION, POSITION, WHY)
--                                       an archived message (every part of the record at
--                                       that position): its text, command and raw record,
--                                       and wherever its text is quoted (the same places).
--
-- What stays: the fact's row (id, author, project, kind, times, its links), retired, with
-- '[erased]' for its subject and claim and '#erased' for its source (the shapes the write
-- checks accept); a message's row, kind, tool name and times. The erasure itself is a row of
-- memory_erasures (who, when, through which harness, why, how many rows of each place were
-- changed). The search terms (memory_facts.search, archive_messages.search) are generated
-- columns, computed again from the new text; the word pieces (0020) are an index of current
-- facts only, and an erased fact is never current again (the trigger below).
--
-- Who may: an owner (org_agents.is_owner), checked inside each SECURITY DEFINER function from
-- the calling role (org_caller(), as org_forget and org_restore do); a member is refused, a
-- role with no agent behind it too. Members hold no grant on memory_erasures but SELECT, and
-- no UPDATE or DELETE grant on anything erased, so the functions are the only way in. The
-- policies below that let rows be changed or vector rows be deleted pass only
-- org_is_admin(): the owner of the tables, which is who a definer function runs as.
--
-- Triggers that refuse or version a change: the notebook's stamping triggers (0013, 0023)
-- would make the erase a new version that keeps the old text, so the erase turns off those
-- two (not the cap counter) for its own statement and on again, as `import` does; the
-- change is transactional, and no other session sees them off. The write checks of facts
-- (0012, the repeatable file) see '[erased]' and '#erased', which they accept.
--
-- Limits (docs/security.md, "An audited erase"): row versions the UPDATE left behind stay in
-- the table files until VACUUM; the WAL, replicas and backups made before keep the old text.

CREATE TABLE public.memory_erasures (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fact_id     bigint REFERENCES public.memory_facts (id),
    session_id  bigint REFERENCES public.archive_sessions (id),
    position    bigint,
    erased_at   timestamptz NOT NULL DEFAULT now(),
    erased_by   text NOT NULL REFERENCES public.org_agents (name),
    erased_via  text,
    reason      text NOT NULL CHECK (btrim(reason) <> ''),
    places      jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(places) = 'object'),
    CHECK ((fact_id IS NULL) <> (session_id IS NULL)),
    CHECK ((session_id IS NULL) = (position IS NULL))
);
CREATE UNIQUE INDEX memory_erasures_fact ON public.memory_erasures (fact_id) WHERE fact_id IS NOT NULL;
CREATE UNIQUE INDEX memory_erasures_message ON public.memory_erasures (session_id, position)
    WHERE session_id IS NOT NULL;
CREATE INDEX memory_erasures_at ON public.memory_erasures (erased_at, id);

ALTER TABLE public.memory_erasures ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_erasures FORCE ROW LEVEL SECURITY;

REVOKE ALL ON public.memory_erasures FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.memory_erasures TO %I', public.org_member_role());
    -- Members may call them; the functions refuse anyone but an owner.
END $$;
