"""Todos: open items per project (None: org-wide) with no expiry, never deleted.

Members add as themselves (row-level security); marking done goes through org_todo_done
(migration 0014): the author, the author's team lead or an owner. The write checks of facts
apply to the text, here and again in the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..checks.rules import MAX_TODO, check_agent_name, check_id
from ..checks.write import check_field, check_text, control_chars
from ..db import Conn, first
from ..db.connect import current_agent
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError, NotFound
from .activity import say_via


@dataclass
class Todo:
    id: int
    text: str
    project: str | None
    author: str
    created_at: datetime
    done_by: str | None
    done_at: datetime | None


def check_todo(text: str, project: str | None) -> str:
    """The text, stripped, or InputError saying what is wrong."""
    text = text.strip()
    if control_chars(text):
        check_text("text", text)  # says which characters
    if not text:
        raise InputError("the todo is empty")
    if len(text) > MAX_TODO:
        raise InputError(f"the todo is {len(text)} characters; the limit is {MAX_TODO}")
    check_field("project", project)
    check_text("text", text)
    return text


@owns_transaction
def add_todo(conn: Conn, text: str, project: str | None = None, *, via: str | None = None) -> Todo:
    text = check_todo(text, project)
    with translated(conn):
        current_agent(conn)
        say_via(conn, via)
        row = first(conn, sql("todos.add"), {"text": text, "project": project})
        conn.commit()
    return Todo(**row)


@owns_transaction
def done_todo(conn: Conn, todo_id: int, *, via: str | None = None) -> Todo:
    check_id(todo_id, "todo")
    with translated(conn):
        current_agent(conn)
        say_via(conn, via)
        conn.execute(sql("todos.done"), {"id": todo_id})
        row = conn.execute(sql("todos.get"), {"id": todo_id}).fetchone()
        conn.commit()
    if row is None:  # never: org_todo_done() found it
        raise NotFound(f"no todo with id {todo_id}")
    return Todo(**row)


STATES = ("open", "done", "all")  # which todos a page lists


@owns_transaction
def list_todos(
    conn: Conn,
    *,
    project: str | None = None,
    include_done: bool = False,
    author: str | None = None,
    state: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[Todo]:
    """Open items: org-wide ones first, then the project's (every project's without one).

    With `state` (open, done or all; it replaces include_done) or `author`, or a `limit`:
    one page of them, newest first (the web page's Todos, index org_todos_author / the key)."""
    if state is None and author is None and limit is None:
        with translated(conn):
            rows = conn.execute(sql("todos.list"), {"project": project, "all": include_done}).fetchall()
        return [Todo(**r) for r in rows]
    state = state or ("all" if include_done else "open")
    if state not in STATES:
        raise InputError(f"state is {', '.join(STATES)}, not {state!r}")
    if limit is not None and not 1 <= limit <= 1000:
        raise InputError(f"limit must be between 1 and 1000, not {limit}")
    check_field("project", project)
    check_agent_name(author)
    params = {"project": project, "author": author, "state": state, "limit": limit, "offset": max(offset, 0)}
    with translated(conn):
        rows = conn.execute(sql("todos.page"), params).fetchall()
    return [Todo(**r) for r in rows]
