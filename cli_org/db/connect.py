"""Open a connection to the embedded server or to CLI_ORG_DATABASE_URL, as an agent.

Reads and writes (docs/operations.md, "Read replicas"): a face asks `connect(..., read=True)` for a
command that only reads (recall, search, context without --session, the MCP server's read
tools). With CLI_ORG_READ_URL set, that connection goes to the replica and is marked so the
library skips the writes a read makes as a side effect (`on_replica`); every other
connection, and so every write, goes to the primary: CLI_ORG_DATABASE_URL or the embedded
server. Without CLI_ORG_READ_URL, reads use the primary too.

Behind a connection pooler (docs/operations.md, "Connection pooling"): in transaction pooling
the pooler runs each transaction on whichever server connection is free, one that other
clients used before and will use next, so nothing may live in the session. A connection
notes on opening whether a pooler stands between it and the server (`pooled`): then psycopg
prepares nothing, an identity that needs `SET ROLE` is refused (each agent logs in as its
own role), and admin locks are held by a transaction (db/locks.py). A pooler that refuses
the startup `options` (PgBouncer 1.18) is reached without them; the bounds then come from
the role's or the database's own settings."""

from __future__ import annotations

import os
import select
from typing import Any

import psycopg
from psycopg import errors as pgerr
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import ConnStatus, TransactionStatus
from psycopg.rows import dict_row

from ..config import Settings
from ..errors import AccessDenied, ConfigError, DatabaseError, NotFound
from ..limits import CLIENT_CHECK_MS
from . import Conn, embedded, first
from .queries import sql
from .session import owns_transaction

# A long-lived process's reconnect gives up on a server that does not answer after this many
# seconds (libpq's connect_timeout, whole seconds, 2 at least), so a page or a tool call with
# the database out of reach answers within 3 s rather than the system's TCP timeout (about
# 2 minutes for an address that drops packets). A refused or missing server fails at once.
REACH_SECONDS = 2
# What a face says when the embedded server is down (the fix, not just the failure).
EMBEDDED_DOWN = "the embedded database server is not running: start it with `cli-org db start`"


def admin_conninfo(settings: Settings, dbname: str | None = None) -> str:
    """Where to connect as the administrator (the embedded superuser, or the URL's login)."""
    if settings.database_url:
        if dbname:
            return psycopg.conninfo.make_conninfo(settings.database_url, dbname=dbname)
        return settings.database_url
    info = embedded.ensure_running(settings.data_dir)
    return info.conninfo(dbname or settings.database_name)


# Set on a connection to the read replica; read by on_replica().
_REPLICA = "_cli_org_replica"


def uses_replica(settings: Settings, read: bool) -> bool:
    """Whether a connection asked for with `read` goes to CLI_ORG_READ_URL."""
    return bool(read and settings.read_url)


def conninfo_for(settings: Settings, read: bool = False) -> str:
    """The primary's admin conninfo, or for a read with CLI_ORG_READ_URL set, the replica's."""
    if uses_replica(settings, read):
        return settings.read_url or ""
    return admin_conninfo(settings)


# Set on a connection that reaches the server through a pooler; read by pooled().
_POOLED = "_cli_org_pooled"
# Set on a connection opened without the startup options, which its pooler refused.
_BARE = "_cli_org_no_options"
# What PgBouncer answers a client that sends startup `options`, which it does not forward.
_OPTIONS_REFUSED = "unsupported startup parameter: options"


def open_conn(conninfo: str, options: str, **kwargs: Any) -> Conn:
    """psycopg.connect with the server settings in `options`, or without them when a pooler
    refuses that startup parameter (then `carries_options` is false)."""
    try:
        return psycopg.connect(conninfo, options=options, **kwargs)
    except psycopg.OperationalError as exc:
        if _OPTIONS_REFUSED not in str(exc):
            raise
    conn = psycopg.connect(conninfo, **kwargs)
    setattr(conn, _BARE, True)
    return conn


def carries_options(conn: Conn) -> bool:
    return not getattr(conn, _BARE, False)


def note_pooler(conn: Conn, server_pid: int) -> None:
    """The pooler rule: a pooler answers the client's startup with a backend key of its own,
    so the pid the client was given is not the server process running its statements. Behind
    one, psycopg's automatic preparing (after five runs of a statement, under a name that
    lives on one server connection) is off: the next run may land on another server
    connection, where that name is missing or another client's."""
    if server_pid != conn.info.backend_pid:
        setattr(conn, _POOLED, True)
        conn.prepare_threshold = None


def pooled(conn: Conn) -> bool:
    """Whether `conn` reaches its server through a pooler (see the module's doc)."""
    return getattr(conn, _POOLED, False)


