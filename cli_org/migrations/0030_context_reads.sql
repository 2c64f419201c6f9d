-- The session context block reads only what it can show (cli_org/session/context.py): the
-- newest current facts of each kind in scope, walked down this index a kind and a scope
-- (org-wide, or one project) at a time, and stopped after what the budget could hold.
-- Before it, the block listed every fact of the store: 2.0 s at 100k facts, 17.6 s at 1M
-- (python -m benchmarks.scale, benchmarks/RESULTS.md "How far one server goes").
CREATE INDEX memory_facts_context ON public.memory_facts (kind, project, created_at DESC, id DESC)
    WHERE valid_to IS NULL;

-- The block counts the retired and superseded facts in scope, never lists them: this index
-- holds only the facts that ended, so the count reads them alone.
CREATE INDEX memory_facts_ended ON public.memory_facts (project) INCLUDE (superseded_by)
    WHERE valid_to IS NOT NULL;
