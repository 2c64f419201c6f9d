"""A connection pool for long-lived callers (the MCP server, the web server); the CLI keeps
its single connection. Every connection is set up like `connect()`'s: the same server
settings, the same identity, and the connection rule (db/session.py) on every call."""

from __future__ import annotations

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from ..config import Settings
from ..errors import DatabaseError
from . import Conn
from .connect import (
    become,
    carries_options,
    connect,
    conninfo_for,
    detect_pooler,
    mark_replica,
    server_options,
    uses_replica,
)


def open_pool(
    settings: Settings,
    agent: str | None = None,
    *,
    min_size: int = 1,
    max_size: int = 4,
    bounded: bool = True,
    read: bool = False,
) -> ConnectionPool[Conn]:
    """Open a pool whose connections act as `agent` (or as the login role). Close it when
    done (`with open_pool(...) as pool:`); take a connection with `pool.connection()`.
    `read`: the pool serves reads only and goes to CLI_ORG_READ_URL when that is set."""

    with connect(settings, agent, bounded=bounded, read=read) as probe:  # a clear error now, not a pool timeout later
        options = server_options(settings, bounded, read=read) if carries_options(probe) else None
    replica = uses_replica(settings, read)

    def configure(conn: Conn) -> None:
        conn.row_factory = dict_row
        if replica:
            mark_replica(conn)
        if agent:
            become(conn, agent)
        elif settings.database_url or replica:
            detect_pooler(conn)

    pool = ConnectionPool(
        conninfo_for(settings, read),
        kwargs={"options": options} if options else {},
        min_size=min_size,
        max_size=max_size,
        configure=configure,
        check=ConnectionPool.check_connection,
        open=False,
        name="cli-org-reads" if replica else "cli-org",
    )
    try:
        pool.open(wait=True, timeout=10)
    except PoolTimeout:
        pool.close()
        raise DatabaseError("the connection pool could not open its first connection in 10 s") from None
    return pool
