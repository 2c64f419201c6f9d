-- name: fact
-- Erase a fact's text everywhere (migration 0036): owners only, checked by the function.
SELECT org_erase_fact(%(id)s, %(why)s, %(also)s::text[]) AS places;

-- name: message
SELECT org_erase_message(%(session)s, %(position)s, %(why)s) AS places;

-- name: of_fact
-- A fact's erasure: who, when, through which harness, why.
SELECT erased_at, erased_by, erased_via, reason FROM memory_erasures WHERE fact_id = %(id)s;
