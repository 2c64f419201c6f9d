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
-- An erasure is read with what it erased: one of a fact or a session the caller cannot read
-- (a restricted project, 0035) is hidden with it, by the reader's own policies on those tables.
CREATE POLICY erasures_read ON public.memory_erasures FOR SELECT USING (
    (fact_id IS NULL OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = fact_id))
    AND (session_id IS NULL OR EXISTS (SELECT 1 FROM public.archive_sessions s WHERE s.id = session_id))
);
CREATE POLICY erasures_admin ON public.memory_erasures FOR INSERT WITH CHECK ((SELECT public.org_is_admin()));
CREATE TRIGGER memory_erasures_field_checks BEFORE INSERT ON public.memory_erasures
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks('reason', 'reason', 'erased_via', 'via');

-- The rows the erase changes, for the definer alone (members have no grant to use them).
CREATE POLICY restores_erase ON public.memory_restores FOR UPDATE
    USING ((SELECT public.org_is_admin())) WITH CHECK ((SELECT public.org_is_admin()));
CREATE POLICY tidy_log_erase ON public.memory_tidy_log FOR UPDATE
    USING ((SELECT public.org_is_admin())) WITH CHECK ((SELECT public.org_is_admin()));
CREATE POLICY notebook_erase ON public.notebook_entries FOR UPDATE
    USING ((SELECT public.org_is_admin())) WITH CHECK ((SELECT public.org_is_admin()));
CREATE POLICY notebook_versions_erase ON public.notebook_versions FOR UPDATE
    USING ((SELECT public.org_is_admin())) WITH CHECK ((SELECT public.org_is_admin()));
CREATE POLICY recall_events_erase ON public.recall_events FOR UPDATE
    USING ((SELECT public.org_is_admin())) WITH CHECK ((SELECT public.org_is_admin()));
CREATE POLICY recall_hits_erase ON public.recall_hits FOR UPDATE
    USING ((SELECT public.org_is_admin())) WITH CHECK ((SELECT public.org_is_admin()));
-- memory_fact_vectors exists only where pgvector does (0017); its policy is made with it
-- below, or by org_erase_fact's first run after 0017 (org_erase_vectors).

