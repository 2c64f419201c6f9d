"""Create the database if needed, migrate it, and make sure it has an owner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pgerr
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from ..config import Settings
from ..db import first, locks
from ..db.connect import admin_conninfo, connect
from ..db.errors import first_line, translated
from ..db.migrate import NO_VECTORS, migrate, missing_extensions, pending, vectors_ready
from ..db.queries import sql
from ..errors import DatabaseError
from .agents import add_agent


@dataclass
class InitResult:
    database: str
    created: bool
    applied: list[str]
    owner: str | None
    notice: str | None = None  # what waits for an extension the server lacks (pgvector)


def create_database(settings: Settings) -> bool:
    """Create the embedded server's database; False when it already exists."""
    if settings.database_url:
        return False
    try:
        conn = psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True, row_factory=dict_row)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to the embedded server: {first_line(exc)}") from None
    with conn:
        # Two `cli-org init` at once: CREATE DATABASE cannot run in a transaction, so a
        # session lock makes the second wait and then find the database made.
        conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (locks.CREATE, settings.database_name))
        try:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (settings.database_name,)).fetchone()
            if exists:
                return False
            try:
                conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(settings.database_name)))
            except (pgerr.DuplicateDatabase, pgerr.UniqueViolation):
                # Created meanwhile by someone not holding the lock; racing CREATE DATABASE
                # statements fail on pg_database's unique index rather than as a duplicate.
                return False
            return True
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (locks.CREATE, settings.database_name))


def init(settings: Settings, owner: str | None = None) -> InitResult:
    created = create_database(settings)
    with connect(settings, bounded=False) as conn, translated(conn):
        applied = [m.label for m in migrate(conn, lock_wait=settings.lock_wait)]
        made = None
        # A concurrent init may be adding the owner too: the lock lets one of them do it
        # and the other find it done.
        with locks.held(conn, locks.CREATE, "adding the first owner", settings.lock_wait):
            has_owner = first(conn, sql("agents.owner_count"))["n"]
            conn.commit()
            if owner and not has_owner:
                add_agent(conn, owner, owner=True, person=True)
                made = owner
            elif not has_owner:
                raise DatabaseError("the database has no owner yet; pass --owner NAME")
        waiting = missing_extensions(conn).get("vector")
        notice = f"{NO_VECTORS} (waiting: {', '.join(waiting)})" if waiting else None
        return InitResult(conn.info.dbname, created, applied, made, notice)


def state(conninfo: str) -> dict[str, Any]:
    """Whether a database is initialised, its pending migrations and index size; changes nothing."""
    try:
        with psycopg.connect(conninfo, row_factory=dict_row, connect_timeout=5) as conn:
            todo = pending(conn)
            if todo is None:
                return {"initialised": False}
            waiting = missing_extensions(conn, todo)
            counts = first(conn, sql("vault.counts" if vectors_ready(conn) else "vault.counts_plain"))
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0].rsplit("failed: ", 1)[-1]
        return {"initialised": False, **({} if "does not exist" in reason else {"error": reason})}
    return {
        "initialised": True,
        "pending_migrations": [m.label for m in todo],
        "waiting_for_extensions": waiting,  # e.g. {"vector": [...]}: init alone cannot apply those
        **counts,
    }
