"""Open a connection to the embedded server or to CLI_ORG_DATABASE_URL, as an agent."""

from __future__ import annotations

import psycopg
from psycopg import errors as pgerr
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from ..config import Settings
from ..errors import ConfigError, DatabaseError, NotFound
from ..limits import CLIENT_CHECK_MS
from . import Conn, embedded
from .queries import sql


def admin_conninfo(settings: Settings, dbname: str | None = None) -> str:
    """Where to connect as the administrator (the embedded superuser, or the URL's login)."""
    if settings.database_url:
        if dbname:
            return psycopg.conninfo.make_conninfo(settings.database_url, dbname=dbname)
        return settings.database_url
    info = embedded.ensure_running(settings.data_dir)
    return info.conninfo(dbname or settings.database_name)


def connect(
    settings: Settings, agent: str | None = None, *, autocommit: bool = False, bounded: bool = True
) -> Conn:
    """A connection whose current role is the agent's, so row-level security applies.

    With no agent named, the login role is the identity (on a shared server, each agent
    logs in as its own role). Every statement is bounded by settings.statement_timeout
    unless `bounded` is false (long admin jobs), and the server stops a query whose client
    went away either way (limits.py).
    """
    try:
        conn = psycopg.connect(
            admin_conninfo(settings),
            row_factory=dict_row,
            autocommit=autocommit,
            options=server_options(settings, bounded),
        )
    except psycopg.OperationalError as exc:
        raise connect_error(settings, exc) from None
    if agent:
        try:
            become(conn, agent)
        except BaseException:
            conn.close()
            raise
    return conn


def server_options(settings: Settings, bounded: bool) -> str:
    """Server settings for the connection, after any the URL itself carries."""
    try:
        own = conninfo_to_dict(settings.database_url).get("options", "") if settings.database_url else ""
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"CLI_ORG_DATABASE_URL is not a valid connection string: {exc}") from None
    ours = f"-c client_connection_check_interval={CLIENT_CHECK_MS}"
    if bounded:
        ours += f" -c statement_timeout={round(settings.statement_timeout * 1000)}"
    return f"{own} {ours}".strip()


def become(conn: Conn, agent: str) -> None:
    """SET ROLE to the agent's role; PostgreSQL refuses if the login may not become it."""
    try:
        row = conn.execute(sql("agents.get"), {"name": agent}).fetchone()
    except pgerr.UndefinedTable:
        raise ConfigError("the database is not initialised; run `cli-org init`") from None
    if row is None:
        raise NotFound(f"unknown agent {agent!r}; see `cli-org agents list`")
    try:
        conn.execute(pgsql.SQL("SET ROLE {}").format(pgsql.Identifier(row["role_name"])))
    except pgerr.InsufficientPrivilege:
        raise DatabaseError(
            f"this login may not act as agent {agent!r}; on a shared server each agent logs in as itself"
        ) from None
    if not conn.autocommit:
        conn.commit()


def connect_error(settings: Settings, exc: Exception) -> Exception:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "does not exist" in first and "database" in first:
        return ConfigError(f"{first}; run `cli-org init`")
    where = "CLI_ORG_DATABASE_URL" if settings.database_url else "the embedded server"
    return DatabaseError(f"cannot connect to {where}: {first}")
