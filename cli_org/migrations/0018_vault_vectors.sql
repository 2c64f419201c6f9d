-- requires: vector
-- The vault chunks' vectors (issue 14, team server): split out of 0002 so that a server
-- without pgvector can hold everything else. The runner creates the extension first, or
-- leaves this migration pending when it cannot (cli_org/db/migrate.py). Databases made
-- before the split already have the column and both indexes from 0002; IF NOT EXISTS keeps
-- them as they are, vectors included. Tables, grants and policies are 0002's: a new column
-- inherits the table's SELECT grant to members, and writes stay the administrator's.
ALTER TABLE public.vault_chunks ADD COLUMN IF NOT EXISTS embedding vector(384);
CREATE INDEX IF NOT EXISTS vault_chunks_unembedded ON public.vault_chunks (id) WHERE embedding IS NULL;
CREATE INDEX IF NOT EXISTS vault_chunks_embedding ON public.vault_chunks USING hnsw (embedding vector_cosine_ops);
