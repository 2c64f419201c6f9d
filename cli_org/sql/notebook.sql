-- name: agent_exists
SELECT EXISTS (SELECT 1 FROM org_agents WHERE name = %(agent)s) AS found,
       org_notebook_readable(%(agent)s) AS readable;

-- name: lock
-- Serialises this agent's notebook writes to the end of the transaction (migration 0013).
SELECT org_notebook_lock();

-- name: columns
id, agent, store, body, version, created_at, changed_at, changed_by

-- name: live
-- The live entries of one agent's store, oldest first, as row-level security shows them.
SELECT {notebook.columns} FROM notebook_entries
WHERE agent = %(agent)s AND store = %(store)s AND removed_at IS NULL
ORDER BY id;

-- name: insert
INSERT INTO notebook_entries (store, body) VALUES (%(store)s, %(body)s) RETURNING id;

-- name: replace
UPDATE notebook_entries SET body = %(body)s WHERE id = %(id)s AND removed_at IS NULL RETURNING id;

-- name: remove
UPDATE notebook_entries SET removed_at = now() WHERE id = %(id)s AND removed_at IS NULL RETURNING id;

-- name: history
SELECT entry_id, version, agent, store, action, body, at, by FROM notebook_versions
WHERE agent = %(agent)s AND (%(store)s::text IS NULL OR store = %(store)s)
ORDER BY at, entry_id, version;

-- name: mine
-- The calling agent's own live entries, for the [memory] recall arm (an owner or lead
-- reads others' notebooks, but recall answers from the caller's own). A fragment, included
-- by `recall.inputs_columns`.
SELECT store, id, body FROM notebook_entries
WHERE agent = org_me() AND removed_at IS NULL

-- name: history_page
-- One page of an agent's versions, newest first (index notebook_versions_agent), each with
-- the entry's version before it (by the key: entry_id, version - 1) for its diff.
SELECT v.entry_id, v.version, v.store, v.action, v.body, v.at, v.by, p.body AS before
FROM notebook_versions v
LEFT JOIN notebook_versions p ON p.entry_id = v.entry_id AND p.version = v.version - 1
WHERE v.agent = %(agent)s AND (%(store)s::text IS NULL OR v.store = %(store)s)
ORDER BY v.at DESC, v.entry_id DESC, v.version DESC
LIMIT %(limit)s OFFSET %(offset)s;
