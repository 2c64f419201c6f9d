-- Indexes for the web page's lists of what agents keep (docs/web.md: Todos, Pins, Sessions,
-- Vault, an agent's notebook history). Each page reads one bounded page, newest first; these
-- let the planner walk the index in that order and stop after the page (the page-speed rule:
-- <= 300 ms at 100k facts and 1,000 archived sessions), instead of sorting every row.
-- No new table, so no new policy: row-level security of each table applies as before.

-- An agent's notebook history, newest first (notebook_versions' key is per entry).
CREATE INDEX notebook_versions_agent ON public.notebook_versions (agent, at DESC, entry_id DESC, version DESC);

-- Todos by author (the page's agent filter; the newest first comes from the key).
CREATE INDEX org_todos_author ON public.org_todos (author, id DESC);

-- Past pins, most recently unpinned first: 0032's memory_pins_unpinned, walked backwards.

-- The newest archived sessions first (archive_sessions_started is ascending, nulls last).
CREATE INDEX archive_sessions_newest ON public.archive_sessions (started_at DESC NULLS LAST, id DESC);

-- One session's messages in order, a page at a time (the key is (session_id, source_key)).
CREATE INDEX archive_messages_order ON public.archive_messages (session_id, position, part, id);
