-- The demo's Hermes sessions, as the statements that make a Hermes state.db (the columns
-- the importer reads, cli_org/archive/hermes.py, in the shape of Hermes' own schema).
-- scripts/sample-sessions.py runs this into a fresh state.db in a temporary folder.
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (6);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    model TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    cwd TEXT,
    title TEXT,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    finish_reason TEXT,
    reasoning TEXT
);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
INSERT INTO sessions (id, source, model, started_at, ended_at, end_reason, message_count, tool_call_count, cwd, title) VALUES ('20261129_170000_ba1a87', 'cli', 'qwen3-coder', 1795971600.0, 1795971645.0, 'user_exit', 0, 3, '/srv/northwind/api', 'v0 route cleanup');
INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (1, '20261129_170000_ba1a87', 'user', 'We''re cleaning up the api routes. Decision from this morning''s sync: we keep the v1 routes until March, when the last wholesale partner moves to v2. In this cleanup only delete the unused internal /v0 endpoints.', 1795971600.0);
INSERT INTO messages (id, session_id, role, content, tool_calls, timestamp, finish_reason) VALUES (2, '20261129_170000_ba1a87', 'assistant', '', '[{"id": "call_341f88c740316715d7576036", "call_id": "call_341f88c740316715d7576036", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"grep -rn ''@router'' app/routes/v0 | wc -l\"}"}}]', 1795971609.0, 'tool_calls');
INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_name, timestamp) VALUES (3, '20261129_170000_ba1a87', 'tool', '{"output": "7", "exit_code": 0, "error": null}', 'call_341f88c740316715d7576036', 'terminal', 1795971609.0);
INSERT INTO messages (id, session_id, role, content, tool_calls, timestamp, finish_reason) VALUES (4, '20261129_170000_ba1a87', 'assistant', '', '[{"id": "call_3899ba3c628b7e3a7ebb3be1", "call_id": "call_3899ba3c628b7e3a7ebb3be1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"git rm -rq app/routes/v0 && pytest -q tests/routes\"}"}}]', 1795971618.0, 'tool_calls');
INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_name, timestamp) VALUES (5, '20261129_170000_ba1a87', 'tool', '{"output": "58 passed in 3.90s", "exit_code": 0, "error": null}', 'call_3899ba3c628b7e3a7ebb3be1', 'terminal', 1795971618.0);
INSERT INTO messages (id, session_id, role, content, tool_calls, timestamp, finish_reason) VALUES (6, '20261129_170000_ba1a87', 'assistant', '', '[{"id": "call_53642699218459e5958fd4c7", "call_id": "call_53642699218459e5958fd4c7", "type": "function", "function": {"name": "mcp__cli_org__org_remember", "arguments": "{\"subject\": \"v0 routes\", \"claim\": \"The internal /v0 endpoints were removed from ledger-api; internal callers use v1 or v2.\", \"source\": \"app/routes\", \"project\": \"api\", \"kind\": \"fact\"}"}}]', 1795971627.0, 'tool_calls');
INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_name, timestamp) VALUES (7, '20261129_170000_ba1a87', 'tool', '22', 'call_53642699218459e5958fd4c7', 'mcp__cli_org__org_remember', 1795971627.0);
INSERT INTO messages (id, session_id, role, content, timestamp, finish_reason) VALUES (8, '20261129_170000_ba1a87', 'assistant', 'Removed the seven internal /v0 endpoints (routes tests pass) and noted it as fact 22. The v1 routes are untouched.', 1795971636.0, 'stop');
UPDATE sessions SET message_count = 8 WHERE id = '20261129_170000_ba1a87';
INSERT INTO sessions (id, source, model, started_at, ended_at, end_reason, message_count, tool_call_count, cwd, title) VALUES ('20261130_002400_e031e7', 'cli', 'qwen3-coder', 1795998240.0, 1795998285.0, 'user_exit', 0, 1, '/srv/northwind/api', 'courier webhook');
INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (9, '20261130_002400_e031e7', 'user', 'Remember that the courier webhook retries a failed delivery for 24 hours, so every handler for it has to be idempotent.', 1795998240.0);
INSERT INTO messages (id, session_id, role, content, timestamp, finish_reason) VALUES (10, '20261130_002400_e031e7', 'assistant', 'Understood: courier webhook handlers must be idempotent, since a failed delivery is retried for 24 hours.', 1795998249.0, 'stop');
INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (11, '20261130_002400_e031e7', 'user', 'when are database backups taken?', 1795998258.0);
INSERT INTO messages (id, session_id, role, content, tool_calls, timestamp, finish_reason) VALUES (12, '20261130_002400_e031e7', 'assistant', '', '[{"id": "call_483b8754e621a97040a0bc86", "call_id": "call_483b8754e621a97040a0bc86", "type": "function", "function": {"name": "mcp__cli_org__org_recall", "arguments": "{\"question\": \"when are database backups taken\"}"}}]', 1795998267.0, 'tool_calls');
INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_name, timestamp) VALUES (13, '20261130_002400_e031e7', 'tool', '[vault] ops/backups.md # Schedule: a base backup every night and continuous WAL archiving in between', 'call_483b8754e621a97040a0bc86', 'mcp__cli_org__org_recall', 1795998267.0);
INSERT INTO messages (id, session_id, role, content, timestamp, finish_reason) VALUES (14, '20261130_002400_e031e7', 'assistant', 'A base backup runs every night, with continuous WAL archiving in between (ops/backups.md).', 1795998276.0, 'stop');
UPDATE sessions SET message_count = 6 WHERE id = '20261130_002400_e031e7';
INSERT INTO sessions (id, source, model, started_at, ended_at, end_reason, message_count, tool_call_count, cwd, title) VALUES ('20261130_153000_5edad9', 'cli', 'qwen3-coder', 1796052600.0, 1796052645.0, 'user_exit', 0, 2, '/srv/northwind/web', 'runner disk');
INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (15, '20261130_153000_5edad9', 'user', 'The storefront build is stuck on the runner, can you check its disk?', 1796052600.0);
INSERT INTO messages (id, session_id, role, content, tool_calls, timestamp, finish_reason) VALUES (16, '20261130_153000_5edad9', 'assistant', '', '[{"id": "call_6665eb78c8b21a0b77d17c94", "call_id": "call_6665eb78c8b21a0b77d17c94", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"df -h /var/lib/docker | tail -1\"}"}}]', 1796052609.0, 'tool_calls');
INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_name, timestamp) VALUES (17, '20261130_153000_5edad9', 'tool', '{"output": "/dev/sdb1  100G   96G  4.0G  96% /var/lib/docker", "exit_code": 0, "error": null}', 'call_6665eb78c8b21a0b77d17c94', 'terminal', 1796052609.0);
INSERT INTO messages (id, session_id, role, content, tool_calls, timestamp, finish_reason) VALUES (18, '20261130_153000_5edad9', 'assistant', '', '[{"id": "call_6f0b2c9652a0e0e93ca0a3ca", "call_id": "call_6f0b2c9652a0e0e93ca0a3ca", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"docker builder prune -f | tail -1\"}"}}]', 1796052618.0, 'tool_calls');
INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_name, timestamp) VALUES (19, '20261130_153000_5edad9', 'tool', '{"output": "Total reclaimed space: 18.2GB", "exit_code": 0, "error": null}', 'call_6f0b2c9652a0e0e93ca0a3ca', 'terminal', 1796052618.0);
INSERT INTO messages (id, session_id, role, content, timestamp, finish_reason) VALUES (20, '20261130_153000_5edad9', 'assistant', 'The runner''s docker disk was 96% full; pruning the build cache freed 18.2 GB. Restart the build when you''re ready.', 1796052627.0, 'stop');
INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (21, '20261130_153000_5edad9', 'user', 'thanks', 1796052636.0);
UPDATE sessions SET message_count = 7 WHERE id = '20261130_153000_5edad9';