-- A text with every needle replaced by the marker.
CREATE FUNCTION public.org_erased_text(t text, needles text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    n text;
BEGIN
    IF t IS NULL THEN
        RETURN NULL;
    END IF;
    FOREACH n IN ARRAY needles LOOP
        t := pg_catalog.replace(t, n, '[erased]');
    END LOOP;
    RETURN t;
END $$;

-- Whether a text holds any needle.
CREATE FUNCTION public.org_quotes(t text, needles text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT t IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(needles) n WHERE pg_catalog.strpos(t, n) > 0)
$$;

-- The needles as a JSON document writes them (quotes, backslashes and control characters
-- escaped), with the plain ones.
CREATE FUNCTION public.org_json_needles(needles text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT array_agg(DISTINCT x) FROM (
        SELECT n AS x FROM unnest(needles) n
        UNION ALL
        SELECT substr(e, 2, length(e) - 2) FROM (SELECT to_jsonb(n)::text AS e FROM unnest(needles) n) j
    ) s
$$;

-- A JSON document with every needle replaced inside its strings; a document the replacement
-- would break (a needle that spans its structure) is replaced whole.
CREATE FUNCTION public.org_erased_json(j jsonb, needles text[]) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF j IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN public.org_erased_text(j::text, public.org_json_needles(needles))::jsonb;
EXCEPTION WHEN invalid_text_representation THEN
    RETURN '{"erased": true}'::jsonb;
END $$;

-- Every place outside the fact and message rows that may quote a text: replace each needle
-- there, and say how many rows of each place changed. Needles are at least 8 characters
-- (the callers see to it), so a replacement never makes a text longer.
CREATE FUNCTION public.org_erase_scrub(needles text[]) RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    jn text[] := public.org_json_needles(needles);
    counts jsonb := '{}';
    n bigint;
BEGIN
    IF coalesce(cardinality(needles), 0) = 0 THEN
        RETURN counts;
    END IF;
    UPDATE memory_facts SET retired_reason = org_erased_text(retired_reason, needles)
    WHERE org_quotes(retired_reason, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('fact reasons', n);
    UPDATE memory_restores SET retired_reason = org_erased_text(retired_reason, needles),
                               why = org_erased_text(why, needles)
    WHERE org_quotes(retired_reason, needles) OR org_quotes(why, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('restores', n);
    UPDATE memory_pins SET unpin_reason = org_erased_text(unpin_reason, needles)
    WHERE org_quotes(unpin_reason, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('pins', n);
    UPDATE memory_tidy_log SET evidence = org_erased_json(evidence, needles)
    WHERE org_quotes(evidence::text, jn);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('tidy log', n);
    UPDATE org_todos SET text = org_erased_text(text, needles) WHERE org_quotes(text, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('todos', n);

    -- A notebook's stamping triggers would add a version keeping the old text: off for this
    -- statement only (the cap counter stays on: an entry only gets shorter).
    ALTER TABLE notebook_entries DISABLE TRIGGER notebook_entries_before;
    ALTER TABLE notebook_entries DISABLE TRIGGER notebook_entries_after;
    UPDATE notebook_entries SET body = org_erased_text(body, needles) WHERE org_quotes(body, needles);
    GET DIAGNOSTICS n = ROW_COUNT;
    ALTER TABLE notebook_entries ENABLE TRIGGER notebook_entries_before;
    ALTER TABLE notebook_entries ENABLE TRIGGER notebook_entries_after;
    counts := counts || jsonb_build_object('notebook entries', n);
    UPDATE notebook_versions SET body = org_erased_text(body, needles) WHERE org_quotes(body, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('notebook versions', n);

    UPDATE recall_events SET query = org_erased_text(query, needles) WHERE org_quotes(query, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('recall queries', n);
    UPDATE recall_hits SET text = org_erased_text(text, needles) WHERE org_quotes(text, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('recall hits', n);

    UPDATE archive_sessions SET title = org_erased_text(title, needles) WHERE org_quotes(title, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('archived sessions', n);
    UPDATE archive_messages
    SET text = org_erased_text(text, needles), command = org_erased_text(command, needles),
        raw = org_erased_json(raw, needles)
    WHERE org_quotes(text, needles) OR org_quotes(command, needles) OR org_quotes(raw::text, jn);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('archived messages', n);
    -- sha256 stays the file's: a capture of the same file is then no new version.
    UPDATE archive_memory_versions SET content = org_erased_text(content, needles)
    WHERE org_quotes(content, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('memory-file versions', n);
    UPDATE quoted_hits SET evidence = org_erased_text(evidence, needles) WHERE org_quotes(evidence, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('quoted verdicts', n);
    RETURN counts;
END $$;

CREATE FUNCTION public.org_erase_owner() RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := public.org_caller();
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.org_agents WHERE name = me AND is_owner) THEN
        RAISE EXCEPTION 'agent % may not erase: only an owner may', me USING ERRCODE = '42501';
    END IF;
    RETURN me;
END $$;

-- The reason is kept and shown: it may not carry what is erased.
CREATE FUNCTION public.org_erase_reason(p_why text, needles text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF btrim(coalesce(p_why, '')) = '' THEN
        RAISE EXCEPTION 'say why it is erased' USING ERRCODE = '22023';
    END IF;
    IF public.org_quotes(p_why, needles) THEN
        RAISE EXCEPTION 'the reason quotes the text it erases; say why without it' USING ERRCODE = '22023';
    END IF;
    RETURN btrim(p_why);
END $$;

-- A fact's vectors, where pgvector made the table (0017 may run after this migration).
CREATE FUNCTION public.org_erase_vectors(p_id bigint) RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    IF pg_catalog.to_regclass('public.memory_fact_vectors') IS NULL THEN
        RETURN 0;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_policy
                   WHERE polrelid = 'public.memory_fact_vectors'::regclass AND polname = 'fact_vectors_erase') THEN
        CREATE POLICY fact_vectors_erase ON public.memory_fact_vectors FOR DELETE
            USING ((SELECT public.org_is_admin()));
    END IF;
    EXECUTE 'DELETE FROM public.memory_fact_vectors WHERE fact_id = $1' USING p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

CREATE FUNCTION public.org_erase_fact(p_id bigint, p_why text, p_also text[] DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := public.org_erase_owner();
    f memory_facts;
    done memory_erasures;
    needles text[] := ARRAY[]::text[];
    a text;
    why text;
    counts jsonb;
    n bigint;
BEGIN
    SELECT * INTO f FROM memory_facts WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    SELECT * INTO done FROM memory_erasures WHERE fact_id = p_id;
    IF FOUND THEN
        RAISE EXCEPTION 'fact % is already erased (by % at %)', p_id, done.erased_by,
            to_char(done.erased_at, 'YYYY-MM-DD HH24:MI') USING ERRCODE = '55000';
    END IF;
    IF length(f.claim) >= 8 THEN
        needles := needles || f.claim;
    END IF;
    FOREACH a IN ARRAY coalesce(p_also, '{}') LOOP
        IF a IS NULL OR length(a) < 8 THEN
            RAISE EXCEPTION 'a string to erase is at least 8 characters (a shorter one would match far too much)'
                USING ERRCODE = '22023';
        END IF;
        IF strpos(f.subject, a) = 0 AND strpos(f.claim, a) = 0 AND strpos(f.source, a) = 0 THEN
            RAISE EXCEPTION 'a string to erase must be part of fact %''s subject, claim or source', p_id
                USING ERRCODE = '22023';
        END IF;
        needles := needles || a;
    END LOOP;
    why := public.org_erase_reason(p_why, needles);

    -- The row: its text goes, its id, author, project, kind and times stay; it is retired
    -- (unpinned by the retirement's trigger) and stays so (memory_facts_stay_erased).
    UPDATE memory_facts
    SET subject = '[erased]', claim = '[erased]', source = '#erased',
        valid_to = coalesce(valid_to, now()), retired_by = coalesce(retired_by, me),
        retired_reason = CASE WHEN valid_to IS NULL THEN 'erased'
                              ELSE org_erased_text(retired_reason, needles) END
    WHERE id = p_id;
    counts := jsonb_build_object('vectors', public.org_erase_vectors(p_id));
    UPDATE recall_hits SET text = '[erased]' WHERE fact_id = p_id AND text <> '[erased]';
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts || jsonb_build_object('recall hits of the fact', n);
    counts := counts || public.org_erase_scrub(needles);
    INSERT INTO memory_erasures (fact_id, erased_by, erased_via, reason, places)
    VALUES (p_id, me, public.org_via(), why, counts);
    RETURN counts || jsonb_build_object(
        'still quoted by facts',
        coalesce((SELECT jsonb_agg(x.id ORDER BY x.id) FROM memory_facts x
                  WHERE x.id <> p_id AND (org_quotes(x.claim, needles) OR org_quotes(x.subject, needles)
                                          OR org_quotes(x.source, needles))), '[]'));
END $$;

CREATE FUNCTION public.org_erase_message(p_session bigint, p_position bigint, p_why text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := public.org_erase_owner();
    done memory_erasures;
    needles text[];
    why text;
    counts jsonb;
    n bigint;
BEGIN
    PERFORM 1 FROM archive_messages WHERE session_id = p_session AND position = p_position FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no archived message at position % of that session', p_position USING ERRCODE = 'P0002';
    END IF;
    SELECT * INTO done FROM memory_erasures WHERE session_id = p_session AND position = p_position;
    IF FOUND THEN
        RAISE EXCEPTION 'that message is already erased (by % at %)', done.erased_by,
            to_char(done.erased_at, 'YYYY-MM-DD HH24:MI') USING ERRCODE = '55000';
    END IF;
    SELECT coalesce(array_agg(DISTINCT t), '{}') INTO needles FROM (
        SELECT text AS t FROM archive_messages WHERE session_id = p_session AND position = p_position
        UNION ALL
        SELECT command FROM archive_messages WHERE session_id = p_session AND position = p_position
    ) s WHERE length(t) >= 8;
    why := public.org_erase_reason(p_why, needles);
    UPDATE archive_messages
    SET text = CASE WHEN text IS NULL THEN NULL ELSE '[erased]' END,
        command = CASE WHEN command IS NULL THEN NULL ELSE '[erased]' END,
        raw = '{"erased": true}'::jsonb
    WHERE session_id = p_session AND position = p_position;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := jsonb_build_object('message parts', n);
    -- A verdict's evidence is a phrase of a message: one taken from this message goes too.
    UPDATE quoted_hits q SET evidence = '[erased]'
    WHERE q.evidence IS NOT NULL AND length(q.evidence) > 0 AND q.evidence <> '[erased]'
      AND EXISTS (SELECT 1 FROM unnest(needles) t WHERE strpos(t, q.evidence) > 0);
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts || jsonb_build_object('verdict phrases', n);
    counts := counts || public.org_erase_scrub(needles);
    INSERT INTO memory_erasures (session_id, position, erased_by, erased_via, reason, places)
    VALUES (p_session, p_position, me, public.org_via(), why, counts);
    RETURN counts;
END $$;

-- An erased fact never comes back: not by restore (org_restore), nor by any other update
-- that would make it current or give it text again.
CREATE FUNCTION public.org_stay_erased() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    e memory_erasures;
BEGIN
    SELECT * INTO e FROM public.memory_erasures WHERE fact_id = OLD.id;
    IF FOUND AND (NEW.valid_to IS NULL OR NEW.subject IS DISTINCT FROM OLD.subject
                  OR NEW.claim IS DISTINCT FROM OLD.claim OR NEW.source IS DISTINCT FROM OLD.source) THEN
        RAISE EXCEPTION 'fact % was erased (by % at %: %); it cannot come back', OLD.id, e.erased_by,
            to_char(e.erased_at, 'YYYY-MM-DD HH24:MI'), e.reason USING ERRCODE = '55000';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER memory_facts_stay_erased BEFORE UPDATE ON public.memory_facts
    FOR EACH ROW EXECUTE FUNCTION public.org_stay_erased();

DO $$
BEGIN
    IF pg_catalog.to_regclass('public.memory_fact_vectors') IS NOT NULL THEN
        CREATE POLICY fact_vectors_erase ON public.memory_fact_vectors FOR DELETE
            USING ((SELECT public.org_is_admin()));
    END IF;
END $$;

REVOKE ALL ON public.memory_erasures FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.org_erased_text(text, text[]), public.org_quotes(text, text[]),
    public.org_json_needles(text[]), public.org_erased_json(jsonb, text[]), public.org_erase_scrub(text[]),
    public.org_erase_owner(), public.org_erase_reason(text, text[]), public.org_erase_vectors(bigint),
    public.org_erase_fact(bigint, text, text[]), public.org_erase_message(bigint, bigint, text),
    public.org_stay_erased() FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.memory_erasures TO %I', public.org_member_role());
    -- Members may call them; the functions refuse anyone but an owner.
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_erase_fact(bigint, text, text[]),'
                   ' public.org_erase_message(bigint, bigint, text) TO %I', public.org_member_role());
END $$;
