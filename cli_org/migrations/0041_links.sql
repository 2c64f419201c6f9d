-- Typed links between facts (issue 36): FROM depends-on / explains / confirms / contradicts TO.
-- Supersession stays where it is (memory_facts.supersedes). A link is a row with its author and
-- time; unlinking (or dismissing a contradiction) marks it removed, and nothing is deleted.
-- A `confirms` link with no FROM fact is an agent's own confirmation: it wrote the same fact in
-- other words, and `remember` recorded that instead of a second row (its words in `reason`).
-- Functions, policies, grants and triggers: repeatable/links.sql.
CREATE TABLE public.memory_links (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_id         bigint REFERENCES public.memory_facts (id),
    kind            text NOT NULL CHECK (kind IN ('depends-on', 'explains', 'confirms', 'contradicts')),
    to_id           bigint NOT NULL REFERENCES public.memory_facts (id),
    author          text NOT NULL DEFAULT org_me() REFERENCES public.org_agents (name),
    reason          text,
    via             text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    removed_by      text REFERENCES public.org_agents (name),
    removed_at      timestamptz,
    removed_reason  text,
    removed_via     text,
    CHECK ((removed_at IS NULL) = (removed_by IS NULL)),
    CHECK (from_id IS NOT NULL OR kind = 'confirms'),
    CHECK (from_id <> to_id)
);
-- One live link of a kind between two facts (an agent's own confirmation: one per agent).
CREATE UNIQUE INDEX memory_links_live
    ON public.memory_links (to_id, kind, coalesce(from_id, 0), (CASE WHEN from_id IS NULL THEN author ELSE '' END))
    WHERE removed_at IS NULL;
CREATE INDEX memory_links_from ON public.memory_links (from_id) WHERE removed_at IS NULL;
CREATE INDEX memory_links_created ON public.memory_links (created_at);

ALTER TABLE public.memory_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.memory_links FORCE ROW LEVEL SECURITY;
REVOKE ALL ON public.memory_links FROM PUBLIC;
DO $$
BEGIN
    -- Members read (the policy says which rows) and insert as themselves; removing goes
    -- through org_unlink (repeatable/links.sql).
    EXECUTE format('GRANT SELECT, INSERT (from_id, kind, to_id, author, reason) ON public.memory_links TO %I',
                   org_member_role());
END $$;
