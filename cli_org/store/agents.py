"""Agents: each one a PostgreSQL role in the database's member group."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from psycopg import sql as pgsql

from ..checks.rules import AGENT_NAME
from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied, InputError, NotFound
from ..local.files import read_file
from ..local.project import MEMORY_DIR, memory_dir
from .facts import Fact  # at run time: the web API reads AgentDetail's fields from these names
from .notebook import Notebook


@dataclass
class Agent:
    name: str
    kind: str
    team_lead: str | None
    is_owner: bool
    role_name: str
    created_at: datetime


def let_the_admin_become(conn: Conn, role: str) -> None:
    """Inside the caller's transaction (`add_agent`, and `import` for an agent it creates)."""
    if not first(conn, sql("agents.admin_may_become"), {"role": role})["yes"]:
        # A team server's administrator is no superuser (docs/operations.md, Team server): to act as
        # an agent (`--as`) it must be a member of the agent's role, as PostgreSQL
        # requires for SET ROLE. It gains nothing it lacked: with CREATEROLE it could
        # already reset the role's password.
        conn.execute(pgsql.SQL("GRANT {} TO CURRENT_USER").format(pgsql.Identifier(role)))


def check_agent_role(conn: Conn, role: str, name: str) -> None:
    """Refuse a role no agent may have: the member group itself (agent `member` of database
    `org` is role org_member, the group; granting it to itself was a raw "is a member of role"
    error), or the connected admin's own role."""
    group = first(conn, sql("agents.member_role"))["name"]
    if role == group:
        raise InputError(f"agent {name!r} would be role {role!r}, the member group itself; choose another name")
    if role == conn.info.user or role == first(conn, "SELECT current_user AS me")["me"]:
        raise InputError(f"agent {name!r} would be role {role!r}, the admin's own; choose another name or role")


def role_for(conn: Conn, name: str) -> str:
    """The default role of an agent: the database name, then the agent name."""
    return f"{conn.info.dbname}_{name}"


def check_password(password: str, where: str) -> str:
    """A login password as given (from `where`), or InputError: not empty, and no line break
    (a prompt, a .pgpass line or a connection string cannot carry one)."""
    if password == "":
        raise InputError(f"the password from {where} is empty")
    if "\n" in password or "\r" in password:
        raise InputError(f"the password from {where} holds a line break; a password is one line")
    return password


@owns_transaction
def add_agent(
    conn: Conn,
    name: str,
    *,
    lead: str | None = None,
    owner: bool = False,
    person: bool = False,
    password: str | None = None,
    role: str | None = None,
) -> Agent:
    """Create the role and the agent row in one transaction (run as an admin)."""
    if password is not None:
        check_password(password, "the caller")
    if not AGENT_NAME.match(name):
        raise InputError(f"agent name {name!r}: use lowercase letters, digits, '_' or '-', starting with a letter")
    with translated(conn), conn.transaction():
        if conn.execute(sql("agents.get"), {"name": name}).fetchone():
            raise InputError(f"agent {name!r} already exists")
        if lead and not conn.execute(sql("agents.get"), {"name": lead}).fetchone():
            raise NotFound(f"unknown team lead {lead!r}")
        role = role or role_for(conn, name)
        check_agent_role(conn, role, name)
        exists = first(conn, sql("agents.role_exists"), {"role": role})["found"]
        if exists and password is not None:
            raise InputError(f"role {role!r} already exists; map it without --login")
        if not exists:
            login = pgsql.SQL("LOGIN PASSWORD {}").format(pgsql.Literal(password)) if password else pgsql.SQL("NOLOGIN")
            conn.execute(pgsql.SQL("CREATE ROLE {} {}").format(pgsql.Identifier(role), login))
        group = first(conn, sql("agents.member_role"))["name"]
        conn.execute(pgsql.SQL("GRANT {} TO {}").format(pgsql.Identifier(group), pgsql.Identifier(role)))
        let_the_admin_become(conn, role)
        conn.execute(
            sql("agents.insert"),
            {"name": name, "kind": "person" if person else "bot", "lead": lead, "owner": owner, "role": role},
        )
        return Agent(**first(conn, sql("agents.get"), {"name": name}))


@owns_transaction
def find_agent(conn: Conn, name: str) -> Agent | None:
    """The agent of that name, or None."""
    with translated(conn):
        row = conn.execute(sql("agents.get"), {"name": name}).fetchone()
        return Agent(**row) if row else None


