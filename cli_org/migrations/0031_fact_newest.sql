-- The fact arm's lexical passes rank only the newest matches of a common word
-- (cli_org/recall/facts_arm.py, RANK_CAP): this index lets the planner walk the current
-- facts newest first, test each, and stop after them, where the GIN indexes hand over every
-- match unordered (the common-word tail: p95 7.3 s at 1M facts, benchmarks/RESULTS.md).
CREATE INDEX memory_facts_newest ON public.memory_facts (created_at DESC, id DESC) WHERE valid_to IS NULL;
