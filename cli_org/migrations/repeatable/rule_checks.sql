-- The CHECK constraints that hold a rule of cli_org/checks/rules.py, generated from it by
-- scripts/rule_checks_sql.py: do not edit; change rules.py and run `python scripts/generate.py`.
-- Each is added NOT VALID under a scratch name and compared with the one in place: the same,
-- and the scratch one goes (no scan of the table); else it takes the old one's place and is
-- checked against every row. A repeatable file (cli_org/db/migrate.py; docs/migrations.md).

DO $$
DECLARE
    c record;
    have text;
    want text;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('org_agents', 'org_agents_name_check', $c$name ~ '^[a-z][a-z0-9_-]{0,31}$'$c$),
        ('memory_facts', 'memory_facts_subject_check', $c$btrim(subject) <> '' AND length(subject) <= 200$c$),
        ('memory_facts', 'memory_facts_claim_check', $c$btrim(claim) <> '' AND length(claim) <= 1000$c$),
        ('memory_facts', 'memory_facts_kind_check', $c$kind IN ('fact', 'decision', 'failure', 'workflow', 'rule', 'preference', 'model_note')$c$),
        ('archive_sessions', 'archive_sessions_harness_check', $c$harness IN ('claude-code', 'hermes', 'codex')$c$),
        ('archive_messages', 'archive_messages_kind_check', $c$kind IN ('user', 'assistant', 'tool', 'system')$c$),
        ('notebook_entries', 'notebook_entries_store_check', $c$store IN ('memory', 'user')$c$),
        ('notebook_entries', 'notebook_entries_check', $c$btrim(body) <> '' AND length(body) <= CASE store WHEN 'memory' THEN 2200 WHEN 'user' THEN 1375 END$c$),
        ('org_todos', 'org_todos_text_check', $c$btrim(text) <> '' AND length(text) <= 500$c$),
        ('memory_proposals', 'memory_proposals_subject_check', $c$btrim(subject) <> '' AND length(subject) <= 200$c$),
        ('memory_proposals', 'memory_proposals_claim_check', $c$btrim(claim) <> '' AND length(claim) <= 300$c$),
        ('memory_proposals', 'memory_proposals_kind_check', $c$kind IN ('rule', 'decision', 'failure', 'workflow', 'preference', 'fact')$c$),
        ('memory_proposals', 'memory_proposals_state_check', $c$state IN ('pending', 'accepted', 'rejected')$c$)
    ) AS x(tbl, con, cond) LOOP
        EXECUTE format('ALTER TABLE public.%I ADD CONSTRAINT org_rule_wanted CHECK (%s) NOT VALID', c.tbl, c.cond);
        SELECT pg_catalog.max(pg_catalog.pg_get_constraintdef(oid)) FILTER (WHERE conname = c.con),
               pg_catalog.replace(pg_catalog.max(pg_catalog.pg_get_constraintdef(oid))
                                  FILTER (WHERE conname = 'org_rule_wanted'), ' NOT VALID', '')
        INTO have, want
        FROM pg_catalog.pg_constraint WHERE conrelid = pg_catalog.to_regclass('public.' || c.tbl);
        IF have IS NOT DISTINCT FROM want THEN
            EXECUTE format('ALTER TABLE public.%I DROP CONSTRAINT org_rule_wanted', c.tbl);
        ELSE
            EXECUTE format('ALTER TABLE public.%I DROP CONSTRAINT IF EXISTS %I', c.tbl, c.con);
            EXECUTE format('ALTER TABLE public.%I RENAME CONSTRAINT org_rule_wanted TO %I', c.tbl, c.con);
            EXECUTE format('ALTER TABLE public.%I VALIDATE CONSTRAINT %I', c.tbl, c.con);
        END IF;
    END LOOP;
END $$;
