-- name: me
SELECT org_me() AS name, current_user AS role;

-- name: find_current
-- The agent's own current copy of a claim: another author's copy never counts (migration
-- 0008, claim squatting).
SELECT id FROM memory_facts
WHERE valid_to IS NULL
  AND author = org_me()
  AND subject = %(subject)s
  AND claim = %(claim)s
  AND project IS NOT DISTINCT FROM %(project)s;

-- name: same_scope
-- The agent's current facts that a new claim is compared with for near duplicates (the
-- tidy-up's rule, store/duplicates.py): the same author and project, and the subject in any case.
-- The library applies the rule's own subject key to these rows as well.
SELECT id, subject, claim, project FROM memory_facts
WHERE valid_to IS NULL
  AND author = org_me()
  AND lower(subject) = lower(%(subject)s)
  AND project IS NOT DISTINCT FROM %(project)s;

-- name: insert
INSERT INTO memory_facts (subject, claim, source, project, confidence, kind, via, source_hash)
VALUES (%(subject)s, %(claim)s, %(source)s, %(project)s, %(confidence)s, %(kind)s, %(via)s, %(source_hash)s)
RETURNING id;

-- name: supersede
SELECT org_supersede(%(old)s, %(new)s);

-- name: forget
SELECT org_forget(%(id)s, %(why)s);

-- name: columns
-- The columns of a fact as the library's Fact holds them (all but the search vector).
id, subject, claim, source, author, project, confidence, kind, via, valid_from, valid_to,
retired_by, retired_reason, supersedes, superseded_by, created_at

-- name: list_where
-- The filters of a fact list (every parameter NULL: no filter).
WHERE (%(all)s OR valid_to IS NULL)
  AND (%(subject)s::text IS NULL OR lower(subject) = lower(%(subject)s))
  AND (%(project)s::text IS NULL OR project = %(project)s)
  AND (%(author)s::text IS NULL OR author = %(author)s)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s)
  AND (%(text)s::text IS NULL
       OR strpos(lower(subject || ' ' || claim || ' ' || source), lower(%(text)s)) > 0)

-- name: list
SELECT {facts.columns}
FROM memory_facts
{facts.list_where}
ORDER BY id
LIMIT %(limit)s OFFSET %(offset)s;

-- name: list_newest
-- The same, newest first: a page of the web's list walks the primary key backwards and
-- stops after the page, where one ORDER BY for both directions sorted every fact.
SELECT {facts.columns}
FROM memory_facts
{facts.list_where}
ORDER BY id DESC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: links
SELECT supersedes, superseded_by FROM memory_facts WHERE id = %(id)s;

-- name: get
SELECT {facts.columns}
FROM memory_facts
WHERE id = %(id)s;

-- name: restore
SELECT org_restore(%(id)s, %(why)s);

-- name: restores
SELECT retired_at, retired_by, retired_reason, superseded_by, restored_at, restored_by, why
FROM memory_restores WHERE fact_id = %(id)s ORDER BY restored_at, id;

-- name: warm_scan
-- The write scan of a fact's fields, run for its one-time cost (store/facts.py, warm_up_writes).
SELECT public.org_write_scan(ARRAY['subject', 'claim', 'source'],
                             ARRAY[%(subject)s, %(claim)s, %(source)s]::text[]) AS problem;

-- name: related_by_words
-- The current facts a new claim is judged against at write (store/sameness.py, issue 36), by
-- its words: of every author, any subject, in the claim's project or org-wide (an org-wide
-- claim: org-wide facts only), the %(limit)s sharing most words with it (any of them, ranked).
SELECT id, subject, claim, author, project, NULL::float8 AS similarity
FROM memory_facts
WHERE valid_to IS NULL
  AND (project IS NULL OR project = %(project)s)
  AND search @@ replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery
ORDER BY ts_rank(search, replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery) DESC, id DESC
LIMIT %(limit)s;
