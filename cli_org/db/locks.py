"""Admin work serialised by advisory locks, waiting a bounded time and naming who blocks it.

Members cannot take these locks (migration 0008 revokes the functions where the admin is a
superuser); elsewhere a member, or a stuck admin job, could hold one forever, so nobody
waits unboundedly: after `wait` seconds the command fails and says who holds the lock.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import DatabaseError
from . import Conn, first
from .queries import sql

# Any constants work; they only have to be the same for every cli-org process.
MIGRATIONS = 0x0C11_0A6E
SCAN = 0x0C11_5CA9
ARCHIVE = 726170003
CREATE = 0x0C11_1417  # creating a database (with its name's hash) and adding its first owner
RESTORE = 0x0C11_4E57  # restoring a backup into a database (with its name's hash): one at a time


@contextmanager
def held(conn: Conn, key: int, what: str, wait: float) -> Iterator[None]:
    """Hold the session lock `key` for the block; `what` names the work in messages."""
    deadline = time.monotonic() + wait
    while not first(conn, sql("locks.try"), {"key": key})["ok"]:
        if time.monotonic() >= deadline:
            who = describe(conn.execute(sql("locks.holders"), {"key": key}).fetchall())
            raise DatabaseError(f"{what}: waited {wait:g} s (CLI_ORG_LOCK_WAIT) for a lock held by {who}")
        time.sleep(min(0.2, wait / 10))
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
