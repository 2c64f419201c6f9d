-- name: delivered
-- The entry keys already delivered to the caller in a session (row-level security: its own).
SELECT hit_key FROM context_delivered WHERE session = %(session)s;

-- name: deliver
INSERT INTO context_delivered (session, hit_key) VALUES (%(session)s, %(key)s)
ON CONFLICT DO NOTHING;
