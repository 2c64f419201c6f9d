"""Projects and their restrictions (migration 0035): an owner restricts a project to named
agents; its rows are then read, and written, only by them, their team leads and the owners.
The database enforces it (row-level security); this module says it and lists it."""

from __future__ import annotations

from dataclasses import dataclass

from ..checks.rules import check_agent_name
from ..checks.write import check_field
from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError

# Projects listed at most: a team has tens; the bound keeps a hostile store's answer short.
PROJECTS_LIMIT = 1000


@dataclass
class Project:
    project: str
    facts: int  # current facts
    todos: int  # open todos
    sessions: int  # archived sessions
    restricted_to: list[str] | None  # None: every member reads it


def _check_project(project: str) -> None:
    if not project:
        raise InputError("name the project")
    check_field("project", project)


@owns_transaction
def restrict(conn: Conn, project: str, agents: list[str]) -> list[str]:
    """Restrict `project` to `agents` (replacing the list before); owners only. Returns the list."""
    _check_project(project)
    names = sorted(set(agents))
    if not names:
        raise InputError(f"name at least one agent who may read project {project}")
    for name in names:
        check_agent_name(name)
    with translated(conn):
        try:
            first(conn, sql("projects.restrict"), {"project": project, "agents": names})
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
    return names


@owns_transaction
def lift(conn: Conn, project: str) -> int:
    """Lift a project's restriction; owners only. Returns how many agents it named (0: none)."""
    _check_project(project)
    with translated(conn):
        try:
            n = int(first(conn, sql("projects.restrict"), {"project": project, "agents": None})["n"])
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
    return n


@owns_transaction
def access(conn: Conn, project: str | None) -> list[str] | None:
    """Who `project` is restricted to, as the caller may read it; None: not restricted (or
    not the caller's to see, which comes to the same: it reads none of the project)."""
    if project is None:
        return None
    with translated(conn):
        try:
            rows = conn.execute(sql("projects.access"), {"project": project}).fetchall()
        finally:
            conn.rollback()
    return [r["agent"] for r in rows] or None


@owns_transaction
def list_projects(conn: Conn) -> list[Project]:
    """Every project the caller may read, with its counts and restriction."""
    with translated(conn):
        try:
            rows = conn.execute(sql("projects.list"), {"limit": PROJECTS_LIMIT}).fetchall()
        finally:
            conn.rollback()
    return [Project(**r) for r in rows]
