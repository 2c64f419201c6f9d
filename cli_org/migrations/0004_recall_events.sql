-- Every recall call, for adoption analytics: who asked what, what came back, how fast.

CREATE TABLE recall_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    agent       text DEFAULT org_me() REFERENCES org_agents (name),
    project     text,
    query       text NOT NULL,
    arms        text[] NOT NULL,      -- the arms that answered with at least one hit
    hits        integer NOT NULL,
    chars       integer NOT NULL,     -- characters of the text answer
    ms          integer NOT NULL
);
CREATE INDEX recall_events_created ON recall_events (created_at);

ALTER TABLE recall_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE recall_events FORCE ROW LEVEL SECURITY;

REVOKE ALL ON recall_events FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT SELECT, INSERT ON recall_events TO %I', org_member_role());
END $$;
