-- Hardening against a hostile member (the security review of findings 1, 5, 6, 8 and 9).

-- Members may not create objects beside ours (an overload of a function we call would run
-- inside our definer functions). PostgreSQL 15 and later already refuse it by default.
DO $$
BEGIN
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', current_schema());
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'could not revoke CREATE on schema %: not its owner', current_schema();
END $$;

-- 5. Advisory locks. Any role may call pg_advisory_lock by default, so a member could hold
-- the migration, scan or archive key and make admin work hang. Members need none of them.
-- Revoking needs a superuser (the functions belong to the bootstrap role); on a server
-- where the admin is not one, admin commands still wait only CLI_ORG_LOCK_WAIT seconds and
-- then name the holder (cli_org/db/locks.py).
DO $$
DECLARE
    fn regprocedure;
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        FOR fn IN SELECT oid::regprocedure FROM pg_proc
                  WHERE pronamespace = 'pg_catalog'::regnamespace AND proname LIKE 'pg\_%advisory\_%'
        LOOP
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', fn);
        END LOOP;
    END IF;
END $$;

-- 8. Claim squatting. One current copy of a claim per subject and project *per author*:
-- before, a member who wrote another agent's claim first owned it, and retiring it erased
-- the other agent's write. Now each agent's assertion is its own row; recall shows an
-- identical claim once, with every author (recall/facts_arm.py).
DROP INDEX memory_facts_no_duplicate;
CREATE UNIQUE INDEX memory_facts_no_duplicate
    ON memory_facts (author, subject, md5(claim), coalesce(project, ''))
    WHERE valid_to IS NULL;

-- 6. Evaluation runs. Every run has an author; members insert only as themselves, never
-- update or delete; names are unique per author, so nobody can squat another's name; a
-- run must have the shape readers expect.
ALTER TABLE eval_runs ADD COLUMN author text DEFAULT org_me() REFERENCES org_agents (name);
ALTER TABLE eval_runs DROP CONSTRAINT eval_runs_name_key;
CREATE UNIQUE INDEX eval_runs_name_per_author ON eval_runs (coalesce(author, ''), name);
ALTER TABLE eval_runs ADD CONSTRAINT eval_runs_shape CHECK (coalesce(
    jsonb_typeof(summary -> 'overall') = 'object' AND jsonb_typeof(cases) = 'array' AND k > 0, false));
ALTER TABLE eval_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE eval_runs FORCE ROW LEVEL SECURITY;
DO $$
BEGIN
    EXECUTE format('REVOKE INSERT ON eval_runs FROM %I', org_member_role());
    EXECUTE format('GRANT INSERT (name, git_commit, embedder, vault_files, vault_chunks, golden_file, k, project,'
                   ' summary, cases, author) ON eval_runs TO %I', org_member_role());
END $$;

-- 9. Private notes. One rule decides which vault paths are private (org_vault_private);
-- the scan stores its verdict per note, recall and search never show private notes, and
-- row-level security hides them, their chunks, postings, links and tags from members who
-- query the tables directly. Owners (and the admin) may read them.
CREATE TABLE vault_private_prefixes (
    prefix text PRIMARY KEY CHECK (btrim(prefix) <> '')
);

ALTER TABLE vault_files ADD COLUMN private boolean NOT NULL DEFAULT false;
UPDATE vault_files SET private = org_vault_private(path);

ALTER TABLE vault_files ENABLE ROW LEVEL SECURITY;
ALTER TABLE vault_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE vault_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE vault_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE vault_tags ENABLE ROW LEVEL SECURITY;

REVOKE ALL ON vault_private_prefixes FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON vault_private_prefixes TO %I', org_member_role());
END $$;
