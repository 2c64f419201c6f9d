-- runs before the numbered migrations
-- Pins, todos, restoring a retired fact, and tidying.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

CREATE OR REPLACE FUNCTION public.org_pin(p_id bigint, p_project text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    f memory_facts;
    scope text;
    live memory_pins;
    cap integer;
    n integer;
    new_id bigint;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    -- The fact row first, then the table: the order forget takes them (no deadlock).
    SELECT * INTO f FROM memory_facts WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF f.valid_to IS NOT NULL THEN
        RAISE EXCEPTION 'fact % is not current (retired by %: %); only current facts can be pinned',
            p_id, f.retired_by, f.retired_reason USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, f.author) THEN
        RAISE EXCEPTION 'agent % may not pin fact %: only its author (%), their team lead, or an owner may',
            me, p_id, f.author USING ERRCODE = '42501';
    END IF;
    scope := coalesce(nullif(btrim(p_project), ''), f.project);
    IF f.project IS NOT NULL AND scope IS DISTINCT FROM f.project THEN
        RAISE EXCEPTION 'fact % belongs to project %; pin it there (--project %)', p_id, f.project, f.project
            USING ERRCODE = '22023';
    END IF;
    -- Two pins racing for the last place: the second waits here and then counts the first.
    LOCK TABLE memory_pins IN SHARE ROW EXCLUSIVE MODE;
    SELECT * INTO live FROM memory_pins WHERE fact_id = p_id AND unpinned_at IS NULL;
    IF FOUND THEN
        IF live.project IS NOT DISTINCT FROM scope THEN
            RETURN live.id;  -- already pinned there: nothing to do
        END IF;
        RAISE EXCEPTION 'fact % is already pinned %; unpin it first', p_id,
            CASE WHEN live.project IS NULL THEN 'org-wide' ELSE 'in project ' || live.project END
            USING ERRCODE = '55000';
    END IF;
    SELECT CASE WHEN scope IS NULL THEN c.org_cap ELSE c.project_cap END INTO cap FROM org_pin_caps() c;
    SELECT count(*) INTO n FROM memory_pins WHERE unpinned_at IS NULL AND project IS NOT DISTINCT FROM scope;
    IF n >= cap THEN
        RAISE EXCEPTION '% already holds % pins, the cap; unpin one first. Pinned: %',
            CASE WHEN scope IS NULL THEN 'the org-wide scope' ELSE 'project ' || scope END, n,
            org_pins_listed(scope) USING ERRCODE = '55000';
    END IF;
    INSERT INTO memory_pins (fact_id, project, pinned_by) VALUES (p_id, scope, me) RETURNING id INTO new_id;
    RETURN new_id;
END $function$;
REVOKE ALL ON FUNCTION public.org_pin(bigint,text) FROM PUBLIC;

-- The current pins of one scope, for messages: "#12 (by bot), #14 (by lead)".
CREATE OR REPLACE FUNCTION public.org_pins_listed(p_project text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT coalesce(string_agg(format('#%s %s (pinned by %s)', p.fact_id, f.subject, p.pinned_by), ', '
                               ORDER BY p.pinned_at, p.id), 'none')
    FROM memory_pins p JOIN memory_facts f ON f.id = p.fact_id
    WHERE p.unpinned_at IS NULL AND p.project IS NOT DISTINCT FROM p_project
$function$;

CREATE OR REPLACE FUNCTION public.org_restore(p_id bigint, p_why text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
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
    SELECT * INTO f FROM memory_facts WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
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
END $function$;
REVOKE ALL ON FUNCTION public.org_restore(bigint,text) FROM PUBLIC;

-- The write checks of facts, for a todo's text and project.
CREATE OR REPLACE FUNCTION public.org_todo_checks() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    problem text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.text IS NOT DISTINCT FROM OLD.text AND NEW.project IS NOT DISTINCT FROM OLD.project THEN
        RETURN NEW;
    END IF;
    problem := coalesce(public.org_write_problem('text', NEW.text, false),
                        public.org_write_problem('project', NEW.project, false),
                        public.org_write_scan(ARRAY['text'], ARRAY[NEW.text]));
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END $function$;

CREATE OR REPLACE FUNCTION public.org_todo_done(p_id bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    t org_todos;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO t FROM org_todos WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no todo with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF t.done_at IS NOT NULL THEN
        RAISE EXCEPTION 'todo % is already done (by %)', p_id, t.done_by USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, t.author) THEN
        RAISE EXCEPTION 'agent % may not mark todo % done: only its author (%), their team lead, or an owner may',
            me, p_id, t.author USING ERRCODE = '42501';
    END IF;
    UPDATE org_todos SET done_at = now(), done_by = me WHERE id = p_id;
    RETURN p_id;
END $function$;
REVOKE ALL ON FUNCTION public.org_todo_done(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_unpin(p_id bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    f memory_facts;
    live memory_pins;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO f FROM memory_facts WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF NOT org_may_retire(me, f.author) THEN
        RAISE EXCEPTION 'agent % may not unpin fact %: only its author (%), their team lead, or an owner may',
            me, p_id, f.author USING ERRCODE = '42501';
    END IF;
    SELECT * INTO live FROM memory_pins WHERE fact_id = p_id AND unpinned_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fact % is not pinned', p_id USING ERRCODE = '55000';
    END IF;
    UPDATE memory_pins SET unpinned_at = now(), unpinned_by = me, unpin_reason = 'unpinned' WHERE id = live.id;
    RETURN live.id;
END $function$;
REVOKE ALL ON FUNCTION public.org_unpin(bigint) FROM PUBLIC;

-- A retired fact's reason travels into its pin's unpin reason ('fact retired: REASON'):
-- keep that within the reason limit too.
CREATE OR REPLACE FUNCTION public.org_unpin_retired() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    UPDATE memory_pins
    SET unpinned_at = now(), unpinned_by = NEW.retired_by,
        unpin_reason = left(format('fact retired: %s', NEW.retired_reason), 500)
    WHERE fact_id = NEW.id AND unpinned_at IS NULL;
    RETURN NULL;
END $function$;
REVOKE ALL ON FUNCTION public.org_unpin_retired() FROM PUBLIC;
