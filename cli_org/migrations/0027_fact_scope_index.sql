-- remember's near-duplicate check (cli_org/store/facts.py, sql facts.same_scope) reads the
-- agent's current facts of one subject, in any case. Without this index it read every current
-- fact of the agent (the unique index leads with the author only): 6.5 ms at 2,100 facts,
-- measured with python -m benchmarks.remember_cost.
CREATE INDEX memory_facts_scope ON public.memory_facts (author, lower(subject)) WHERE valid_to IS NULL;
