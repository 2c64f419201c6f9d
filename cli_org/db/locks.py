"""Admin work serialised by advisory locks, waiting a bounded time and naming who blocks it.

Members cannot take these locks (migration 0008 revokes the functions where the admin is a
superuser); elsewhere a member, or a stuck admin job, could hold one forever, so nobody
waits unboundedly: after `wait` seconds the command fails and says who holds the lock.

Behind a pooler (db/connect.py `pooled`) a session lock would stay on the server connection
that took it, held for whichever client the pooler sends there next, and the unlock would run
on another one. There the lock is a transaction lock, taken by a second connection that keeps
its transaction open for the block: an open transaction keeps its server connection under
every pool mode, and its end releases the lock on every path.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from ..errors import DatabaseError
from . import Conn, first
from .connect import pooled
from .queries import sql

# Any constants work; they only have to be the same for every cli-org process.
MIGRATIONS = 0x0C11_0A6E
SCAN = 0x0C11_5CA9
ARCHIVE = 726170003
CREATE = 0x0C11_1417  # creating a database (with its name's hash) and adding its first owner
RESTORE = 0x0C11_4E57  # restoring a backup into a database (with its name's hash): one at a time


@contextmanager
def held(conn: Conn, key: int, what: str, wait: float) -> Iterator[None]:
    """Hold the lock `key` for the block (a session lock; behind a pooler a transaction's,
    see the module's doc); `what` names the work in messages."""
    if pooled(conn):
        with _second(conn) as holder:  # leaving it ends its transaction, and the lock with it
            _take(holder, "locks.try_xact", key, what, wait)
            yield
        return
    _take(conn, "locks.try", key, what, wait)
    if not conn.autocommit:
        conn.commit()  # the lock is the session's: the block starts with an idle connection
    try:
        yield
    finally:
        if not conn.autocommit:
            conn.rollback()  # the block commits what it keeps; anything left open is unfinished
        conn.execute(sql("locks.release"), {"key": key})
        if not conn.autocommit:
            conn.commit()


def _take(conn: Conn, query: str, key: int, what: str, wait: float) -> None:
    deadline = time.monotonic() + wait
    while not first(conn, sql(query), {"key": key})["ok"]:
        if time.monotonic() >= deadline:
            who = describe(conn.execute(sql("locks.holders"), {"key": key}).fetchall())
            raise DatabaseError(f"{what}: waited {wait:g} s (CLI_ORG_LOCK_WAIT) for a lock held by {who}")
        time.sleep(min(0.2, wait / 10))


def _second(conn: Conn) -> Conn:
    """Another connection made as `conn` was (libpq's parameters, its password included)."""
    params = {o.keyword.decode(): o.val.decode() for o in conn.pgconn.info if o.val}
    return psycopg.connect(make_conninfo(**params), row_factory=dict_row)


def describe(holders: list[dict[str, Any]]) -> str:
    """One phrase per session: pid, role, application, since when, and what it is doing."""
    if not holders:
        return "a session that has just let go (try again)"
    return (
        "; ".join(
            f"pid {h['pid']} (role {h['role']}, application {h['application'] or '-'!r}, "
            f"connected {h['backend_start']:%Y-%m-%d %H:%M:%S}, {h['state'] or 'unknown state'})"
            for h in holders
        )
        + f"; the admin can end it with SELECT pg_terminate_backend({holders[0]['pid']})"
    )
