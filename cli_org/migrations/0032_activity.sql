-- The activity feed (cli_org/store/activity.py, sql/activity.sql): what changed, by agent and
-- by harness. Two parts.
--
-- 1. Which harness made each write. A fact says so in `via` (the writer passes it); the other
-- writes said nothing. Now every write records the harness of the transaction that made it:
-- the library says it once per transaction, `set_config('cli_org.via', VIA, true)`
-- (store/activity.py say_via), and the database stamps it on the rows that write makes:
--   notebook_versions.via        the version an edit made
--   memory_pins.pinned_via       pinned; unpinned_via: unpinned (or ended by a retirement)
--   org_todos.via                added;  done_via: marked done
--   memory_facts.retired_via     forgotten or superseded (cleared when restored)
--   memory_restores.retired_via  the retirement a restore undid; restored_via: the restore
-- Who may write them: no member has a grant on any of these columns, and each is stamped by a
-- trigger from the writer's own transaction, so a member records only its own writes' harness,
-- never another's (the rule of the tables' other columns: who, when). The shape is that of a
-- fact's via (RUNTIME@HOST, org_field_rules); anything else is refused with the write. A value
-- an import or the admin gives on INSERT is kept (members cannot insert into these tables, or,
-- for org_todos, hold no grant on the column).
--
-- 2. Indexes: each source of the feed is read newest first from its own time column, from the
-- page's cursor back to `since`, and stops after a page (EXPLAIN ANALYZE numbers in the docs).

ALTER TABLE public.notebook_versions ADD COLUMN via text;
ALTER TABLE public.memory_pins ADD COLUMN pinned_via text, ADD COLUMN unpinned_via text;
ALTER TABLE public.org_todos ADD COLUMN via text, ADD COLUMN done_via text;
ALTER TABLE public.memory_facts ADD COLUMN retired_via text;
ALTER TABLE public.memory_restores ADD COLUMN retired_via text, ADD COLUMN restored_via text;

-- The feed's sources, newest first (the recall and tool-call logs have their created_at
-- indexes, 0004 and 0016), and for the facts, which grow largest, by who and by harness too:
-- without these, a filter that matches little walked every fact back to `since` (at 100,000
-- facts, 86-207 ms per page with `since all`; python -m benchmarks.activity). A harness's
-- index holds only the facts that name one.
CREATE INDEX memory_facts_written ON public.memory_facts (created_at, id);
CREATE INDEX memory_facts_written_by ON public.memory_facts (author, created_at, id);
CREATE INDEX memory_facts_written_via ON public.memory_facts (split_part(via, '@', 1), created_at, id)
    WHERE via IS NOT NULL;
CREATE INDEX memory_facts_retired ON public.memory_facts (valid_to, id) WHERE valid_to IS NOT NULL;
CREATE INDEX memory_facts_retired_by ON public.memory_facts (retired_by, valid_to, id) WHERE valid_to IS NOT NULL;
CREATE INDEX memory_facts_retired_via ON public.memory_facts (split_part(retired_via, '@', 1), valid_to, id)
    WHERE retired_via IS NOT NULL;
CREATE INDEX memory_restores_restored ON public.memory_restores (restored_at, id);
CREATE INDEX memory_restores_retired ON public.memory_restores (retired_at, id);
CREATE INDEX memory_pins_pinned ON public.memory_pins (pinned_at, id);
CREATE INDEX memory_pins_unpinned ON public.memory_pins (unpinned_at, id) WHERE unpinned_at IS NOT NULL;
CREATE INDEX notebook_versions_at ON public.notebook_versions (at);
CREATE INDEX org_todos_created ON public.org_todos (created_at, id);
CREATE INDEX org_todos_done ON public.org_todos (done_at, id) WHERE done_at IS NOT NULL;
