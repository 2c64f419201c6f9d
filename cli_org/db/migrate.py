"""Numbered SQL migrations: each file once, in order, in its own transaction."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from psycopg import errors as pgerr
from psycopg.rows import dict_row

from ..errors import DatabaseError
from ..limits import LOCK_WAIT
from . import Conn, first, locks
from .queries import sql
from .session import owns_transaction

_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def available() -> list[Migration]:
    found = []
    for entry in resources.files("cli_org").joinpath("migrations").iterdir():
        m = _FILE.match(entry.name)
        if m:
            found.append(Migration(int(m[1]), m[2], entry.read_text("utf-8")))
    found.sort(key=lambda mig: mig.version)
    return found


@owns_transaction
def migrate(conn: Conn, lock_wait: float = LOCK_WAIT) -> list[Migration]:
    """Apply what is missing; returns the migrations applied by this call.

    A session advisory lock serialises concurrent runners: the second waits, then finds
    nothing left to do. Waiting (for that lock, or for a table another session holds) is
    bounded by `lock_wait` seconds. Needs a connection with no transaction open.
    """
    was = conn.autocommit
    conn.autocommit = True
    try:
        with locks.held(conn, locks.MIGRATIONS, "migrations", lock_wait):
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            applied = []
            for mig in _not_applied(conn):  # the table exists now
                try:
                    with conn.transaction():
                        conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{round(lock_wait * 1000)}ms",))
                        conn.execute(mig.sql.encode())
                        conn.execute(
                            "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                            (mig.version, mig.name),
                        )
                except pgerr.LockNotAvailable:
                    holders = conn.cursor(row_factory=dict_row).execute(sql("locks.table_holders")).fetchall()
                    who = locks.describe(holders)
                    raise DatabaseError(
                        f"migration {mig.version:04d}_{mig.name} waited {lock_wait:g} s (CLI_ORG_LOCK_WAIT) for tables "
                        f"held by {who}"
                    ) from None
                applied.append(mig)
            return applied
    finally:
        conn.autocommit = was


@owns_transaction
def pending(conn: Conn) -> list[Migration] | None:
    """Migrations not yet applied; None when the database was never migrated."""
    if not first(conn, "SELECT to_regclass('schema_migrations') IS NOT NULL AS found")["found"]:
        return None
    return _not_applied(conn)


def _not_applied(conn: Conn) -> list[Migration]:
    done = {row["version"] for row in conn.execute("SELECT version FROM schema_migrations")}
    return [m for m in available() if m.version not in done]
