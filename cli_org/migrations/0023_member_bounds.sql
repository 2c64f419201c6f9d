-- Issue 21, database side: what a member's own SQL session could still do.
--   5. caps that a REPEATABLE READ snapshot could overrun (notebooks, pins) or an import skip;
--   6. a NULL org_me() (after SET ROLE to the member group) that passed as the admin;
--   7. fields the database did not check (shapes, lengths, control characters, the write scan);
--   8. the private notes' words in vault_terms;
--   9. eval_runs numbers out of range;
--  10. a watchdog for member queries that lifted their statement_timeout.

-- 6. The administrator, recognised by what it is: a role that holds the rights of the owner
-- of the org's tables (a superuser does too), as 0019 decided for the notebook read rule. No
-- member passes: no agent role and not the member group is granted the owner's role. A NULL
-- org_me() (no agent behind current_user, e.g. after `SET ROLE <db>_member`) is nobody.
CREATE FUNCTION public.org_is_admin() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT pg_catalog.pg_has_role(current_user,
                                  (SELECT c.relowner FROM pg_catalog.pg_class c
                                   WHERE c.oid = 'public.org_agents'::pg_catalog.regclass), 'USAGE')
$$;

-- issue 21 (6): an agent logs as itself; a row without an agent only from the admin.
DROP POLICY recall_events_insert ON public.recall_events;
CREATE POLICY recall_events_insert ON public.recall_events FOR INSERT
    WITH CHECK (agent = public.org_me() OR (agent IS NULL AND public.org_is_admin()));
DROP POLICY tool_calls_insert_own ON public.tool_calls;
CREATE POLICY tool_calls_insert_own ON public.tool_calls FOR INSERT
    WITH CHECK (agent = public.org_me() OR (agent IS NULL AND public.org_is_admin()));
DROP POLICY eval_runs_insert ON public.eval_runs;
CREATE POLICY eval_runs_insert ON public.eval_runs FOR INSERT
    WITH CHECK (author = public.org_me() OR (author IS NULL AND public.org_is_admin()));

