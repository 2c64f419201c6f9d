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

REVOKE ALL ON public.org_write_approvals FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON public.org_write_approvals TO %I', public.org_member_role());
END $$;
