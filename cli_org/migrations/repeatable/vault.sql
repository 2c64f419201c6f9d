-- runs before the numbered migrations
-- The vault's private notes: which paths are private and who may see them.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

-- The private notes the caller may not see: none for owners, every one for other members.
-- A definer function, because the member's own view of vault_files already hides them.
CREATE OR REPLACE FUNCTION public.org_hidden_files() RETURNS bigint[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT CASE WHEN org_is_owner() THEN '{}'::bigint[]
                ELSE coalesce((SELECT array_agg(id) FROM vault_files WHERE private), '{}') END
$function$;
REVOKE ALL ON FUNCTION public.org_hidden_files() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_is_owner() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT coalesce((SELECT is_owner FROM org_agents WHERE name = org_caller()), false)
$function$;
REVOKE ALL ON FUNCTION public.org_is_owner() FROM PUBLIC;

-- The rule: today's scratch notes, money, anything that looks like an env file, and the
-- prefixes the last scan was given (ORG_RECALL_EXCLUDE).
CREATE OR REPLACE FUNCTION public.org_vault_private(p_path text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT p_path LIKE 'CURRENT/%' OR p_path LIKE 'Areas/Finance/%'
        OR p_path ~ '(^|/)\.env|\.env($|[./])'
        OR EXISTS (SELECT 1 FROM vault_private_prefixes x WHERE starts_with(p_path, x.prefix))
$function$;
