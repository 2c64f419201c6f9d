"""Numbered SQL migrations: each file once, in order, in its own transaction."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg
from psycopg.rows import tuple_row

# Any constant works; it only has to be the same for every cli-org process.
_LOCK_KEY = 0x0C11_0A6E
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


def migrate(conn: psycopg.Connection) -> list[Migration]:
    """Apply what is missing; returns the migrations applied by this call.

    A session advisory lock serialises concurrent runners: the second waits, then finds
    nothing left to do. Needs a connection with no transaction open.
    """
    conn.autocommit = True
    conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        applied = []
        for mig in pending(conn):
            with conn.transaction():
                conn.execute(mig.sql.encode())
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (mig.version, mig.name),
                )
            applied.append(mig)
        return applied
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))


def pending(conn: psycopg.Connection) -> list[Migration] | None:
    """Migrations not yet applied; None when the database was never migrated."""
    cur = conn.cursor(row_factory=tuple_row)
    if not cur.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]:
        return None
    done = {row[0] for row in cur.execute("SELECT version FROM schema_migrations")}
    return [m for m in available() if m.version not in done]
