"""A connection pool for long-lived callers (the MCP server, the web server); the CLI keeps
its single connection. Every connection is made by `connect()`: the same server settings,
the same identity, and the connection rule (db/session.py) on every call.

Made for a server that goes away and comes back (a restart, `cli-org db stop`):
- a connection is made in the caller's thread when none is idle, so with the server down
  the call fails at once with what fixes it (connect.connect_error), and the first call
  after the server is back connects: nothing reconnects in the background, so nothing
  waits out a back-off (a pool that did kept failing for three requests after the server
  was back, and made each page wait its 30 s timeout while it was down);
- an idle connection is checked before it is handed out, without a round trip on the hot
  path (connect.alive), so a connection the server dropped is never handed out.
The only wait is for a free connection when all `max_size` are busy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from psycopg.pq import TransactionStatus

from ..config import Settings
from ..errors import DatabaseError
from . import Conn
from .connect import alive, connect

# How long a call waits for a free connection when all are busy (each statement is bounded
# by CLI_ORG_STATEMENT_TIMEOUT, 30 s by default, so one this busy is stuck, not slow).
BUSY_SECONDS = 30.0


class Pool:
    """At most `max_size` connections made by `make`, kept idle between calls. Close it when
    done (`with open_pool(...) as pool:`); take a connection with `pool.connection()`."""

    def __init__(self, make: Callable[[], Conn], max_size: int, first: Conn | None = None) -> None:
        self.max_size = max_size
        self.timeout = BUSY_SECONDS
        self.size = 0  # connections open, idle or in use
        self._make = make
        self._idle: list[Conn] = []
        self._lock = threading.Lock()
        self._free = threading.BoundedSemaphore(max_size)
        self._closed = False
        if first is not None:
            self._idle.append(first)
            self.size = 1

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        conn = self.getconn()
        try:
            yield conn
        finally:
            self.putconn(conn)

    def getconn(self) -> Conn:
        """An idle connection that still reaches the server, or a new one; pair with putconn."""
        if not self._free.acquire(timeout=self.timeout):
            raise DatabaseError(
                f"all {self.max_size} database connections stayed busy for {self.timeout:g} s; try again in a moment"
            )
        try:
            while True:
                with self._lock:
                    if self._closed:
                        raise DatabaseError("the connection pool is closed")
                    conn = self._idle.pop() if self._idle else None
                if conn is None:
                    conn = self._make()
                    with self._lock:
                        self.size += 1
                    return conn
                if alive(conn):
                    return conn
                self._discard(conn)
        except BaseException:
            self._free.release()
            raise

    def putconn(self, conn: Conn) -> None:
        """Back to the idle ones, its transaction rolled back; closed if it is broken."""
        try:
            if conn.pgconn.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                with suppress(Exception):
                    conn.rollback()
            if self._closed or conn.broken or conn.pgconn.transaction_status != TransactionStatus.IDLE:
                self._discard(conn)
            else:
                with self._lock:
                    self._idle.append(conn)
        finally:
            self._free.release()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            self._discard(conn)

    def _discard(self, conn: Conn) -> None:
        with suppress(Exception):
            conn.close()
        with self._lock:
            self.size -= 1


def open_pool(
    settings: Settings,
    agent: str | None = None,
    *,
    max_size: int = 4,
    bounded: bool = True,
    read: bool = False,
) -> Pool:
    """Open a pool whose connections act as `agent` (or as the login role). `read`: the pool
    serves reads only and goes to CLI_ORG_READ_URL when that is set. The first connection is
    made now, as a command makes it (a clear error at once; the embedded server started if
    needed); later ones never start the embedded server (connect's `start`)."""
    first = connect(settings, agent, bounded=bounded, read=read)
    return Pool(lambda: connect(settings, agent, bounded=bounded, read=read, start=False), max_size, first)
