-- Agents, the shared fact store, and the row-level security that guards it.
-- Roles are cluster-wide, so the member group is named after the database: two cli-org
-- databases on one server never share members.

CREATE FUNCTION org_member_role() RETURNS text
LANGUAGE sql STABLE AS $$ SELECT current_database() || '_member' $$;

CREATE TABLE org_agents (
    name        text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_-]{0,31}$'),
    kind        text NOT NULL DEFAULT 'bot' CHECK (kind IN ('bot', 'person')),
    team_lead   text REFERENCES org_agents (name),
    is_owner    boolean NOT NULL DEFAULT false,
    role_name   text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The agent behind the role running the current statement (RLS policies, defaults).
CREATE FUNCTION org_me() RETURNS text
LANGUAGE sql STABLE AS $$ SELECT name FROM org_agents WHERE role_name = current_user $$;

-- The agent who called a SECURITY DEFINER function. Inside such a function current_user
-- is the owner, so read the role the session set (SET ROLE) or logged in as. PostgreSQL
-- itself refuses SET ROLE to a role the login is not a member of.
CREATE FUNCTION org_caller() RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT name FROM org_agents
    WHERE role_name = CASE current_setting('role')
                          WHEN 'none' THEN session_user::text
                          ELSE current_setting('role') END
$$;

CREATE TABLE memory_facts (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject         text NOT NULL CHECK (btrim(subject) <> '' AND length(subject) <= 200),
    claim           text NOT NULL CHECK (btrim(claim) <> '' AND length(claim) <= 1000),
    source          text NOT NULL CHECK (btrim(source) <> ''),
    author          text NOT NULL DEFAULT org_me() REFERENCES org_agents (name),
    project         text CHECK (project IS NULL OR btrim(project) <> ''),
    confidence      text NOT NULL DEFAULT 'confirmed' CHECK (confidence IN ('confirmed', 'inferred')),
    kind            text NOT NULL DEFAULT 'fact' CHECK (kind IN (
                        'fact', 'decision', 'failure', 'workflow', 'rule', 'preference', 'model_note')),
    via             text,
    valid_from      timestamptz NOT NULL DEFAULT now(),
    valid_to        timestamptz,
    retired_by      text REFERENCES org_agents (name),
    retired_reason  text,
    supersedes      bigint REFERENCES memory_facts (id),
    superseded_by   bigint REFERENCES memory_facts (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    search          tsvector GENERATED ALWAYS AS (
                        to_tsvector('english', subject || ' ' || claim)) STORED,
    CHECK ((valid_to IS NULL) = (retired_by IS NULL))
);

CREATE INDEX memory_facts_search ON memory_facts USING gin (search);
CREATE INDEX memory_facts_current ON memory_facts (subject) WHERE valid_to IS NULL;
-- One current copy of a claim per subject and project; a concurrent duplicate loses here.
CREATE UNIQUE INDEX memory_facts_no_duplicate
    ON memory_facts (subject, md5(claim), coalesce(project, ''))
    WHERE valid_to IS NULL;

ALTER TABLE memory_facts ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_facts FORCE ROW LEVEL SECURITY;

-- Members read everything; only SELECT and column-limited INSERT are granted to them, so
-- the permissive UPDATE policy below serves the SECURITY DEFINER functions alone.
CREATE POLICY facts_read ON memory_facts FOR SELECT USING (true);
CREATE POLICY facts_insert_as_self ON memory_facts FOR INSERT
    WITH CHECK (author = org_me());
CREATE POLICY facts_retire ON memory_facts FOR UPDATE USING (true) WITH CHECK (true);

CREATE FUNCTION org_may_retire(actor text, fact_author text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT actor = fact_author
        OR EXISTS (SELECT 1 FROM org_agents WHERE name = fact_author AND team_lead = actor)
        OR EXISTS (SELECT 1 FROM org_agents WHERE name = actor AND is_owner)
$$;

CREATE FUNCTION org_retire_check(me text, f memory_facts) RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    lead text;
BEGIN
    IF f.valid_to IS NOT NULL THEN
        RAISE EXCEPTION 'fact % is already retired (by %: %)', f.id, f.retired_by, f.retired_reason
            USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, f.author) THEN
        SELECT team_lead INTO lead FROM org_agents WHERE name = f.author;
        RAISE EXCEPTION 'agent % may not retire fact %: only its author (%)%, or an owner may',
            me, f.id, f.author,
            CASE WHEN lead IS NULL THEN '' ELSE format(', their team lead (%s)', lead) END
            USING ERRCODE = '42501';
    END IF;
END $$;

CREATE FUNCTION org_forget(p_id bigint, p_why text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
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
    SELECT * INTO f FROM memory_facts WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    PERFORM org_retire_check(me, f);
    UPDATE memory_facts SET valid_to = now(), retired_by = me, retired_reason = btrim(p_why)
    WHERE id = p_id;
    RETURN p_id;
END $$;

CREATE FUNCTION org_supersede(p_old bigint, p_new bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    me text := org_caller();
    old_fact memory_facts;
    new_fact memory_facts;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO old_fact FROM memory_facts WHERE id = p_old FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no fact with id %', p_old USING ERRCODE = 'P0002';
    END IF;
    SELECT * INTO new_fact FROM memory_facts WHERE id = p_new FOR UPDATE;
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
END $$;

REVOKE ALL ON org_agents, memory_facts FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION org_forget(bigint, text), org_supersede(bigint, bigint) FROM PUBLIC;

DO $$
DECLARE
    grp text := org_member_role();
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = grp) THEN
        EXECUTE format('CREATE ROLE %I NOLOGIN', grp);
    END IF;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), grp);
    EXECUTE format('GRANT USAGE ON SCHEMA public TO %I', grp);
    EXECUTE format('GRANT SELECT ON org_agents, memory_facts TO %I', grp);
    EXECUTE format('GRANT INSERT (subject, claim, source, author, project, confidence, kind, via)'
                   ' ON memory_facts TO %I', grp);
    EXECUTE format('GRANT EXECUTE ON FUNCTION org_forget(bigint, text),'
                   ' org_supersede(bigint, bigint) TO %I', grp);
END $$;
