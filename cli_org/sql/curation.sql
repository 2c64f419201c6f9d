-- name: totals
-- The store in one pass over memory_facts (as the caller may read it): current, retired and
-- superseded facts; of the current ones, confirmed against inferred, the share tagged with a
-- project, and the claim length's median and maximum (length computed once per current row:
-- it counts characters, measured as the dearest part of this pass at 100k facts).
SELECT count(*) AS facts,
       count(*) FILTER (WHERE valid_to IS NULL) AS current,
       count(*) FILTER (WHERE valid_to IS NOT NULL AND superseded_by IS NULL) AS retired,
       count(*) FILTER (WHERE valid_to IS NOT NULL AND superseded_by IS NOT NULL) AS superseded,
       count(*) FILTER (WHERE valid_to IS NULL AND confidence = 'confirmed') AS confirmed,
       count(*) FILTER (WHERE valid_to IS NULL AND confidence = 'inferred') AS inferred,
       count(*) FILTER (WHERE valid_to IS NULL AND project IS NOT NULL) AS with_project,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY chars) FILTER (WHERE valid_to IS NULL) AS claim_median,
       max(chars) AS claim_max
FROM (SELECT valid_to, superseded_by, confidence, project,
             CASE WHEN valid_to IS NULL THEN length(claim) END AS chars
      FROM memory_facts) f;

-- name: by_author
-- Current facts per author, the most first (%(limit)s authors at most).
SELECT author AS name, count(*) AS facts FROM memory_facts WHERE valid_to IS NULL
GROUP BY author ORDER BY count(*) DESC, author LIMIT %(limit)s;

-- name: by_kind
SELECT kind AS name, count(*) AS facts FROM memory_facts WHERE valid_to IS NULL
GROUP BY kind ORDER BY count(*) DESC, kind;

-- name: duplicate_candidates
-- The current facts (the newest %(newest)s of them; NULL: all) that share their subject (in any
-- case) with another: the only facts tidy can propose to merge (store/tidy.py: one subject, of
-- any author, in one project or org-wide). Subjects are stored without outer space
-- (checks/write.py), so lower(subject) is the rule's subject key; the library applies the rule
-- to these rows itself, %(limit)s of them at most.
WITH considered AS (
    SELECT id, lower(subject) AS subject_key FROM memory_facts
    WHERE valid_to IS NULL ORDER BY created_at DESC, id DESC LIMIT %(newest)s
), shared AS (
    SELECT subject_key FROM considered GROUP BY subject_key HAVING count(*) > 1
)
SELECT {facts.columns}
FROM memory_facts
WHERE id IN (SELECT c.id FROM considered c JOIN shared s ON s.subject_key = c.subject_key)
ORDER BY id
LIMIT %(limit)s;
