-- Typed links (migration 0041; issue 36): who reads them, who writes them, the checks on what
-- they carry, and unlinking. Their functions, grants, policies and triggers all live here.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

-- A link is read with the facts it joins: one whose fact the reader may not read (a restricted
-- project, 0035) is hidden with it, by the reader's own policy on memory_facts.
DROP POLICY IF EXISTS links_read ON public.memory_links;
CREATE POLICY links_read ON public.memory_links FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = to_id)
    AND (from_id IS NULL OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = from_id)));
-- A member links as itself, between facts it may read, and never writes a removed link.
DROP POLICY IF EXISTS links_insert_as_self ON public.memory_links;
CREATE POLICY links_insert_as_self ON public.memory_links FOR INSERT WITH CHECK (
    author = org_me() AND removed_at IS NULL
    AND EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = to_id)
    AND (from_id IS NULL OR EXISTS (SELECT 1 FROM public.memory_facts f WHERE f.id = from_id)));
-- The administrator writes links as their authors (an import, a restore) and removes them
-- inside org_unlink; on a team server it is no superuser, and forced security holds for it too.
DROP POLICY IF EXISTS links_admin ON public.memory_links;
CREATE POLICY links_admin ON public.memory_links FOR ALL
    USING ((SELECT org_is_admin())) WITH CHECK ((SELECT org_is_admin()));

-- What a link carries passes the field checks (its reasons are scanned like a fact's words),
-- and the harness of the transaction that made or removed it is stamped (activity.sql).
CREATE OR REPLACE FUNCTION public.org_link_stamp() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.via := coalesce(NEW.via, public.org_via());
    ELSIF OLD.removed_at IS NULL AND NEW.removed_at IS NOT NULL THEN
        NEW.removed_via := coalesce(NEW.removed_via, public.org_via());
    END IF;
    RETURN NEW;
END $function$;
REVOKE ALL ON FUNCTION public.org_link_stamp() FROM PUBLIC;
DROP TRIGGER IF EXISTS memory_links_via ON public.memory_links;
CREATE TRIGGER memory_links_via BEFORE INSERT OR UPDATE ON public.memory_links
    FOR EACH ROW EXECUTE FUNCTION org_link_stamp();
DROP TRIGGER IF EXISTS memory_links_field_checks ON public.memory_links;
CREATE TRIGGER memory_links_field_checks BEFORE INSERT OR UPDATE ON public.memory_links
    FOR EACH ROW EXECUTE FUNCTION org_field_checks('reason', 'reason', 'removed_reason', 'reason',
                                                    'via', 'via', 'removed_via', 'via');

-- Unlink (or dismiss a contradiction): the link's author, the author's team lead or an owner
-- may (the rule of forget, org_may_retire). The row stays, saying who removed it, when and why.
CREATE OR REPLACE FUNCTION public.org_unlink(p_id bigint, p_why text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    l memory_links;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO l FROM memory_links WHERE id = p_id FOR UPDATE;
    IF NOT FOUND
       OR NOT EXISTS (SELECT 1 FROM memory_facts f WHERE f.id = l.to_id AND org_project_readable(f.project))
       OR (l.from_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memory_facts f
                                                 WHERE f.id = l.from_id AND org_project_readable(f.project))) THEN
        RAISE EXCEPTION 'no link with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    IF l.removed_at IS NOT NULL THEN
        RAISE EXCEPTION 'link % was already removed by % at %', p_id, l.removed_by, l.removed_at
            USING ERRCODE = '55000';
    END IF;
    IF NOT org_may_retire(me, l.author) THEN
        RAISE EXCEPTION 'agent % may not remove link %: only its author (%), their team lead, or an owner may',
            me, p_id, l.author USING ERRCODE = '42501';
    END IF;
    UPDATE memory_links SET removed_at = now(), removed_by = me, removed_reason = p_why WHERE id = p_id;
    RETURN p_id;
END $function$;
REVOKE ALL ON FUNCTION public.org_unlink(bigint, text) FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_unlink(bigint, text) TO %I', public.org_member_role());
END $$;
