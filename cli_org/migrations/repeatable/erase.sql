-- runs before the numbered migrations
-- Erasing a fact or a message for good (issue 33): who may, and what is scrubbed.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

CREATE OR REPLACE FUNCTION public.org_erase_fact(p_id bigint, p_why text, p_also text[] DEFAULT '{}'::text[]) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;
REVOKE ALL ON FUNCTION public.org_erase_fact(bigint,text,text[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_erase_message(p_session bigint, p_position bigint, p_why text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;
REVOKE ALL ON FUNCTION public.org_erase_message(bigint,bigint,text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_erase_owner() RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;
REVOKE ALL ON FUNCTION public.org_erase_owner() FROM PUBLIC;

-- The reason is kept and shown: it may not carry what is erased.
CREATE OR REPLACE FUNCTION public.org_erase_reason(p_why text, needles text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    IF btrim(coalesce(p_why, '')) = '' THEN
        RAISE EXCEPTION 'say why it is erased' USING ERRCODE = '22023';
    END IF;
    IF public.org_quotes(p_why, needles) THEN
        RAISE EXCEPTION 'the reason quotes the text it erases; say why without it' USING ERRCODE = '22023';
    END IF;
    RETURN btrim(p_why);
END $function$;
REVOKE ALL ON FUNCTION public.org_erase_reason(text,text[]) FROM PUBLIC;

-- Every place outside the fact and message rows that may quote a text: replace each needle
-- there, and say how many rows of each place changed. Needles are at least 8 characters
-- (the callers see to it), so a replacement never makes a text longer.
CREATE OR REPLACE FUNCTION public.org_erase_scrub(needles text[]) RETURNS jsonb
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
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
    UPDATE memory_links SET reason = org_erased_text(reason, needles),
                            removed_reason = org_erased_text(removed_reason, needles)
    WHERE org_quotes(reason, needles) OR org_quotes(removed_reason, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('links', n);
    UPDATE org_todos SET text = org_erased_text(text, needles) WHERE org_quotes(text, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('todos', n);
    UPDATE memory_proposals SET claim = org_erased_text(claim, needles), subject = org_erased_text(subject, needles),
                                reason = org_erased_text(reason, needles)
    WHERE org_quotes(claim, needles) OR org_quotes(subject, needles) OR org_quotes(reason, needles);
    GET DIAGNOSTICS n = ROW_COUNT; counts := counts || jsonb_build_object('proposals', n);

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
END $function$;
REVOKE ALL ON FUNCTION public.org_erase_scrub(text[]) FROM PUBLIC;

-- A fact's vectors, where pgvector made the table (its delete policy, fact_vectors_erase, comes
-- with it: vectors.sql).
CREATE OR REPLACE FUNCTION public.org_erase_vectors(p_id bigint) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    n bigint;
BEGIN
    IF pg_catalog.to_regclass('public.memory_fact_vectors') IS NULL THEN
        RETURN 0;
    END IF;
    EXECUTE 'DELETE FROM public.memory_fact_vectors WHERE fact_id = $1' USING p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $function$;
REVOKE ALL ON FUNCTION public.org_erase_vectors(bigint) FROM PUBLIC;

-- A JSON document with every needle replaced inside its strings; a document the replacement
-- would break (a needle that spans its structure) is replaced whole.
CREATE OR REPLACE FUNCTION public.org_erased_json(j jsonb, needles text[]) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    IF j IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN public.org_erased_text(j::text, public.org_json_needles(needles))::jsonb;
EXCEPTION WHEN invalid_text_representation THEN
    RETURN '{"erased": true}'::jsonb;
END $function$;
REVOKE ALL ON FUNCTION public.org_erased_json(jsonb,text[]) FROM PUBLIC;

-- A text with every needle replaced by the marker.
CREATE OR REPLACE FUNCTION public.org_erased_text(t text, needles text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;
REVOKE ALL ON FUNCTION public.org_erased_text(text,text[]) FROM PUBLIC;

-- The needles as a JSON document writes them (quotes, backslashes and control characters
-- escaped), with the plain ones.
CREATE OR REPLACE FUNCTION public.org_json_needles(needles text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT array_agg(DISTINCT x) FROM (
        SELECT n AS x FROM unnest(needles) n
        UNION ALL
        SELECT substr(e, 2, length(e) - 2) FROM (SELECT to_jsonb(n)::text AS e FROM unnest(needles) n) j
    ) s
$function$;
REVOKE ALL ON FUNCTION public.org_json_needles(text[]) FROM PUBLIC;

-- Whether a text holds any needle.
CREATE OR REPLACE FUNCTION public.org_quotes(t text, needles text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT t IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(needles) n WHERE pg_catalog.strpos(t, n) > 0)
$function$;
REVOKE ALL ON FUNCTION public.org_quotes(text,text[]) FROM PUBLIC;

-- An erased fact never comes back: not by restore (org_restore), nor by any other update
-- that would make it current or give it text again.
CREATE OR REPLACE FUNCTION public.org_stay_erased() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;
REVOKE ALL ON FUNCTION public.org_stay_erased() FROM PUBLIC;
