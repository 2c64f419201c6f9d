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
CREATE POLICY eval_runs_read ON eval_runs FOR SELECT USING (true);
-- The admin connection (no agent) saves with author NULL, as recall_events logs.
CREATE POLICY eval_runs_insert ON eval_runs FOR INSERT WITH CHECK (author IS NOT DISTINCT FROM org_me());
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

-- The rule: today's scratch notes, money, anything that looks like an env file, and the
-- prefixes the last scan was given (ORG_RECALL_EXCLUDE).
CREATE FUNCTION org_vault_private(p_path text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT p_path LIKE 'CURRENT/%' OR p_path LIKE 'Areas/Finance/%'
        OR p_path ~ '(^|/)\.env|\.env($|[./])'
        OR EXISTS (SELECT 1 FROM vault_private_prefixes x WHERE starts_with(p_path, x.prefix))
$$;

ALTER TABLE vault_files ADD COLUMN private boolean NOT NULL DEFAULT false;
UPDATE vault_files SET private = org_vault_private(path);

CREATE FUNCTION org_is_owner() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT coalesce((SELECT is_owner FROM org_agents WHERE name = org_caller()), false)
$$;

-- The private notes the caller may not see: none for owners, every one for other members.
-- A definer function, because the member's own view of vault_files already hides them.
CREATE FUNCTION org_hidden_files() RETURNS bigint[]
LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT CASE WHEN org_is_owner() THEN '{}'::bigint[]
                ELSE coalesce((SELECT array_agg(id) FROM vault_files WHERE private), '{}') END
$$;

ALTER TABLE vault_files ENABLE ROW LEVEL SECURITY;
ALTER TABLE vault_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE vault_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE vault_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE vault_tags ENABLE ROW LEVEL SECURITY;
-- The (SELECT ...) makes each an init plan: evaluated once per query, not once per row.
CREATE POLICY vault_files_visible ON vault_files FOR SELECT USING (NOT private OR (SELECT org_is_owner()));
CREATE POLICY vault_chunks_visible ON vault_chunks FOR SELECT USING (file_id <> ALL ((SELECT org_hidden_files())::bigint[]));
CREATE POLICY vault_postings_visible ON vault_postings FOR SELECT
    USING (file_id <> ALL ((SELECT org_hidden_files())::bigint[]));
CREATE POLICY vault_links_visible ON vault_links FOR SELECT USING (file_id <> ALL ((SELECT org_hidden_files())::bigint[]));
CREATE POLICY vault_tags_visible ON vault_tags FOR SELECT USING (file_id <> ALL ((SELECT org_hidden_files())::bigint[]));

REVOKE ALL ON vault_private_prefixes FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION org_is_owner(), org_hidden_files() FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON vault_private_prefixes TO %I', org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION org_is_owner(), org_hidden_files() TO %I', org_member_role());
END $$;

-- 1. Shadowing (last, so that it covers the functions above too). A function body is
-- parsed with the caller's search_path, and PostgreSQL looks in the session's temporary
-- schema first: a member's TEMP TABLE org_agents made org_me() name whoever the member
-- liked. Every function of this schema now fixes its search_path, pg_temp last; later
-- migrations must do the same
-- (tests/test_hostile.py::test_every_function_pins_its_search_path checks them all).
DO $$
DECLARE
    fn regprocedure;
BEGIN
    FOR fn IN
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', fn, current_schema());
    END LOOP;
END $$;
