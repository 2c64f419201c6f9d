"""What the helper keeps open between requests: the query model and one connection.

Identity is the cold path's, step for step: the connection is the one `connect()` opens
for the request's settings (the embedded superuser, or the login of CLI_ORG_DATABASE_URL),
and each request that names an agent runs `become()` on it (SET ROLE, refused as it would be
cold) and has the role reset afterwards. A request whose connection settings differ from the
resident connection's (another statement timeout, say) gets a connection of its own, closed
after it, like a cold process. The connection rule (db/session.py) holds: each request gets
the connection idle, and it is left idle, with the role it started with.

The resident connection is checked before each request (connect.alive, no round trip when
it is healthy): one the server dropped while the helper waited (a restart) is replaced
once, transparently, so the first hook after a restart answers like a cold one, rather
than failing on the dead connection and, since hooks fail open, delivering nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from psycopg.pq import TransactionStatus

from ...config import Settings
from ...db import Conn
from ...db.connect import admin_conninfo, alive, become, connect, server_options
from ...vault.embedders import Embedder, onnx_path, query_embedder


class Resident:
    """Close it when the helper exits (`with Resident() as r:`)."""

    def __init__(self) -> None:
        self._embedders: dict[Path, Embedder] = {}
        self._conn: Conn | None = None
        self._conn_key: tuple[str, str] | None = None

    def __enter__(self) -> Resident:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._drop_connection()
        for embedder in self._embedders.values():
            embedder.close()
        self._embedders.clear()

    def embedder(self, settings: Settings) -> Embedder | None:
        """The query model for these settings, loaded on first use and kept; None when no
        model has been exported yet (as `query_embedder` says cold)."""
        path = onnx_path(settings)
        if path not in self._embedders:
            embedder, _reason = query_embedder(settings)
            if embedder is None:
                return None
            self._embedders[path] = embedder
        return self._embedders[path]

    @contextmanager
    def connection(self, settings: Settings, agent: str | None) -> Iterator[Conn]:
        """A connection acting as `agent` for one request, as a cold run makes it (the Lender
        of cli_org/org)."""
        key = (admin_conninfo(settings), server_options(settings, True))
        if self._conn is not None and not alive(self._conn):
            self._drop_connection()
        if self._conn is None:
            self._conn, self._conn_key = connect(settings), key
        if self._conn_key != key:  # settings of its own: a connection of its own, like a cold process
            with connect(settings, agent) as own:
                yield own
            return
        conn = self._conn
        try:
            if agent:
                become(conn, agent)
            yield conn
            if conn.info.transaction_status == TransactionStatus.INTRANS:
                conn.commit()  # what leaving `with connect(...)` does cold
        finally:
            self._restore()

    def _restore(self) -> None:
        """Back to the login role, idle; a connection that cannot be restored is dropped."""
        conn = self._conn
        if conn is None:
            return
        try:
            if conn.info.transaction_status != TransactionStatus.IDLE:
                conn.rollback()
            conn.execute("RESET ROLE")
            row = conn.execute("SELECT current_user = session_user AS same").fetchone()
            conn.commit()
            if not row or not row["same"]:
                self._drop_connection()
        except Exception:
            self._drop_connection()

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with suppress(Exception):
                self._conn.close()
        self._conn, self._conn_key = None, None
