-- Owner-approved texts (issue 33): the way past a write scan's false positive. The scan
-- (cli_org/checks/, and its copy in repeatable/write_checks.sql) refuses secrets and
-- prompt-injection phrases; now and then an ordinary note reads like one. An owner approves
-- that exact text, with a reason (`cli-org checks allow TEXT --reason WHY`), and from then on
-- any agent's write of exactly that text skips the secret and injection scans, client and
-- database alike. The control and invisible-character checks are never skipped: a text
-- holding those is refused before the approval is looked at.
--
-- What is kept: the SHA-256 of the text (hex, of its UTF-8 bytes), who approved it, when and
-- why; not the text itself (a secret approved by mistake is not stored twice). Nothing is
-- deleted; an approval covers one exact text, so a changed character is scanned again.
--
-- Who may: only an owner (org_is_owner(), migration 0008), through org_approve_text(), a
-- definer function. Members read the approvals (who approved what, and why, is no secret)
-- but hold no write grant; row-level security is forced. The write checks ask
-- org_write_approved(text), which every member may call.

CREATE TABLE public.org_write_approvals (
    sha256      text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    approved_by text NOT NULL REFERENCES public.org_agents (name),
    approved_at timestamptz NOT NULL DEFAULT now(),
    reason      text NOT NULL CHECK (btrim(reason) <> '' AND length(reason) <= 500)
);
ALTER TABLE public.org_write_approvals ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.org_write_approvals FORCE ROW LEVEL SECURITY;
CREATE POLICY write_approvals_read ON public.org_write_approvals FOR SELECT USING (true);
-- Serves the definer function alone: members hold only SELECT.
CREATE POLICY write_approvals_write ON public.org_write_approvals FOR INSERT WITH CHECK (true);

-- The hash the approvals are keyed by (the client computes the same: hashlib.sha256).
CREATE FUNCTION public.org_text_sha256(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(t, 'UTF8')), 'hex')
$$;

-- Whether an owner approved exactly this text.
CREATE FUNCTION public.org_write_approved(t text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT t IS NOT NULL
       AND EXISTS (SELECT 1 FROM public.org_write_approvals WHERE sha256 = public.org_text_sha256(t))
$$;

-- An owner approves a text; returns its hash. Approving a text again keeps the first
-- approval (who, when, why) and returns the same hash.
CREATE FUNCTION public.org_approve_text(p_text text, p_reason text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    me text := public.org_caller();
    digest text;
    problem text;
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'the connected role is not a cli-org agent' USING ERRCODE = '42501';
    END IF;
    IF NOT public.org_is_owner() THEN
        RAISE EXCEPTION 'agent % may not approve a text for the write checks: only an owner may', me
            USING ERRCODE = '42501';
    END IF;
    IF p_text IS NULL OR btrim(p_text) = '' THEN
        RAISE EXCEPTION 'the text to approve is empty' USING ERRCODE = '22023';
    END IF;
    IF length(p_text) > 2200 THEN  -- the longest text a write holds (a notebook store)
        RAISE EXCEPTION 'the text is % characters; the limit is 2200', length(p_text) USING ERRCODE = '22023';
    END IF;
    -- Characters are never approved: a text holding control or invisible ones is refused.
    problem := public.org_write_problem('text', p_text, false);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    problem := public.org_field_problem('reason', 'reason', p_reason);
    IF problem IS NOT NULL OR p_reason IS NULL OR btrim(p_reason) = '' THEN
        RAISE EXCEPTION '%', coalesce(problem, 'a reason is required') USING ERRCODE = '23514';
    END IF;
    digest := public.org_text_sha256(p_text);
    INSERT INTO public.org_write_approvals (sha256, approved_by, reason)
    VALUES (digest, me, p_reason)
    ON CONFLICT (sha256) DO NOTHING;
    RETURN digest;
END $$;

REVOKE ALL ON public.org_write_approvals FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.org_approve_text(text, text), public.org_write_approved(text),
    public.org_text_sha256(text) FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.org_write_approvals TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_approve_text(text, text), public.org_write_approved(text),'
                   ' public.org_text_sha256(text) TO %I', public.org_member_role());
END $$;
