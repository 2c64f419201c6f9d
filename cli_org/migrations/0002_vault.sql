-- The vault index: files, links, tags, heading-aware chunks with full text, and note-level
-- term postings for BM25. The chunks' vectors need pgvector and come with 0018_vault_vectors
-- (databases made before that split got them here, and 0018 finds them in place).

CREATE TABLE vault_files (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    path        text NOT NULL UNIQUE,
    title       text NOT NULL,
    hash        text NOT NULL,
    size        bigint NOT NULL,
    mtime       double precision NOT NULL,
    frontmatter jsonb NOT NULL DEFAULT '{}',
    length      integer NOT NULL DEFAULT 0,  -- BM25 document length: indexed words, repeats counted
    scanned_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE vault_links (
    file_id     bigint NOT NULL REFERENCES vault_files (id) ON DELETE CASCADE,
    target      text NOT NULL,
    target_path text,  -- resolved vault path, when the target exists
    heading     text,
    alias       text,
    kind        text NOT NULL CHECK (kind IN ('wikilink', 'markdown'))
);
CREATE INDEX vault_links_file ON vault_links (file_id);
CREATE INDEX vault_links_target ON vault_links (target_path);

CREATE TABLE vault_tags (
    file_id bigint NOT NULL REFERENCES vault_files (id) ON DELETE CASCADE,
    tag     text NOT NULL,
    PRIMARY KEY (file_id, tag)
);
CREATE INDEX vault_tags_tag ON vault_tags (lower(tag));

CREATE TABLE vault_chunks (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    file_id     bigint NOT NULL REFERENCES vault_files (id) ON DELETE CASCADE,
    ord         integer NOT NULL,
    heading     text NOT NULL,
    content     text NOT NULL,
    hash        text NOT NULL,
    tsv         tsvector NOT NULL,
    embed_model text,
    UNIQUE (file_id, ord)
);
CREATE INDEX vault_chunks_tsv ON vault_chunks USING gin (tsv);

-- BM25 postings per note: a lexeme, the note, how often it occurs there, and the note's
-- length (kept here so scoring never joins).
CREATE TABLE vault_postings (
    term    text NOT NULL,
    file_id bigint NOT NULL REFERENCES vault_files (id) ON DELETE CASCADE,
    tf      integer NOT NULL,
    dl      integer NOT NULL,
    PRIMARY KEY (term, file_id) INCLUDE (tf, dl)
);
CREATE INDEX vault_postings_file ON vault_postings (file_id);

CREATE TABLE vault_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

DO $$
BEGIN
    EXECUTE format('GRANT SELECT ON vault_files, vault_links, vault_tags, vault_chunks, vault_postings,'
                   ' vault_meta TO %I', org_member_role());
END $$;