def detect_pooler(conn: Conn) -> None:
    """Ask the server for its pid and note a pooler; leaves the connection idle."""
    note_pooler(conn, first(conn, sql("agents.server_pid"))["pid"])
    if not conn.autocommit:
        conn.rollback()


def mark_replica(conn: Conn) -> None:
    setattr(conn, _REPLICA, True)


def on_replica(conn: Conn | None) -> bool:
    """Whether `conn` reads from CLI_ORG_READ_URL: a read-only server, where the library
    skips a read's side writes (the recall log, lazy fact vectors) and the face does them
    on the primary."""
    return conn is not None and getattr(conn, _REPLICA, False)


def connect(
    settings: Settings,
    agent: str | None = None,
    *,
    autocommit: bool = False,
    bounded: bool = True,
    read: bool = False,
    start: bool = True,
) -> Conn:
    """A connection whose current role is the agent's, so row-level security applies.

    With no agent named, the login role is the identity (on a shared server, each agent
    logs in as its own role; on a replica too, since roles replicate). Every statement is
    bounded by settings.statement_timeout unless `bounded` is false (long admin jobs), and
    the server stops a query whose client went away either way (limits.py). `read` sends
    the connection to CLI_ORG_READ_URL when that is set (see the module's doc).

    `start=False` is a long-lived process reconnecting (db/pool.py): an embedded server that
    is not running is not started (whoever stopped it meant it; the error names the command
    that starts it), and a server that does not answer fails within REACH_SECONDS.
    """
    replica = uses_replica(settings, read)
    where = conninfo_for(settings, read) if start else _running_conninfo(settings, read)
    wait = settings.connect_timeout if start else REACH_SECONDS
    if wait is not None and not _sets_connect_timeout(where):
        where = psycopg.conninfo.make_conninfo(where, connect_timeout=wait)
    try:
        conn = open_conn(
            where,
            server_options(settings, bounded, read=read),
            row_factory=dict_row,
            autocommit=autocommit,
        )
    except psycopg.OperationalError as exc:
        raise connect_error(settings, exc, read=replica) from None
    if replica:
        mark_replica(conn)
    try:
        if agent:
            become(conn, agent)
        elif settings.database_url or replica:  # the embedded server is reached directly
            detect_pooler(conn)
        if replica and not agent:
            _same_login_as_primary(conn, settings)
    except BaseException:
        conn.close()
        raise
    return conn


def _running_conninfo(settings: Settings, read: bool) -> str:
    """conninfo_for, without starting the embedded server: refused, with the fix, when it is
    not running (read afresh each time, so a server moved to another port is found)."""
    if settings.database_url or uses_replica(settings, read):
        return conninfo_for(settings, read)
    info = embedded.running(settings.data_dir)
    if info is None:
        raise DatabaseError(EMBEDDED_DOWN)
    return info.conninfo(settings.database_name)


def _sets_connect_timeout(conninfo: str) -> bool:
    """Whether the user chose a connect timeout (in the URL or PGCONNECT_TIMEOUT): theirs holds."""
    return "PGCONNECT_TIMEOUT" in os.environ or "connect_timeout" in conninfo_to_dict(conninfo)


def alive(conn: Conn) -> bool:
    """Whether an idle connection still reaches its server, checked without a round trip on
    the hot path: a server that stops, crashes or ends the session (a restart, an admin's
    pg_terminate_backend) sends its last words or closes the socket, so the socket has
    something to read; a healthy idle connection has nothing. Only then is a round trip
    made, which tells a goodbye from a stray message. (A server cut off by the network says
    nothing: the call fails with "lost the database", and the next one reconnects.)"""
    if conn.closed or conn.broken or conn.pgconn.status != ConnStatus.OK:
        return False
    if conn.pgconn.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
        if not poller.poll(0):
            return True
        autocommit = conn.autocommit
        conn.autocommit = True
        try:
            conn.execute("")
        finally:
            conn.autocommit = autocommit
    except (psycopg.Error, OSError, ValueError):
        return False
    return True


def primary_login(settings: Settings) -> str:
    """The role the primary's connection logs in as: the URL's user (libpq's default when
    it names none), or the embedded server's superuser."""
    if not settings.database_url:
        return embedded.SUPERUSER
    from psycopg import pq

    user = conninfo_to_dict(settings.database_url).get("user")
    if not user:
        defaults = {o.keyword: o.val for o in pq.Conninfo.get_defaults()}
        user = (defaults.get(b"user") or b"").decode()
    return str(user)


