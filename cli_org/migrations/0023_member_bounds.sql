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

-- recall_events: the arms are recall's (cli_org/recall/answer.py ARMS), the counts are counts.
ALTER TABLE public.recall_events ADD CONSTRAINT recall_events_numbers
    CHECK (arms <@ ARRAY['fact', 'memory', 'vault'] AND hits >= 0 AND chars >= 0 AND ms >= 0) NOT VALID;

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