-- 5. Caps that hold under every isolation level and on every path. A counter row per capped
-- scope is UPDATEd by every write that changes what the scope holds. An UPDATE always works
-- on the newest version of the row: under READ COMMITTED it waits for a concurrent writer and
-- adds to its total; under REPEATABLE READ or SERIALIZABLE it fails with a serialization
-- error (40001) when the row changed after the snapshot. So no stale snapshot can count
-- against an old total. The counters are kept by always-on AFTER triggers (an import turns
-- off only the notebook's stamping triggers, never these), never by members (no grant).
CREATE TABLE public.org_cap_usage (
    scope text PRIMARY KEY,   -- 'notebook:AGENT:STORE', 'pins:' (org-wide), 'pins:PROJECT'
    used  integer NOT NULL CHECK (used >= 0)
);
REVOKE ALL ON public.org_cap_usage FROM PUBLIC;

INSERT INTO public.org_cap_usage (scope, used)
SELECT 'notebook:' || agent || ':' || store, sum(length(body)) FROM public.notebook_entries
WHERE removed_at IS NULL GROUP BY agent, store;
INSERT INTO public.org_cap_usage (scope, used)
SELECT 'pins:' || coalesce(project, ''), count(*) FROM public.memory_pins
WHERE unpinned_at IS NULL GROUP BY coalesce(project, '');

-- Add delta to a scope's counter; the new total.
CREATE FUNCTION public.org_cap_add(p_scope text, p_delta integer) RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    total integer;
BEGIN
    -- Under REPEATABLE READ a row another transaction added after the snapshot makes this a
    -- serialization error as well, never a second counter.
    INSERT INTO public.org_cap_usage (scope, used) VALUES (p_scope, 0) ON CONFLICT (scope) DO NOTHING;
    UPDATE public.org_cap_usage SET used = used + p_delta WHERE scope = p_scope RETURNING used INTO total;
    RETURN total;
END $$;
REVOKE EXECUTE ON FUNCTION public.org_cap_add(text, integer) FROM PUBLIC;

-- issue 21 (5): a store's live entries stay within org_notebook_cap (rules.NOTEBOOK_CAPS).
CREATE FUNCTION public.org_notebook_cap_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    delta integer := CASE WHEN NEW.removed_at IS NULL THEN length(NEW.body) ELSE 0 END;
    cap integer := public.org_notebook_cap(NEW.store);
    total integer;
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.removed_at IS NULL THEN
        delta := delta - length(OLD.body);
    END IF;
    IF delta = 0 THEN
        RETURN NULL;
    END IF;
    total := public.org_cap_add('notebook:' || NEW.agent || ':' || NEW.store, delta);
    IF delta > 0 AND total > cap THEN
        RAISE EXCEPTION 'the % notebook of % would hold %/% chars; it holds %/%: shorten or remove entries first',
            NEW.store, NEW.agent, total, cap, total - delta, cap USING ERRCODE = '23514';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER notebook_entries_cap AFTER INSERT OR UPDATE ON public.notebook_entries
    FOR EACH ROW EXECUTE FUNCTION public.org_notebook_cap_check();

-- 0013's stamping trigger without its own count (a sum over a snapshot, which REPEATABLE READ
-- could hold stale): the cap is the counter's above.
CREATE OR REPLACE FUNCTION public.org_notebook_before() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := public.org_caller();  -- a definer: current_user is the owner here
    problem text;
    checked text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.version := 1;
        NEW.created_at := now();
        NEW.changed_at := now();
        NEW.changed_by := coalesce(me, NEW.agent);
        NEW.removed_at := NULL;
        NEW.removed_by := NULL;
    ELSE
        IF NEW.id <> OLD.id OR NEW.agent <> OLD.agent OR NEW.store <> OLD.store
           OR NEW.created_at <> OLD.created_at THEN
            RAISE EXCEPTION 'a notebook entry keeps its id, agent, store and creation time' USING ERRCODE = '23514';
        END IF;
        IF OLD.removed_at IS NOT NULL THEN
            RAISE EXCEPTION 'notebook entry % was removed; add it again instead', OLD.id USING ERRCODE = '55000';
        END IF;
        IF NEW.body IS NOT DISTINCT FROM OLD.body AND NEW.removed_at IS NULL THEN
            RETURN NULL;  -- nothing changed: no new version
        END IF;
        NEW.version := OLD.version + 1;
        NEW.changed_at := now();
        NEW.changed_by := coalesce(me, OLD.agent);
        IF NEW.removed_at IS NOT NULL OR NEW.removed_by IS NOT NULL THEN
            NEW.body := OLD.body;  -- removing keeps the text it had
            NEW.removed_at := now();
            NEW.removed_by := coalesce(me, OLD.agent);
            RETURN NEW;
        END IF;
    END IF;
    IF NEW.body ~ '(^|\n)[ \t]*§[ \t]*(\n|$)' THEN
        RAISE EXCEPTION 'entry contains a line holding only §, the entry separator' USING ERRCODE = '23514';
    END IF;
    checked := pg_catalog.replace(NEW.body, E'\n', ' ');
    problem := coalesce(public.org_write_problem('entry', checked, false),
                        public.org_write_scan(ARRAY['entry'], ARRAY[checked]));
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END $$;

-- issue 21 (5): a scope's live pins stay within org_pin_caps (rules.PIN_CAP_ORG, PIN_CAP_PROJECT).
CREATE FUNCTION public.org_pin_cap_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    total integer;
    cap integer;
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.unpinned_at IS NULL
       AND (NEW.unpinned_at IS NOT NULL OR NEW.project IS DISTINCT FROM OLD.project) THEN
        PERFORM public.org_cap_add('pins:' || coalesce(OLD.project, ''), -1);
    END IF;
    IF NEW.unpinned_at IS NULL
       AND (TG_OP = 'INSERT' OR OLD.unpinned_at IS NOT NULL OR NEW.project IS DISTINCT FROM OLD.project) THEN
        total := public.org_cap_add('pins:' || coalesce(NEW.project, ''), 1);
        SELECT CASE WHEN NEW.project IS NULL THEN c.org_cap ELSE c.project_cap END INTO cap FROM public.org_pin_caps() c;
        IF total > cap THEN
            RAISE EXCEPTION '% already holds % pins, the cap; unpin one first. Pinned: %',
                CASE WHEN NEW.project IS NULL THEN 'the org-wide scope' ELSE 'project ' || NEW.project END, total - 1,
                public.org_pins_listed(NEW.project) USING ERRCODE = '55000';
        END IF;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_pins_cap AFTER INSERT OR UPDATE ON public.memory_pins
    FOR EACH ROW EXECUTE FUNCTION public.org_pin_cap_check();

