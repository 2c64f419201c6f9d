-- Proposals (migration 0040; issue 35): who reads them, the write checks on what they carry,
-- and the two ways a pending one is decided. Their functions, grants, policies and trigger
-- all live here.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

-- Who may decide a proposal of `p_agent`: that agent, its team lead or an owner (the rule of
-- forget, org_may_retire); one that belongs to no agent yet, an owner. The administrator (the
-- login role, which imports) reads them all.
CREATE OR REPLACE FUNCTION public.org_proposal_decider(p_agent text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $function$
    SELECT CASE WHEN p_agent IS NULL THEN public.org_is_owner()
                ELSE coalesce(public.org_may_retire(public.org_caller(), p_agent), false) END
$function$;
DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_proposal_decider(text) TO %I', public.org_member_role());
END $$;

-- What a proposal carries passes the write checks of facts (a secret in a transcript never
-- becomes a proposal), here as for a todo (org_todo_checks).
CREATE OR REPLACE FUNCTION public.org_proposal_checks() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    problem text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.claim IS NOT DISTINCT FROM OLD.claim AND NEW.subject IS NOT DISTINCT FROM OLD.subject
       AND NEW.project IS NOT DISTINCT FROM OLD.project AND NEW.reason IS NOT DISTINCT FROM OLD.reason THEN
        RETURN NEW;
    END IF;
    problem := coalesce(public.org_write_problem('subject', NEW.subject, false),
                        public.org_write_problem('claim', NEW.claim, false),
                        public.org_write_problem('project', NEW.project, false),
                        public.org_write_problem('reason', NEW.reason, false),
                        public.org_write_scan(ARRAY['subject', 'claim'], ARRAY[NEW.subject, NEW.claim]));
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END $function$;
DROP TRIGGER IF EXISTS memory_proposals_write_checks ON public.memory_proposals;
CREATE TRIGGER memory_proposals_write_checks BEFORE INSERT OR UPDATE ON public.memory_proposals
    FOR EACH ROW EXECUTE FUNCTION org_proposal_checks();

-- The pending-or-not proposal `p_id`, locked, for the caller to decide: "no proposal" where
-- the caller may not read it (its project is restricted), refused where it may not decide it.
-- Called by the two definer functions below, as their owner; members may not call it.
CREATE OR REPLACE FUNCTION public.org_proposal_to_decide(p_id bigint) RETURNS public.memory_proposals
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    p memory_proposals;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO p FROM memory_proposals
    WHERE id = p_id AND org_project_readable(project) AND org_proposal_decider(agent) FOR UPDATE;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM memory_proposals WHERE id = p_id AND org_project_readable(project)) THEN
            RAISE EXCEPTION 'agent % may not decide proposal %: only the agent whose session it was, their team lead, or an owner may',
                me, p_id USING ERRCODE = '42501';
        END IF;
        RAISE EXCEPTION 'no proposal with id %', p_id USING ERRCODE = 'P0002';
    END IF;
    RETURN p;
END $function$;
REVOKE ALL ON FUNCTION public.org_proposal_to_decide(bigint) FROM PUBLIC;

-- Accept: the proposal becomes a fact whose author is the agent whose session it was (for
-- one that belongs to nobody, p_agent, named by an owner), with the claim and subject as
-- given (an edit) or as proposed, and a source naming the session and the message (a path of
-- the form sessions/HARNESS/SESSION/MESSAGE, which the source rule takes). Returns
-- the fact's id; the same claim already current for that author is that fact.
CREATE OR REPLACE FUNCTION public.org_proposal_accept(p_id bigint, p_agent text, p_subject text, p_claim text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    p memory_proposals;
    s archive_sessions;
    v_author text;
    fact bigint;
BEGIN
    p := org_proposal_to_decide(p_id);
    IF p.state <> 'pending' THEN
        RAISE EXCEPTION '%', format('proposal %s was already %s%s', p_id, p.state,
            CASE WHEN p.fact_id IS NULL THEN '' ELSE format(' as fact #%s', p.fact_id) END) USING ERRCODE = '55000';
    END IF;
    IF p.agent IS NOT NULL AND p_agent IS NOT NULL AND p_agent <> p.agent THEN
        RAISE EXCEPTION 'proposal % is %''s (its session was); it cannot become another agent''s fact', p_id, p.agent
            USING ERRCODE = '22023';
    END IF;
    v_author := coalesce(p.agent, p_agent);
    IF v_author IS NULL THEN
        RAISE EXCEPTION 'proposal % belongs to no agent yet: name the agent whose fact it becomes', p_id
            USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM org_agents WHERE name = v_author) THEN
        RAISE EXCEPTION 'no agent named %', v_author USING ERRCODE = 'P0002';
    END IF;
    SELECT * INTO s FROM archive_sessions WHERE id = p.session_id;
    SELECT id INTO fact FROM memory_facts
    WHERE valid_to IS NULL AND memory_facts.author = v_author AND subject = coalesce(p_subject, p.subject)
      AND md5(claim) = md5(coalesce(p_claim, p.claim)) AND coalesce(project, '') = coalesce(p.project, '');
    IF fact IS NULL THEN
        INSERT INTO memory_facts (subject, claim, source, project, confidence, kind, author)
        VALUES (coalesce(p_subject, p.subject), coalesce(p_claim, p.claim),
                left(format('sessions/%s/%s/%s', s.harness, regexp_replace(s.external_id, '[^A-Za-z0-9_@+.-]', '-', 'g'),
                            regexp_replace(p.message_key, '[^A-Za-z0-9_@+.-]', '-', 'g')), 500),
                p.project, 'confirmed', p.kind, v_author)
        RETURNING id INTO fact;
    END IF;
    UPDATE memory_proposals SET state = 'accepted', fact_id = fact, decided_by = me, decided_at = now()
    WHERE id = p_id;
    RETURN fact;
END $function$;
REVOKE ALL ON FUNCTION public.org_proposal_accept(bigint, text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.org_proposal_reject(p_id bigint, p_reason text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $function$
DECLARE
    me text := org_caller();
    p memory_proposals;
BEGIN
    p := org_proposal_to_decide(p_id);
    IF p.state <> 'pending' THEN
        RAISE EXCEPTION 'proposal % was already %', p_id, p.state USING ERRCODE = '55000';
    END IF;
    UPDATE memory_proposals
    SET state = 'rejected', decided_by = me, decided_at = now(), reason = nullif(btrim(p_reason), '')
    WHERE id = p_id;
    RETURN p_id;
END $function$;
REVOKE ALL ON FUNCTION public.org_proposal_reject(bigint, text) FROM PUBLIC;

DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_proposal_accept(bigint, text, text, text) TO %I',
                   public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_proposal_reject(bigint, text) TO %I', public.org_member_role());
END $$;

-- Members read the proposals they may decide (restricted projects narrow it further:
-- org_project_policies_sync); the import writes as the administrator.
DROP POLICY IF EXISTS proposals_read ON public.memory_proposals;
CREATE POLICY proposals_read ON public.memory_proposals FOR SELECT USING (org_proposal_decider(agent));
DROP POLICY IF EXISTS proposals_import ON public.memory_proposals;
CREATE POLICY proposals_import ON public.memory_proposals FOR ALL
    USING ((SELECT org_is_admin())) WITH CHECK ((SELECT org_is_admin()));
SELECT public.org_project_policies_sync(true);
