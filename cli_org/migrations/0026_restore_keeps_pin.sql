-- A restored fact keeps its pin. A pin lasts while its fact is current: retiring the fact
-- ends the pin (0014, org_unpin_retired), so restoring the fact, which undoes the retirement,
-- brings the pin back in the same scope and under the name of whoever pinned it. Only a pin
-- that retirement ended comes back (one unpinned on purpose stays unpinned), and only through
-- org_restore, whose rights are those of pin (the author, their team lead or an owner):
-- members still hold no write grant on memory_pins.

-- The pin a retirement ended: the trigger stamps it with the retirement's time and reason
-- (org_unpin_retired); `unpin` stamps 'unpinned'. Read by org_restore and, after a restore,
-- by the client with the retirement that memory_restores recorded (sql/pins.sql).
CREATE FUNCTION public.org_retirement_pin(p_fact_id bigint, p_retired_at timestamptz, p_reason text)
RETURNS SETOF public.memory_pins
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT * FROM memory_pins
    WHERE fact_id = p_fact_id AND unpinned_at = p_retired_at
      AND unpin_reason = format('fact retired: %s', p_reason)
    ORDER BY id DESC LIMIT 1
$$;

CREATE OR REPLACE FUNCTION public.org_restore(p_id bigint, p_why text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := org_caller();
    f memory_facts;
    successor memory_facts;
    twin bigint;
    ended memory_pins;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    IF btrim(coalesce(p_why, '')) = '' THEN
        RAISE EXCEPTION 'say why the fact comes back' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO f FROM memory_facts WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF f.valid_to IS NULL THEN
        RAISE EXCEPTION 'fact % is current; there is nothing to restore', p_id USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, f.author) THEN
        RAISE EXCEPTION 'agent % may not restore fact %: only its author (%), their team lead, or an owner may',
            me, p_id, f.author USING ERRCODE = '42501';
    END IF;
    IF f.superseded_by IS NOT NULL THEN
        SELECT * INTO successor FROM memory_facts WHERE id = f.superseded_by;
        IF successor.valid_to IS NULL THEN
            RAISE EXCEPTION 'fact % was superseded by #%, which is current; a superseded fact comes back only '
                            'by retiring its successor: `cli-org forget % WHY`, then restore %',
                p_id, successor.id, successor.id, p_id USING ERRCODE = '55000';
        END IF;
    END IF;
    SELECT id INTO twin FROM memory_facts
    WHERE valid_to IS NULL AND author = f.author AND subject = f.subject AND md5(claim) = md5(f.claim)
      AND coalesce(project, '') = coalesce(f.project, '');
    IF FOUND THEN
        RAISE EXCEPTION 'fact % cannot come back: the same claim by % is current again as #%', p_id, f.author, twin
            USING ERRCODE = '55000';
    END IF;
    -- Read before the fact changes: the pin this retirement ended, if it ended one.
    SELECT * INTO ended FROM org_retirement_pin(p_id, f.valid_to, f.retired_reason);
    INSERT INTO memory_restores (fact_id, retired_at, retired_by, retired_reason, superseded_by, restored_by, why)
    VALUES (f.id, f.valid_to, f.retired_by, f.retired_reason, f.superseded_by, me, btrim(p_why));
    BEGIN
        UPDATE memory_facts
        SET valid_to = NULL, retired_by = NULL, retired_reason = NULL, superseded_by = NULL
        WHERE id = p_id;
    EXCEPTION WHEN unique_violation THEN  -- a twin written concurrently
        RAISE EXCEPTION 'fact % cannot come back: the same claim by % is current again', p_id, f.author
            USING ERRCODE = '55000';
    END;
    IF ended.id IS NOT NULL THEN
        -- The same pin again, as a new row: its scope and who pinned it (the ended row keeps
        -- why it ended). A pin is made only under a name that may pin this fact: a pinner who
        -- may not (a row an import brought, a lead since replaced) yields to the restorer,
        -- who may (checked above). The cap trigger (0023) still counts: a scope filled since
        -- stays full, and the fact comes back unpinned (the client says so).
        BEGIN
            INSERT INTO memory_pins (fact_id, project, pinned_by)
            VALUES (p_id, ended.project,
                    CASE WHEN org_may_retire(ended.pinned_by, f.author) THEN ended.pinned_by ELSE me END);
        EXCEPTION WHEN object_not_in_prerequisite_state THEN
            NULL;
        END;
    END IF;
    RETURN p_id;
END $$;

REVOKE EXECUTE ON FUNCTION public.org_retirement_pin(bigint, timestamptz, text) FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_retirement_pin(bigint, timestamptz, text) TO %I',
                   org_member_role());
END $$;
