-- What a fact's source said when the fact was written (issue 36, item 5): the SHA-256, in
-- lower-case hex, of the cited file, or of its cited lines when the source is `path:10` or
-- `path:10-20` (cli_org/store/sources.py). `eval stale` and `tidy` compare it with the file
-- as it is now: a checkout resets modification times, so a time says nothing about content.
-- NULL when nothing was hashed: a source that is no file path, a file outside the project or
-- the vault, missing, reached through a symlink or larger than the bound, and every fact
-- written before this migration (judged by time as before).
--
-- The CHECK holds a member writing SQL from its own login, and an import, to the one shape:
-- 64 hex characters or nothing. The hash is the writer's word about its own fact, as the
-- source is; a false one makes `tidy` propose the fact for review, never retire it.
ALTER TABLE public.memory_facts
    ADD COLUMN source_hash text CONSTRAINT memory_facts_source_hash_shape CHECK (source_hash ~ '^[0-9a-f]{64}$');

DO $$
BEGIN
    -- Members insert it with the fact (the other columns: migration 0001).
    EXECUTE format('GRANT INSERT (source_hash) ON public.memory_facts TO %I', public.org_member_role());
END $$;