-- 7. Fields. The shape and length of each short field members write, and the one SQL copy of
-- the client's rules (cli_org/rules.py FIELD_SHAPES and FIELD_LIMITS; tests/test_one_source.py
-- compares them). A field without a shape or limit here gets the control-character check only.
CREATE FUNCTION public.org_field_rules(OUT field text, OUT shape text, OUT max_length integer)
RETURNS SETOF record
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    VALUES ('project', '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$', 64),
           ('via', '^[A-Za-z0-9_.-]{1,64}@[A-Za-z0-9_.-]{1,128}$', 193),
           ('source', NULL, 500),
           ('reason', NULL, 500),
           ('query', NULL, 1000),
           ('evidence', NULL, 8000),       -- the whole JSON document, and each string in it
           ('cases', NULL, 400000),        -- the whole JSON document (a golden set of some hundred cases)
           ('git_commit', '^[0-9a-f]{7,64}$', 64),
           ('embedder', NULL, 200),
           ('golden_file', NULL, 500),
           ('case', NULL, 1000)
$$;

-- What is wrong with one field, or NULL: its shape, its length, then (0009) control and
-- invisible characters. `field` names the rule; `label` is what the message calls it.
CREATE FUNCTION public.org_field_problem(field text, label text, t text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    r record;
BEGIN
    IF t IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT * INTO r FROM public.org_field_rules() x WHERE x.field = org_field_problem.field;
    IF r.shape IS NOT NULL AND t !~ r.shape THEN
        RETURN CASE field
            WHEN 'project' THEN format('%s %s must be letters, digits, ''.'', ''_'' or ''-'' (at most 64)', label,
                                      quote_literal(left(t, 80)))
            WHEN 'via' THEN format('%s %s must look like runtime@host', label, quote_literal(left(t, 80)))
            ELSE format('%s %s does not have the expected shape', label, quote_literal(left(t, 80))) END;
    END IF;
    IF r.max_length IS NOT NULL AND length(t) > r.max_length THEN
        RETURN format('%s is %s characters; the limit is %s', label, length(t), r.max_length);
    END IF;
    RETURN public.org_write_problem(label, t, false);
END $$;

-- Refuse a write whose fields break their rules, then run the write scan (0012's
-- org_write_scan: secrets and injections) over them all at once. Raises; returns nothing.
CREATE FUNCTION public.org_check_fields(fields text[], labels text[], texts text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    problem text;
    scan_labels text[] := ARRAY[]::text[];
    scan_texts text[] := ARRAY[]::text[];
BEGIN
    FOR i IN 1 .. coalesce(cardinality(texts), 0) LOOP
        CONTINUE WHEN texts[i] IS NULL;
        problem := public.org_field_problem(fields[i], labels[i], texts[i]);
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
        END IF;
        scan_labels := scan_labels || labels[i];
        scan_texts := scan_texts || texts[i];
    END LOOP;
    IF cardinality(scan_texts) > 0 THEN
        problem := public.org_write_scan(scan_labels, scan_texts);
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
        END IF;
    END IF;
END $$;

-- issue 21 (7): each table's member-written text, checked when it is written or changed (so
-- older rows can still be retired, unpinned or restored). Triggers of their own, beside the
-- write checks of 0009-0012 (which a regenerated write scan replaces).
CREATE FUNCTION public.org_field_checks() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    f text[] := ARRAY[]::text[];   -- rule
    l text[] := ARRAY[]::text[];   -- label
    t text[] := ARRAY[]::text[];   -- text
    new_row jsonb := to_jsonb(NEW);
    old_row jsonb := CASE WHEN TG_OP = 'UPDATE' THEN to_jsonb(OLD) END;
    col text;
    rule text;
    limit_chars integer;
    v text;
BEGIN
    -- TG_ARGV: pairs of column and rule. A rule ending in '-' is checked but not scanned: the
    -- scan compiles its patterns once per connection (seconds; DESIGN.md), which a write on
    -- every recall cannot afford (recall_events).
    FOR i IN 0 .. TG_NARGS / 2 - 1 LOOP
        col := TG_ARGV[2 * i];
        rule := TG_ARGV[2 * i + 1];
        CONTINUE WHEN old_row IS NOT NULL AND new_row -> col IS NOT DISTINCT FROM old_row -> col;
        IF right(rule, 1) = '-' THEN
            v := public.org_field_problem(rtrim(rule, '-'), col, new_row ->> col);
            IF v IS NOT NULL THEN
                RAISE EXCEPTION '%', v USING ERRCODE = '23514';
            END IF;
            CONTINUE;
        END IF;
        IF rule = 'evidence' OR rule = 'cases' THEN
            -- A JSON document: bounded as a whole, every string in it checked and scanned.
            limit_chars := (SELECT r.max_length FROM public.org_field_rules() r WHERE r.field = rule);
            IF length((new_row -> col)::text) > limit_chars THEN
                RAISE EXCEPTION '% is % characters of JSON; the limit is %', col, length((new_row -> col)::text),
                    limit_chars USING ERRCODE = '23514';
            END IF;
            FOR v IN SELECT s #>> '{}' FROM jsonb_path_query(new_row -> col, 'strict $.**') s
                     WHERE jsonb_typeof(s) = 'string' LOOP
                f := f || (CASE rule WHEN 'evidence' THEN 'evidence' ELSE 'case' END);
                l := l || col;
                t := t || v;
            END LOOP;
            CONTINUE;
        END IF;
        f := f || rule;
        l := l || col;
        t := t || (new_row ->> col);
    END LOOP;
    PERFORM public.org_check_fields(f, l, t);
    RETURN NEW;
END $$;

CREATE TRIGGER memory_facts_field_checks BEFORE INSERT OR UPDATE ON public.memory_facts
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks(
        'source', 'source-', 'project', 'project', 'via', 'via', 'retired_reason', 'reason');
CREATE TRIGGER memory_pins_field_checks BEFORE INSERT OR UPDATE ON public.memory_pins
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks('project', 'project', 'unpin_reason', 'reason');
CREATE TRIGGER memory_restores_field_checks BEFORE INSERT ON public.memory_restores
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks('why', 'reason', 'retired_reason', 'reason');
CREATE TRIGGER memory_tidy_log_field_checks BEFORE INSERT ON public.memory_tidy_log
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks('evidence', 'evidence');
CREATE TRIGGER org_todos_field_checks BEFORE INSERT OR UPDATE ON public.org_todos
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks('project', 'project');
CREATE TRIGGER recall_events_field_checks BEFORE INSERT ON public.recall_events
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks('project', 'project-', 'query', 'query-');
CREATE TRIGGER eval_runs_field_checks BEFORE INSERT ON public.eval_runs
    FOR EACH ROW EXECUTE FUNCTION public.org_field_checks(
        'git_commit', 'git_commit', 'embedder', 'embedder', 'golden_file', 'golden_file', 'project', 'project',
        'cases', 'cases');

-- A retired fact's reason travels into its pin's unpin reason ('fact retired: REASON'):
-- keep that within the reason limit too.
CREATE OR REPLACE FUNCTION public.org_unpin_retired() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE memory_pins
    SET unpinned_at = now(), unpinned_by = NEW.retired_by,
        unpin_reason = left(format('fact retired: %s', NEW.retired_reason), 500)
    WHERE fact_id = NEW.id AND unpinned_at IS NULL;
    RETURN NULL;
END $$;

-- recall_events: the arms are recall's (cli_org/recall/answer.py ARMS), the counts are counts.
ALTER TABLE public.recall_events ADD CONSTRAINT recall_events_numbers
    CHECK (arms <@ ARRAY['fact', 'memory', 'vault'] AND hits >= 0 AND chars >= 0 AND ms >= 0) NOT VALID;

-- 9. An eval run's numbers in their ranges: each Figures object (cli_org/evaluation/golden.py)
-- of the summary, each case, k and the vault's size. A reader still treats a stored row that
-- predates this as possibly malformed (cli_org/evaluation/runs.py).
CREATE FUNCTION public.org_eval_figures_ok(x jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce(jsonb_typeof(x) = 'object'
        AND jsonb_typeof(x -> 'n') = 'number' AND (x ->> 'n')::numeric BETWEEN 0 AND 1000000
        AND jsonb_typeof(x -> 'hit_rate') = 'number' AND (x ->> 'hit_rate')::numeric BETWEEN 0 AND 1
        AND jsonb_typeof(x -> 'mrr') = 'number' AND (x ->> 'mrr')::numeric BETWEEN 0 AND 1
        AND (SELECT bool_and(jsonb_typeof(x -> k) = 'number' AND (x ->> k)::numeric BETWEEN 0 AND 1e9)
             FROM unnest(ARRAY['chars_median', 'chars_p95', 'ms_median', 'ms_p95']) k), false)
$$;

CREATE FUNCTION public.org_eval_run_ok(k integer, summary jsonb, cases jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT coalesce(k BETWEEN 1 AND 1000
        AND public.org_eval_figures_ok(summary -> 'overall')
        AND (jsonb_typeof(summary -> 'by_tag') IS DISTINCT FROM 'object'
             OR (SELECT coalesce(bool_and(public.org_eval_figures_ok(v)), true) FROM jsonb_each(summary -> 'by_tag') e(t, v)))
        AND jsonb_typeof(cases) = 'array'
        AND (SELECT coalesce(bool_and(
                jsonb_typeof(c) = 'object'
                AND (jsonb_typeof(c -> 'position') = 'null'
                     OR (jsonb_typeof(c -> 'position') = 'number' AND (c ->> 'position')::numeric BETWEEN 1 AND 1000))
                AND jsonb_typeof(c -> 'chars') = 'number' AND (c ->> 'chars')::numeric BETWEEN 0 AND 1e9
                AND jsonb_typeof(c -> 'ms') = 'number' AND (c ->> 'ms')::numeric BETWEEN 0 AND 1e9), true)
             FROM jsonb_array_elements(cases) c), false)
$$;

ALTER TABLE public.eval_runs ADD CONSTRAINT eval_runs_numbers CHECK (
    public.org_eval_run_ok(k, summary, cases)
    AND coalesce(vault_files >= 0, true) AND coalesce(vault_chunks >= 0, true)) NOT VALID;

-- 8. The private notes' words. vault_terms counted every note, so a term no visible note
-- holds was a word of a private note. Now each term is counted per kind of note (private or
-- not) and members see the counts of visible notes only (an owner and the admin see both);
-- BM25 sums the rows a caller may see (cli_org/sql/search.sql). A note that becomes private
-- or public moves its counts with it (the trigger below), so the scan never recounts.
ALTER TABLE public.vault_terms ADD COLUMN private boolean NOT NULL DEFAULT false;
ALTER TABLE public.vault_terms DROP CONSTRAINT vault_terms_pkey;
DELETE FROM public.vault_terms;
INSERT INTO public.vault_terms (term, private, df)
SELECT p.term, f.private, count(*) FROM public.vault_postings p JOIN public.vault_files f ON f.id = p.file_id
GROUP BY p.term, f.private;
ALTER TABLE public.vault_terms ADD PRIMARY KEY (term, private);
ALTER TABLE public.vault_terms ENABLE ROW LEVEL SECURITY;
CREATE POLICY vault_terms_visible ON public.vault_terms FOR SELECT USING (NOT private OR (SELECT public.org_is_owner()));

CREATE FUNCTION public.org_vault_terms_move() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE public.vault_terms t SET df = t.df - 1
    FROM public.vault_postings p WHERE p.file_id = NEW.id AND t.term = p.term AND t.private = OLD.private;
    INSERT INTO public.vault_terms (term, private, df)
    SELECT p.term, NEW.private, 1 FROM public.vault_postings p WHERE p.file_id = NEW.id
    ON CONFLICT (term, private) DO UPDATE SET df = public.vault_terms.df + 1;
    DELETE FROM public.vault_terms WHERE df = 0;
    RETURN NULL;
END $$;
CREATE TRIGGER vault_files_private_moves_terms AFTER UPDATE OF private ON public.vault_files
    FOR EACH ROW WHEN (OLD.private IS DISTINCT FROM NEW.private) EXECUTE FUNCTION public.org_vault_terms_move();

-- 6, again: the search rule for `--private` named "no agent" as the admin.
-- (cli_org/sql/search.sql may_see_private now asks org_is_admin().)

-- 10. statement_timeout is a setting every role may change for itself, so no ALTER ROLE ...
-- SET bound holds against a member's own session (PostgreSQL has no setting a member cannot
-- lift). The bound that holds is the admin's: cancel member statements running longer than
-- the given seconds. Run by the admin (a superuser, or on a team server the role granted
-- every agent's role, which may signal their backends); members have no EXECUTE.
CREATE FUNCTION public.org_cancel_long_member_queries(p_seconds double precision)
RETURNS TABLE (pid integer, usename name, seconds double precision, query text)
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, public, pg_temp AS $$
    -- Chosen first (MATERIALIZED), cancelled after: a WHERE clause may call pg_cancel_backend
    -- before its other conditions have ruled a backend out.
    WITH chosen AS MATERIALIZED (
        SELECT a.pid, a.usename, extract(epoch FROM now() - a.query_start)::float8 AS seconds,
               left(a.query, 200) AS query
        FROM pg_catalog.pg_stat_activity a
        WHERE a.datname = current_database() AND a.state = 'active' AND a.pid <> pg_catalog.pg_backend_pid()
          AND a.query_start < now() - make_interval(secs => p_seconds)
          AND a.usename IS NOT NULL
          AND pg_catalog.pg_has_role(a.usename, public.org_member_role(), 'MEMBER')
          AND NOT pg_catalog.pg_has_role(a.usename,
                  (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = 'public.org_agents'::pg_catalog.regclass),
                  'USAGE')
    )
    SELECT c.pid, c.usename, c.seconds, c.query FROM chosen c WHERE pg_catalog.pg_cancel_backend(c.pid)
$$;
REVOKE EXECUTE ON FUNCTION public.org_cancel_long_member_queries(double precision) FROM PUBLIC;
