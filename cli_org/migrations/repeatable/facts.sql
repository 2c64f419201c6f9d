-- runs before the numbered migrations
-- The agents and facts: who the caller is, the member group, retiring and superseding a fact.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

-- The [fact] arm's lexical passes read an index, not every fact (issue 14, part 4: at 1M
-- facts the substring test and the loose pass ran a sequential scan each).
--
-- The substring test (`strpos`, the strict pass) and the word-start test (a regex, the loose
-- pass) cannot use the full-text index: a substring may sit inside a word ("gres" in
-- "postgresql") and the full-text lexemes are stemmed. This index holds, for every current
-- fact, each word of its subject and claim (lower case, split where `\W+` splits) and every
-- tail of that word of three or more characters. Any run of word characters of three or more
-- that occurs in a fact is then the start of one of its pieces, so a prefix query
-- (`'piece':*`) finds every fact that can hold it. The passes ask the index for those
-- candidates and keep their exact tests (strpos, the regex) on the candidates alone: the
-- same answers, from a bounded part of the index (cli_org/recall/facts_arm.py, `pieces`).
--
-- Pieces are cut at 60 characters (a tsvector lexeme may not pass 2 kB, and a claim may
-- hold one 1,000-character word); the queries cut their words the same way. pg_trgm would
-- do the same job, but the embedded server does not ship it.
CREATE OR REPLACE FUNCTION public.fact_word_pieces(subject text, claim text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT array_to_tsvector(array_agg(DISTINCT left(substr(w, i), 60)))
    FROM unnest(regexp_split_to_array(lower(subject || ' ' || claim), '\W+')) AS w,
         generate_series(1, greatest(1, length(w) - 2)) AS i
    WHERE w <> ''
$function$;

-- The agent who called a SECURITY DEFINER function. Inside such a function current_user
-- is the owner, so read the role the session set (SET ROLE) or logged in as. PostgreSQL
-- itself refuses SET ROLE to a role the login is not a member of.
CREATE OR REPLACE FUNCTION public.org_caller() RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT name FROM org_agents
    WHERE role_name = CASE current_setting('role')
                          WHEN 'none' THEN session_user::text
                          ELSE current_setting('role') END
$function$;

-- The definer functions that look a fact (or a todo) up by id, as they were (0001, 0014,
-- 0026, 0032), with one change each: the lookup adds `AND org_project_readable(project)`, so a
-- row of a project the caller may not read is not found (see the top of this file).
CREATE OR REPLACE FUNCTION public.org_forget(p_id bigint, p_why text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    f memory_facts;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    IF btrim(coalesce(p_why, '')) = '' THEN
        RAISE EXCEPTION 'say why the fact is retired' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO f FROM memory_facts WHERE id = p_id AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    PERFORM org_retire_check(me, f);
    UPDATE memory_facts SET valid_to = now(), retired_by = me, retired_reason = btrim(p_why)
    WHERE id = p_id;
    RETURN p_id;
END $function$;
REVOKE ALL ON FUNCTION public.org_forget(bigint,text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_may_retire(actor text, fact_author text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT actor = fact_author
        OR EXISTS (SELECT 1 FROM org_agents WHERE name = fact_author AND team_lead = actor)
        OR EXISTS (SELECT 1 FROM org_agents WHERE name = actor AND is_owner)
$function$;

-- The agent behind the role running the current statement (RLS policies, defaults).
CREATE OR REPLACE FUNCTION public.org_me() RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$ SELECT name FROM org_agents WHERE role_name = current_user $function$;

-- Agents, the shared fact store, and the row-level security that guards it.
-- Roles are cluster-wide, so the member group is named after the database: two cli-org
-- databases on one server never share members.
CREATE OR REPLACE FUNCTION public.org_member_role() RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$ SELECT current_database() || '_member' $function$;

CREATE OR REPLACE FUNCTION public.org_supersede(p_old bigint, p_new bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    old_fact memory_facts;
    new_fact memory_facts;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO old_fact FROM memory_facts WHERE id = p_old AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_old USING ERRCODE = 'P0002';
    END IF;
    SELECT * INTO new_fact FROM memory_facts WHERE id = p_new AND org_project_readable(project) FOR UPDATE;
    IF NOT FOUND OR new_fact.author <> me OR new_fact.valid_to IS NOT NULL
       OR new_fact.supersedes IS NOT NULL OR p_new = p_old THEN
        RAISE EXCEPTION 'fact % is not a new current fact of %', p_new, me USING ERRCODE = '22023';
    END IF;
    PERFORM org_retire_check(me, old_fact);
    UPDATE memory_facts
    SET valid_to = now(), retired_by = me, retired_reason = format('superseded by #%s', p_new),
        superseded_by = p_new
    WHERE id = p_old;
    UPDATE memory_facts SET supersedes = p_old WHERE id = p_new;
    RETURN p_new;
END $function$;
REVOKE ALL ON FUNCTION public.org_supersede(bigint,bigint) FROM PUBLIC;
