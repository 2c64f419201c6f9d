-- Agents, the shared fact store, and the row-level security that guards it.
-- Roles are cluster-wide, so the member group is named after the database: two cli-org
-- databases on one server never share members.

CREATE TABLE org_agents (
    name        text PRIMARY KEY,  -- its pattern: repeatable/rule_checks.sql, as for every rule of rules.py
    kind        text NOT NULL DEFAULT 'bot' CHECK (kind IN ('bot', 'person')),
    team_lead   text REFERENCES org_agents (name),
    is_owner    boolean NOT NULL DEFAULT false,
    role_name   text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memory_facts (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject         text NOT NULL,
    claim           text NOT NULL,
    source          text NOT NULL CHECK (btrim(source) <> ''),
    author          text NOT NULL DEFAULT org_me() REFERENCES org_agents (name),
    project         text CHECK (project IS NULL OR btrim(project) <> ''),
    confidence      text NOT NULL DEFAULT 'confirmed' CHECK (confidence IN ('confirmed', 'inferred')),
    kind            text NOT NULL DEFAULT 'fact',
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

REVOKE ALL ON org_agents, memory_facts FROM PUBLIC;

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
END $$;
