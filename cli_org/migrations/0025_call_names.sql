-- Which MCP tool call is cli-org's recall or remember, by the names harnesses really give
-- them (seen in whole sessions with the real clients, tests/test_client_*.py): Claude Code
-- `mcp__cli-org__org_recall`, Codex the function `org_recall` in the namespace
-- `mcp__cli_org` (its importer joins the two: cli_org/archive/codex.py), Hermes
-- `mcp__cli_org__org_recall` (older versions `mcp_cli_org_org_recall`). A bare `org_recall`
-- says nothing of the server it came from (any server may have a tool of that name), so it
-- no longer counts; the rest of migration 0022's rule is unchanged. The generated columns
-- are added again so that every archived message is judged by the new rule.
ALTER TABLE public.archive_messages DROP COLUMN recall_call, DROP COLUMN remember_call;

ALTER TABLE public.archive_messages
    ADD COLUMN recall_call boolean NOT NULL
        GENERATED ALWAYS AS (kind = 'assistant' AND org_is_recall_call(command, tool_name)) STORED,
    ADD COLUMN remember_call boolean NOT NULL
        GENERATED ALWAYS AS (kind = 'assistant' AND org_is_remember_call(command, tool_name)) STORED;
CREATE INDEX archive_messages_memory_calls ON public.archive_messages (session_id)
    WHERE recall_call OR remember_call;
