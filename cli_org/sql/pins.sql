-- name: pin
SELECT org_pin(%(id)s, %(project)s) AS pin_id;

-- name: unpin
SELECT org_unpin(%(id)s) AS pin_id;

-- name: get
SELECT p.id AS pin_id, p.fact_id, p.project, p.pinned_by, p.pinned_at, p.unpinned_by, p.unpinned_at,
       p.unpin_reason, f.subject, f.claim
FROM memory_pins p JOIN memory_facts f ON f.id = p.fact_id
WHERE p.id = %(pin_id)s;

-- name: list
-- The live pins (with --all every pin ever made), org-wide first, then by project.
SELECT p.id AS pin_id, p.fact_id, p.project, p.pinned_by, p.pinned_at, p.unpinned_by, p.unpinned_at,
       p.unpin_reason, f.subject, f.claim
FROM memory_pins p JOIN memory_facts f ON f.id = p.fact_id
WHERE (%(all)s OR p.unpinned_at IS NULL)
  AND (%(project)s::text IS NULL OR p.project IS NULL OR p.project = %(project)s)
ORDER BY p.project NULLS FIRST, p.pinned_at, p.id;

-- name: after_restore
-- The pin the fact's last retirement ended (org_retirement_pin, migration 0026), and whether
-- the restore brought it back; no row when that retirement ended no pin.
SELECT p.project, p.pinned_by,
       EXISTS (SELECT 1 FROM memory_pins l WHERE l.fact_id = p.fact_id AND l.unpinned_at IS NULL) AS back
FROM (SELECT retired_at, retired_reason FROM memory_restores WHERE fact_id = %(id)s ORDER BY id DESC LIMIT 1) r,
     org_retirement_pin(%(id)s, r.retired_at, r.retired_reason) p;

-- name: past
-- Pins no longer in force, most recently unpinned first (index memory_pins_unpinned, walked backwards), a page.
SELECT p.id AS pin_id, p.fact_id, p.project, p.pinned_by, p.pinned_at, p.unpinned_by, p.unpinned_at,
       p.unpin_reason, f.subject, f.claim
FROM memory_pins p JOIN memory_facts f ON f.id = p.fact_id
WHERE p.unpinned_at IS NOT NULL
  AND (%(project)s::text IS NULL OR p.project IS NULL OR p.project = %(project)s)
ORDER BY p.unpinned_at DESC, p.id DESC
LIMIT %(limit)s OFFSET %(offset)s;
