-- name: totals
-- The store in one pass over memory_facts (as the caller may read it): current, retired and
-- superseded facts; of the current ones, confirmed against inferred, the share tagged with a
-- project, and the claim length's median and maximum.
SELECT count(*) AS facts,
       count(*) FILTER (WHERE valid_to IS NULL) AS current,
       count(*) FILTER (WHERE valid_to IS NOT NULL AND superseded_by IS NULL) AS retired,
       count(*) FILTER (WHERE valid_to IS NOT NULL AND superseded_by IS NOT NULL) AS superseded,
       count(*) FILTER (WHERE valid_to IS NULL AND confidence = 'confirmed') AS confirmed,
       count(*) FILTER (WHERE valid_to IS NULL AND confidence = 'inferred') AS inferred,
       count(*) FILTER (WHERE valid_to IS NULL AND project IS NOT NULL) AS with_project,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY length(claim)) FILTER (WHERE valid_to IS NULL) AS claim_median,
       max(length(claim)) FILTER (WHERE valid_to IS NULL) AS claim_max
FROM memory_facts;

-- name: by_author
-- Current facts per author, the most first (%(limit)s authors at most).
SELECT author AS name, count(*) AS facts FROM memory_facts WHERE valid_to IS NULL
GROUP BY author ORDER BY count(*) DESC, author LIMIT %(limit)s;

-- name: by_kind
SELECT kind AS name, count(*) AS facts FROM memory_facts WHERE valid_to IS NULL
GROUP BY kind ORDER BY count(*) DESC, kind;

-- name: duplicate_candidates
-- The current facts that share the near-duplicate rule's scope (store/duplicates.py: author,
-- subject without outer space and case, project) with at least one other: the only facts tidy
-- can propose to merge. The library applies the rule itself to these rows; %(limit)s bounds them.
WITH keyed AS (
    SELECT id, author, regexp_replace(lower(subject), '^\s+|\s+$', '', 'g') AS subject_key, project
    FROM memory_facts WHERE valid_to IS NULL
), shared AS (
    SELECT author, subject_key, project FROM keyed
    GROUP BY author, subject_key, project HAVING count(*) > 1
)
SELECT {facts.columns}
FROM memory_facts
WHERE id IN (SELECT k.id FROM keyed k JOIN shared s
             ON s.author = k.author AND s.subject_key = k.subject_key AND s.project IS NOT DISTINCT FROM k.project)
ORDER BY id
LIMIT %(limit)s;
