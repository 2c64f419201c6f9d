-- name: approve
-- An owner approves a text the write scan refuses (migration 0037); returns its SHA-256.
SELECT public.org_approve_text(%(text)s, %(reason)s) AS sha256;

-- name: approved
SELECT public.org_write_approved(%(text)s) AS approved;

-- name: get
SELECT sha256, approved_by, approved_at, reason FROM public.org_write_approvals WHERE sha256 = %(sha256)s;

-- name: list
SELECT sha256, approved_by, approved_at, reason FROM public.org_write_approvals ORDER BY approved_at DESC, sha256
LIMIT %(limit)s;
