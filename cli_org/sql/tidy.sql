-- name: current
-- The current facts tidy judges: with a project, that project's and the org-wide ones (a
-- project fact may copy an org-wide one; tidy retires only the project's, store/tidy.py).
SELECT {facts.columns}, source_hash
FROM memory_facts
WHERE valid_to IS NULL AND (%(project)s::text IS NULL OR project = %(project)s OR project IS NULL)
ORDER BY id;

-- name: log
INSERT INTO memory_tidy_log (action, fact_id, kept_id, evidence)
VALUES (%(action)s, %(fact_id)s, %(kept_id)s, %(evidence)s)
RETURNING id;

-- name: current_newest
-- The newest %(newest)s current facts (the web page's bounded tidy), oldest first as `current`.
SELECT * FROM (
    SELECT {facts.columns}, source_hash
    FROM memory_facts
    WHERE valid_to IS NULL AND (%(project)s::text IS NULL OR project = %(project)s OR project IS NULL)
    ORDER BY created_at DESC, id DESC
    LIMIT %(newest)s
) recent ORDER BY id;

-- name: pins
-- The live pins (few: capped per scope, rules.PIN_CAP_ORG and PIN_CAP_PROJECT) and their scope.
SELECT fact_id, project FROM memory_pins WHERE unpinned_at IS NULL;

-- name: may_retire
-- Whether the caller may retire a fact of %(author)s (org_may_retire: it, its team lead, an owner).
SELECT org_may_retire(org_caller(), %(author)s) AS may;
