-- Which archived tool call runs cli-org's recall or remember: the one definition the usage
-- queries share (cli_org/sql/usage.sql: adoption per harness and over time, per session, and
-- the sessions the "hits later quoted" rule reads). Before this migration the rule was
-- written inline in one query; now that several read it, it lives here once.
--
-- A call counts when an assistant's tool call runs a shell command spelling `cli-org recall`
-- or `org recall` (any path before it), or the MCP tool org_recall / org_remember of the
-- server `cli-org` under the names harnesses record for them: Claude Code and Codex
-- `mcp__cli-org__org_recall` (`mcp__<server>__<tool>`; the Codex transcripts in the corpora
-- show `mcp__cloud-associates__execute_workflow`), Hermes `mcp_cli_org_org_recall` (every
-- character outside [A-Za-z0-9_] turned into `_`; newer versions `mcp__cli_org__org_recall`),
-- and the bare tool name. One shell command may do both (`cli-org recall x && cli-org
-- remember ...`), hence two functions. A message that is not a tool call is neither.

-- Each message says so once, when it is written: a function call per row and query cost
-- 7 microseconds (its fixed search_path is set and reset each time), 0.25 s of a 0.4 s query
-- over 41,000 messages (benchmarks/usage_scale.py). Only an assistant's tool call can be one.
-- A later change of the rule replaces the functions and re-adds these columns.
ALTER TABLE public.archive_messages
    ADD COLUMN recall_call boolean NOT NULL
        GENERATED ALWAYS AS (kind = 'assistant' AND org_is_recall_call(command, tool_name)) STORED,
    ADD COLUMN remember_call boolean NOT NULL
        GENERATED ALWAYS AS (kind = 'assistant' AND org_is_remember_call(command, tool_name)) STORED;
-- The sessions the "hits later quoted" rule reads, and the calls the usage queries count.
CREATE INDEX archive_messages_memory_calls ON public.archive_messages (session_id)
    WHERE recall_call OR remember_call;

-- EXECUTE stays granted to PUBLIC (the default): the functions read no table and return
-- only what their two arguments already say, so any role may call them, as psql users of
-- the README's usage queries do.
