-- name: add
INSERT INTO org_todos (text, project) VALUES (%(text)s, %(project)s)
RETURNING id, text, project, author, created_at, done_by, done_at;

-- name: done
SELECT org_todo_done(%(id)s);

-- name: get
SELECT id, text, project, author, created_at, done_by, done_at FROM org_todos WHERE id = %(id)s;

-- name: list
-- Open items (with --all, done ones too); with a project, its items and the org-wide ones.
SELECT id, text, project, author, created_at, done_by, done_at
FROM org_todos
WHERE (%(all)s OR done_at IS NULL)
  AND (%(project)s::text IS NULL OR project IS NULL OR project = %(project)s)
ORDER BY project NULLS FIRST, id;

-- name: page
-- One page of todos, newest first: open, done or all; one author's; with a project, its
-- items and the org-wide ones (as `list`).
SELECT id, text, project, author, created_at, done_by, done_at
FROM org_todos
WHERE (%(state)s = 'all' OR (%(state)s = 'open') = (done_at IS NULL))
  AND (%(author)s::text IS NULL OR author = %(author)s)
  AND (%(project)s::text IS NULL OR project IS NULL OR project = %(project)s)
ORDER BY id DESC
LIMIT %(limit)s OFFSET %(offset)s;
