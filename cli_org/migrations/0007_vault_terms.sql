-- Document frequency per term, kept by the scan in the same transaction as the postings, so
-- a query reads it instead of counting a common term's postings every time.
CREATE TABLE vault_terms (
    term text PRIMARY KEY,
    df   integer NOT NULL CHECK (df >= 0)
);
INSERT INTO vault_terms (term, df) SELECT term, count(*) FROM vault_postings GROUP BY term;

DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON vault_terms TO %I', org_member_role());
END $$;
