-- Pins with caps, restoring a forgotten fact, per-project todos, and the tidy-up log.
-- The rights are those of forget (org_may_retire: the author, the author's team lead, or an
-- owner). Members get no write grant on memory_pins or the restore log: every change goes
-- through a SECURITY DEFINER function below. Nothing is deleted: unpinning, restoring and
-- marking a todo done each leave their row and say who and when.

-- The caps (cli_org/rules.py PIN_CAP_ORG and PIN_CAP_PROJECT; tests/test_pins.py compares).
CREATE FUNCTION public.org_pin_caps(OUT org_cap integer, OUT project_cap integer)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$ SELECT 10, 5 $$;

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
CREATE POLICY pins_read ON public.memory_pins FOR SELECT USING (true);
-- Serves the definer functions alone: members hold only SELECT.
CREATE POLICY pins_write ON public.memory_pins FOR ALL USING (true) WITH CHECK (true);

-- The current pins of one scope, for messages: "#12 (by bot), #14 (by lead)".
CREATE FUNCTION public.org_pins_listed(p_project text) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce(string_agg(format('#%s %s (pinned by %s)', p.fact_id, f.subject, p.pinned_by), ', '
                               ORDER BY p.pinned_at, p.id), 'none')
    FROM memory_pins p JOIN memory_facts f ON f.id = p.fact_id
    WHERE p.unpinned_at IS NULL AND p.project IS NOT DISTINCT FROM p_project
$$;

CREATE FUNCTION public.org_pin(p_id bigint, p_project text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
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
    SELECT * INTO f FROM memory_facts WHERE id = p_id FOR UPDATE;
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
END $$;

CREATE FUNCTION public.org_unpin(p_id bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := org_caller();
    f memory_facts;
    live memory_pins;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO f FROM memory_facts WHERE id = p_id FOR UPDATE;
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
END $$;

-- Retiring a fact (forget or supersede) unpins it, in the same transaction.
CREATE FUNCTION public.org_unpin_retired() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE memory_pins
    SET unpinned_at = now(), unpinned_by = NEW.retired_by,
        unpin_reason = format('fact retired: %s', NEW.retired_reason)
    WHERE fact_id = NEW.id AND unpinned_at IS NULL;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_facts_unpin_retired
    AFTER UPDATE OF valid_to ON public.memory_facts
    FOR EACH ROW WHEN (OLD.valid_to IS NULL AND NEW.valid_to IS NOT NULL)
    EXECUTE FUNCTION public.org_unpin_retired();

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
CREATE POLICY restores_read ON public.memory_restores FOR SELECT USING (true);
CREATE POLICY restores_write ON public.memory_restores FOR INSERT WITH CHECK (true);

CREATE FUNCTION public.org_restore(p_id bigint, p_why text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := org_caller();
    f memory_facts;
    successor memory_facts;
    twin bigint;
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
    RETURN p_id;
END $$;

-- Todos: open items per project (NULL: org-wide), no expiry, never deleted.
CREATE TABLE public.org_todos (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    text       text NOT NULL CHECK (btrim(text) <> '' AND length(text) <= 500),
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
CREATE POLICY todos_read ON public.org_todos FOR SELECT USING (true);
CREATE POLICY todos_insert_as_self ON public.org_todos FOR INSERT WITH CHECK (author = org_me() AND done_at IS NULL);
CREATE POLICY todos_done ON public.org_todos FOR UPDATE USING (true) WITH CHECK (true);

-- The write checks of facts, for a todo's text and project.
CREATE FUNCTION public.org_todo_checks() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
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
END $$;

CREATE TRIGGER org_todos_write_checks
    BEFORE INSERT OR UPDATE ON public.org_todos
    FOR EACH ROW EXECUTE FUNCTION public.org_todo_checks();

CREATE FUNCTION public.org_todo_done(p_id bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := org_caller();
    t org_todos;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO t FROM org_todos WHERE id = p_id FOR UPDATE;
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
END $$;

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
CREATE POLICY tidy_log_read ON public.memory_tidy_log FOR SELECT USING (true);
CREATE POLICY tidy_log_insert ON public.memory_tidy_log FOR INSERT WITH CHECK (
    actor = org_me()
    AND EXISTS (SELECT 1 FROM memory_facts f
                WHERE f.id = fact_id AND f.retired_by = org_me() AND f.valid_to = now()));

REVOKE ALL ON public.memory_pins, public.memory_restores, public.org_todos, public.memory_tidy_log FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.org_pin(bigint, text), public.org_unpin(bigint), public.org_restore(bigint, text),
    public.org_todo_done(bigint), public.org_unpin_retired() FROM PUBLIC;
DO $$
DECLARE
    grp text := org_member_role();
BEGIN
    EXECUTE format('GRANT SELECT ON public.memory_pins, public.memory_restores, public.org_todos,'
                   ' public.memory_tidy_log TO %I', grp);
    EXECUTE format('GRANT INSERT (text, project, author) ON public.org_todos TO %I', grp);
    EXECUTE format('GRANT INSERT (action, fact_id, kept_id, evidence, actor) ON public.memory_tidy_log TO %I', grp);
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_pin(bigint, text), public.org_unpin(bigint),'
                   ' public.org_restore(bigint, text), public.org_todo_done(bigint) TO %I', grp);
END $$;
