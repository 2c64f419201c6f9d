-- Saved golden-set runs, so a change can be judged before and after.

CREATE TABLE eval_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][\w.:@+-]{0,63}$'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    git_commit  text,
    embedder    text,
    vault_files integer,
    vault_chunks integer,
    golden_file text NOT NULL,
    k           integer NOT NULL,
    project     text,
    summary     jsonb NOT NULL,
    cases       jsonb NOT NULL
);

REVOKE ALL ON eval_runs FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT, INSERT ON eval_runs TO %I', org_member_role());
END $$;
