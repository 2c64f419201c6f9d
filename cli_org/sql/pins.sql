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