def _same_login_as_primary(conn: Conn, settings: Settings) -> None:
    """With no agent named, the login is the identity, so a read URL
    that logs in as another role would read (notebooks, private notes) as that role. The
    replica's current user must be the primary's login; with an agent, become() makes both
    that agent."""
    row = conn.execute(sql("agents.current_login")).fetchone()
    if not conn.autocommit:
        conn.rollback()
    expected = primary_login(settings)
    if row is None or row["me"] != expected:
        raise ConfigError(
            f"CLI_ORG_READ_URL logs in as {row['me'] if row else '?'!r}, not as {expected!r} like "
            "CLI_ORG_DATABASE_URL: a read replica must be reached as the same role"
        )


def server_options(settings: Settings, bounded: bool, *, read: bool = False) -> str:
    """Server settings for the connection, after any the URL itself carries."""
    url = settings.read_url if uses_replica(settings, read) else settings.database_url
    name = "CLI_ORG_READ_URL" if uses_replica(settings, read) else "CLI_ORG_DATABASE_URL"
    try:
        own = conninfo_to_dict(url).get("options", "") if url else ""
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"{name} is not a valid connection string: {exc}") from None
    ours = f"-c client_connection_check_interval={CLIENT_CHECK_MS}"
    if bounded:
        ours += f" -c statement_timeout={round(settings.statement_timeout * 1000)}"
    return f"{own} {ours}".strip()


def become(conn: Conn, agent: str) -> None:
    """SET ROLE to the agent's role; PostgreSQL refuses if the login may not become it.
    An agent logged in as itself needs none. Behind a pooler a SET ROLE would stay on the
    server connection after this transaction, acting for the pooler's next client while this
    client's next transaction ran as the login: refused (the module's doc)."""
    try:
        row = conn.execute(sql("agents.become"), {"name": agent}).fetchone()
    except pgerr.UndefinedTable:
        raise ConfigError("the database is not initialised; run `cli-org init`") from None
    if row is None:
        raise NotFound(f"unknown agent {agent!r}; see `cli-org agents list`")
    note_pooler(conn, row["pid"])
    if row["role_name"] == row["login"] == row["acting"]:  # logged in as the agent: nothing to set
        if not conn.autocommit:
            conn.commit()
        return
    if pooled(conn):
        raise ConfigError(
            f"behind a connection pooler each agent logs in as its own role: login {row['login']} may not "
            f"act as agent {agent!r} by SET ROLE (the pooler would hand that role to its next client); "
            "see docs/operations.md, Connection pooling"
        )
    try:
        conn.execute(pgsql.SQL("SET ROLE {}").format(pgsql.Identifier(row["role_name"])))
    except pgerr.InsufficientPrivilege:
        raise DatabaseError(
            f"this login may not act as agent {agent!r}; on a shared server each agent logs in as itself"
        ) from None
    if not conn.autocommit:
        conn.commit()


@owns_transaction
def current_agent(conn: Conn) -> str:
    """The agent the connection acts as (org_me(): its login role, or the role `become` set);
    refused, with what to do, for a role that is no agent."""
    me = first(conn, sql("facts.me"))
    if me["name"] is None:
        raise AccessDenied(f"role {me['role']} is not a cli-org agent: set ORG_AGENT or pass --as NAME")
    return str(me["name"])


# libpq's words for a server that is not there (refused, silent, unknown, or its socket gone),
# as against one that answered and said no (a password, a missing database).
_UNREACHABLE = (
    "Connection refused",
    "timeout expired",
    "No route to host",
    "Network is unreachable",
    "could not translate host name",
    "No such file or directory",
)


def connect_error(settings: Settings, exc: Exception, *, read: bool = False) -> Exception:
    """One line for a failed connection that names what fixes it: for an unreachable server,
    where it was looked for (host and port, never the URL: it may hold a password)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "does not exist" in first and "database" in first:
        return ConfigError(f"{first}; run `cli-org init`")
    unreachable = any(words in first for words in _UNREACHABLE)
    if not read and not settings.database_url:
        return DatabaseError(
            f"{EMBEDDED_DOWN} ({first})" if unreachable else f"cannot connect to the embedded server: {first}"
        )
    name = "the read replica (CLI_ORG_READ_URL)" if read else "CLI_ORG_DATABASE_URL"
    if not unreachable:
        return DatabaseError(f"cannot connect to {name}: {first}")
    url = (settings.read_url if read else settings.database_url) or ""
    params = conninfo_to_dict(url)
    reason = first.rsplit("failed: ", 1)[-1]
    return DatabaseError(
        f"cannot connect to {name}: the server at {params.get('host') or 'localhost'}:{params.get('port') or 5432} "
        f"is unreachable ({reason}); start it, or correct the URL"
    )
