-- Functions whose arguments or result are a table's row type: they need the tables, so they
-- run after the numbered migrations (the other functions run before them).
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

CREATE OR REPLACE FUNCTION public.org_retire_check(me text, f memory_facts) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    lead text;
BEGIN
    IF f.valid_to IS NOT NULL THEN
        RAISE EXCEPTION 'fact % is already retired (by %: %)', f.id, f.retired_by, f.retired_reason
            USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, f.author) THEN
        SELECT team_lead INTO lead FROM org_agents WHERE name = f.author;
        RAISE EXCEPTION 'agent % may not retire fact %: only its author (%)%, or an owner may',
            me, f.id, f.author,
            CASE WHEN lead IS NULL THEN '' ELSE format(', their team lead (%s)', lead) END
            USING ERRCODE = '42501';
    END IF;
END $function$;

-- The pin a retirement ended: the trigger stamps it with the retirement's time and reason
-- (org_unpin_retired); `unpin` stamps 'unpinned'. Read by org_restore and, after a restore,
-- by the client with the retirement that memory_restores recorded (sql/pins.sql).
CREATE OR REPLACE FUNCTION public.org_retirement_pin(p_fact_id bigint, p_retired_at timestamp with time zone, p_reason text) RETURNS SETOF memory_pins
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT * FROM memory_pins
    WHERE fact_id = p_fact_id AND unpinned_at = p_retired_at
      AND unpin_reason = format('fact retired: %s', p_reason)
    ORDER BY id DESC LIMIT 1
$function$;
REVOKE ALL ON FUNCTION public.org_retirement_pin(bigint,timestamp with time zone,text) FROM PUBLIC;
