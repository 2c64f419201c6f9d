-- runs before the numbered migrations
-- The field checks members' writes pass (the write scan itself is write_checks.sql), approvals
-- of a text the scan refused, and the shape checks of evaluation runs.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

-- An owner approves a text; returns its hash. Approving a text again keeps the first
-- approval (who, when, why) and returns the same hash.
CREATE OR REPLACE FUNCTION public.org_approve_text(p_text text, p_reason text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := public.org_caller();
    digest text;
    problem text;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    IF NOT public.org_is_owner() THEN
        RAISE EXCEPTION 'agent % may not approve a text for the write checks: only an owner may', me
            USING ERRCODE = '42501';
    END IF;
    IF p_text IS NULL OR btrim(p_text) = '' THEN
        RAISE EXCEPTION 'the text to approve is empty' USING ERRCODE = '22023';
    END IF;
    IF length(p_text) > 2200 THEN  -- the longest text a write holds (a notebook store)
        RAISE EXCEPTION 'the text is % characters; the limit is 2200', length(p_text) USING ERRCODE = '22023';
    END IF;
    -- Characters are never approved: a text holding control or invisible ones is refused.
    problem := public.org_write_problem('text', p_text, false);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    problem := public.org_field_problem('reason', 'reason', p_reason);
    IF problem IS NOT NULL OR p_reason IS NULL OR btrim(p_reason) = '' THEN
        RAISE EXCEPTION '%', coalesce(problem, 'a reason is required') USING ERRCODE = '23514';
    END IF;
    digest := public.org_text_sha256(p_text);
    INSERT INTO public.org_write_approvals (sha256, approved_by, reason)
    VALUES (digest, me, p_reason)
    ON CONFLICT (sha256) DO NOTHING;
    RETURN digest;
END $function$;
REVOKE ALL ON FUNCTION public.org_approve_text(text,text) FROM PUBLIC;

-- 10. statement_timeout is a setting every role may change for itself, so no ALTER ROLE ...
-- SET bound holds against a member's own session (PostgreSQL has no setting a member cannot
-- lift). The bound that holds is the admin's: cancel member statements running longer than
-- the given seconds. Run by the admin (a superuser, or on a team server the role granted
-- every agent's role, which may signal their backends); members have no EXECUTE.
CREATE OR REPLACE FUNCTION public.org_cancel_long_member_queries(p_seconds double precision) RETURNS TABLE(pid integer, usename name, seconds double precision, query text)
LANGUAGE sql SET search_path = pg_catalog, public, pg_temp AS $function$
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
$function$;
REVOKE ALL ON FUNCTION public.org_cancel_long_member_queries(double precision) FROM PUBLIC;

-- Add delta to a scope's counter; the new total.
CREATE OR REPLACE FUNCTION public.org_cap_add(p_scope text, p_delta integer) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    total integer;
BEGIN
    -- Under REPEATABLE READ a row another transaction added after the snapshot makes this a
    -- serialization error as well, never a second counter.
    INSERT INTO public.org_cap_usage (scope, used) VALUES (p_scope, 0) ON CONFLICT (scope) DO NOTHING;
    UPDATE public.org_cap_usage SET used = used + p_delta WHERE scope = p_scope RETURNING used INTO total;
    RETURN total;
END $function$;
REVOKE ALL ON FUNCTION public.org_cap_add(text,integer) FROM PUBLIC;

-- Refuse a write whose fields break their rules, then run the write scan (0012's
-- org_write_scan: secrets and injections) over them all at once. Raises; returns nothing.
CREATE OR REPLACE FUNCTION public.org_check_fields(fields text[], labels text[], texts text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;

-- 9. An eval run's numbers in their ranges: each Figures object (cli_org/evaluation/golden.py)
-- of the summary, each case, k and the vault's size. A reader still treats a stored row that
-- predates this as possibly malformed (cli_org/evaluation/runs.py).
CREATE OR REPLACE FUNCTION public.org_eval_figures_ok(x jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT coalesce(jsonb_typeof(x) = 'object'
        AND jsonb_typeof(x -> 'n') = 'number' AND (x ->> 'n')::numeric BETWEEN 0 AND 1000000
        AND jsonb_typeof(x -> 'hit_rate') = 'number' AND (x ->> 'hit_rate')::numeric BETWEEN 0 AND 1
        AND jsonb_typeof(x -> 'mrr') = 'number' AND (x ->> 'mrr')::numeric BETWEEN 0 AND 1
        AND (SELECT bool_and(jsonb_typeof(x -> k) = 'number' AND (x ->> k)::numeric BETWEEN 0 AND 1e9)
             FROM unnest(ARRAY['chars_median', 'chars_p95', 'ms_median', 'ms_p95']) k), false)
$function$;

CREATE OR REPLACE FUNCTION public.org_eval_run_ok(k integer, summary jsonb, cases jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, public, pg_temp AS $function$
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
$function$;

-- issue 21 (7): each table's member-written text, checked when it is written or changed (so
-- older rows can still be retired, unpinned or restored). Triggers of their own, beside the
-- write checks of 0009-0012 (which a regenerated write scan replaces).
CREATE OR REPLACE FUNCTION public.org_field_checks() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;

-- What is wrong with one field, or NULL: its shape, its length, then (0009) control and
-- invisible characters. `field` names the rule; `label` is what the message calls it.
CREATE OR REPLACE FUNCTION public.org_field_problem(field text, label text, t text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;

-- 6. The administrator, recognised by what it is: a role that holds the rights of the owner
-- of the org's tables (a superuser does too), as 0019 decided for the notebook read rule. No
-- member passes: no agent role and not the member group is granted the owner's role. A NULL
-- org_me() (no agent behind current_user, e.g. after `SET ROLE <db>_member`) is nobody.
CREATE OR REPLACE FUNCTION public.org_is_admin() RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT pg_catalog.pg_has_role(current_user,
                                  (SELECT c.relowner FROM pg_catalog.pg_class c
                                   WHERE c.oid = 'public.org_agents'::pg_catalog.regclass), 'USAGE')
$function$;

-- issue 21 (5): a store's live entries stay within org_notebook_cap (rules.NOTEBOOK_CAPS).
CREATE OR REPLACE FUNCTION public.org_notebook_cap_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;

-- issue 21 (5): a scope's live pins stay within org_pin_caps (rules.PIN_CAP_ORG, PIN_CAP_PROJECT).
CREATE OR REPLACE FUNCTION public.org_pin_cap_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
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
END $function$;

-- Is this one of the source forms checks.py accepts? Looser than the client on purpose
-- (no spaces; an http(s) URL, #message, t_card, or a path with a folder or an extension;
-- no other scheme), so that no source the client allows is refused here.
CREATE OR REPLACE FUNCTION public.org_source_ok(s text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT s ~ '^(https?://[^ ]+|#[^ ]+|t_[^ ]+|[^ ]*/[^ ]*|[^ ]*\.[A-Za-z0-9]+(:[^ ]+)?)$'
       AND (s !~ '://' OR s ~ '^https?://')
$function$;

-- The hash the approvals are keyed by (the client computes the same: hashlib.sha256).
CREATE OR REPLACE FUNCTION public.org_text_sha256(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(t, 'UTF8')), 'hex')
$function$;
REVOKE ALL ON FUNCTION public.org_text_sha256(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_vault_terms_move() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    UPDATE public.vault_terms t SET df = t.df - 1
    FROM public.vault_postings p WHERE p.file_id = NEW.id AND t.term = p.term AND t.private = OLD.private;
    INSERT INTO public.vault_terms (term, private, df)
    SELECT p.term, NEW.private, 1 FROM public.vault_postings p WHERE p.file_id = NEW.id
    ON CONFLICT (term, private) DO UPDATE SET df = public.vault_terms.df + 1;
    DELETE FROM public.vault_terms WHERE df = 0;
    RETURN NULL;
END $function$;

-- Whether an owner approved exactly this text.
CREATE OR REPLACE FUNCTION public.org_write_approved(t text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT t IS NOT NULL
       AND EXISTS (SELECT 1 FROM public.org_write_approvals WHERE sha256 = public.org_text_sha256(t))
$function$;
REVOKE ALL ON FUNCTION public.org_write_approved(text) FROM PUBLIC;
