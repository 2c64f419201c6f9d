-- runs before the numbered migrations
-- The tool calls of archived sessions: which are recalls and which are remembers.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

CREATE OR REPLACE FUNCTION public.org_is_recall_call(p_command text, p_tool_name text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT p_tool_name IS NOT NULL
       AND (coalesce(p_command ~ '(^|[^[:alnum:]_.-])(cli-)?org[[:space:]]+recall([^[:alnum:]_-]|$)', false)
            OR p_tool_name ~ '^mcp__?cli[-_]org__?org_recall$')
$function$;

CREATE OR REPLACE FUNCTION public.org_is_remember_call(p_command text, p_tool_name text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT p_tool_name IS NOT NULL
       AND (coalesce(p_command ~ '(^|[^[:alnum:]_.-])(cli-)?org[[:space:]]+remember([^[:alnum:]_-]|$)', false)
            OR p_tool_name ~ '^mcp__?cli[-_]org__?org_remember$')
$function$;