@owns_transaction
def list_agents(conn: Conn) -> list[Agent]:
    with translated(conn):
        return [Agent(**row) for row in conn.execute(sql("agents.list"))]


# --- what the web page's Agents pages show --------------------------------------------------

RECENT_RECALLS = 20  # recall calls on an agent's page: the latest screenful
AGENT_FACTS = 20  # newest current facts on an agent's page; the Facts page pages through the rest
MEMORY_FILE_CHARS = 20_000  # of a bot memory file shown; a larger file is cut with a note (the
# memory arm reads lines, so a file past a few pages is already a problem to fix, not to show)


@dataclass
class AgentSummary:
    name: str
    kind: str
    team_lead: str | None
    is_owner: bool
    created_at: datetime
    facts_current: int
    facts_all: int
    notebook_readable: bool  # row-level security lets the caller read its notebook
    notebook_memory: int | None  # characters in use; None where the caller may not read it
    notebook_user: int | None
    recalls: int
    last_recall: datetime | None


@dataclass
class RecallEvent:
    id: int
    created_at: datetime
    project: str | None
    query: str
    arms: list[str]
    hits: int
    chars: int
    ms: int


@dataclass
class MemoryFile:
    path: str  # relative to the project root, as recall labels it
    chars: int  # of the whole file
    text: str  # at most MEMORY_FILE_CHARS of it
    cut: bool
    modified_at: datetime


@dataclass
class AgentDetail:
    agent: AgentSummary
    facts: list[Fact]  # the newest current facts it wrote (facts.Fact), at most AGENT_FACTS
    notebook: Notebook | None  # when the caller may read it
    notebook_refused: str | None  # why not, in one line
    memory_file: MemoryFile | None
    recalls: list[RecallEvent]


@owns_transaction
def agents_overview(conn: Conn) -> list[AgentSummary]:
    """Every agent with its facts written, notebook use (where readable) and recall calls."""
    with translated(conn):
        return [AgentSummary(**row) for row in conn.execute(sql("agents.overview"), {"name": None})]


def memory_file(root: Path, name: str) -> MemoryFile | None:
    """The bot memory file the [memory] arm reads for `name`: .agents/org/memory/<name>.md
    under the project root (docs/agents.md, "archive memory"), or None when there is none."""
    if not AGENT_NAME.match(name):  # a name that is no agent's never names a file
        return None
    path = memory_dir(root) / f"{name}.md"
    try:
        read = read_file(path, root=root)  # the memory arm's safe read: a regular file under the root
    except InputError:
        return None
    text = read.data.decode("utf-8", errors="replace")
    modified = datetime.fromtimestamp(read.stat.st_mtime, tz=UTC)
    shown = text[:MEMORY_FILE_CHARS]
    return MemoryFile(str(MEMORY_DIR / f"{name}.md"), len(text), shown, len(text) > len(shown), modified)


@owns_transaction
def agent_detail(
    conn: Conn,
    name: str,
    *,
    root: Path | None = None,
    recalls: int = RECENT_RECALLS,
) -> AgentDetail:
    """One agent for its page: its counts, newest current facts, its notebook (only where
    row-level security lets the caller read it; otherwise the reason), its memory file under
    `root` and its latest recall calls. NotFound for an unknown name. (Its session-start
    block is session/context.py's `build_context(..., agent=NAME)`, a layer above.)"""
    from . import notebook as nb
    from .facts import list_facts

    with translated(conn):
        row = conn.execute(sql("agents.overview"), {"name": name}).fetchone()
        if row is None:
            raise NotFound(f"no agent named {name!r}")
        summary = AgentSummary(**row)
        book, refused = None, None
        if summary.notebook_readable:
            try:
                book = nb.show(conn, agent=name)
            except AccessDenied as exc:  # a login role that is no agent: nobody's notebook
                refused = str(exc)
        else:
            refused = f"only {name}, its team lead or an owner may read its notebook"
        events = [
            RecallEvent(**r) for r in conn.execute(sql("agents.recent_recalls"), {"name": name, "limit": recalls})
        ]
        written = list_facts(conn, author=name, newest_first=True, limit=AGENT_FACTS)
    found = memory_file(root, name) if root is not None else None
    return AgentDetail(summary, written, book, refused, found, events)
