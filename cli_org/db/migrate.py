"""Numbered SQL migrations: each file once, in order, in its own transaction.

A migration whose file has a line `-- requires: vector` needs that extension. When the
server cannot give it (not installed, as on Debian's own PostgreSQL, or the administrator may
not create it, as on a managed service before someone enables it), the migration stays
pending and the rest apply; once the extension is there, the next `cli-org init` applies it
without touching what is stored. Nothing after such a migration may depend on it unless it
says `-- requires:` the same.

Repeatable files (migrations/repeatable/NAME.sql) hold every function, trigger, policy and
function grant, each in one file only (tests/test_one_source.py); the numbered migrations hold
tables, indexes and data. Each statement of a repeatable file replaces what it defines, so a
file runs again whenever its text changes: `schema_repeatables` keeps the SHA-256 of the text
each had when it ran. A file with the line `-- runs before the numbered migrations` (functions
only: column defaults, generated columns and the migrations' own statements call them) runs
first, with function bodies unchecked (they may name tables a later migration makes). The
others (triggers, policies, grants, functions of a row type) run after the numbered
migrations, in name order, and wait while a numbered migration they may need has not applied:
one that requires no extension the file does not (a restore migrates only to the backup's
migration; a file that requires pgvector waits for the migrations that do).

The numbered migrations up to REBASED were rebased when the repeatable files took their
functions, triggers and policies: their text changed, their effect on a database that ran
them all did not. A database that ran only some of them (made by a cli-org before the rebase
and not migrated since) is refused with a one-line error: migrate it with that cli-org first.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from dataclasses import dataclass
from importlib import resources

from psycopg import errors as pgerr
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from ..errors import DatabaseError
from ..limits import LOCK_WAIT
from . import Conn, first, locks, remembered
from .queries import sql
from .session import owns_transaction

_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")
_REPEATABLE = re.compile(r"^(\w+)\.sql$")
_REQUIRES = re.compile(r"^-- requires: ([a-z_]+)\s*$", re.M)
_FIRST = re.compile(r"^-- runs before the numbered migrations\s*$", re.M)
# The last numbered migration of the rebase (see above), and a repeatable file it brought.
REBASED = 39
REBASE_MARK = "facts"
# The record of the repeatable files: name and checksum of the text that last ran.
REPEATABLES = "schema_repeatables"


@dataclass(frozen=True)
class Migration:
    version: int | None  # None: a repeatable file
    name: str
    sql: str
    needs: tuple[str, ...] = ()  # extensions, from its `-- requires: NAME` lines

    @property
    def first(self) -> bool:
        """A repeatable file that runs before the numbered migrations."""
        return self.version is None and bool(_FIRST.search(self.sql))

    @property
    def label(self) -> str:
        return f"repeatable/{self.name}" if self.version is None else f"{self.version:04d}_{self.name}"

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def available() -> list[Migration]:
    """The numbered migrations, in order."""
    found = []
    for entry in resources.files("cli_org").joinpath("migrations").iterdir():
        m = _FILE.match(entry.name)
        if m:
            text = entry.read_text("utf-8")
            found.append(Migration(int(m[1]), m[2], text, tuple(dict.fromkeys(_REQUIRES.findall(text)))))
    found.sort(key=lambda mig: mig.version or 0)
    return found


def repeatables() -> list[Migration]:
    """The repeatable files, by name."""
    found = []
    for entry in resources.files("cli_org").joinpath("migrations").joinpath("repeatable").iterdir():
        m = _REPEATABLE.match(entry.name)
        if m:
            text = entry.read_text("utf-8")
            found.append(Migration(None, m[1], text, tuple(dict.fromkeys(_REQUIRES.findall(text)))))
    found.sort(key=lambda mig: mig.name)
    return found


@owns_transaction
def migrate(conn: Conn, lock_wait: float = LOCK_WAIT, only: Collection[int] | None = None) -> list[Migration]:
    """Apply the function files whose text changed, the numbered migrations that are missing
    (of `only`, when given: the versions a backup was made at), then the other repeatable
    files whose text changed; returns what this call applied, in that order.

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
            conn.execute(f"CREATE TABLE IF NOT EXISTS {REPEATABLES} (name text PRIMARY KEY, checksum text NOT NULL)")
            applied = []
            missing: dict[str, str | None] = {}  # extension -> why it cannot be had (None: it is there)
            todo = _not_applied(conn)  # the table exists now
            _refuse_unrebased(conn, todo)
            stale = _stale(conn)
            for mig in [m for m in stale if m.first]:
                if not any(_extension(conn, ext, missing) for ext in mig.needs):
                    _apply(conn, mig, lock_wait)
                    applied.append(mig)
            left = []  # numbered migrations that stay pending
            for mig in todo:
                if only is not None and mig.version not in only:
                    left.append(mig)
                elif any(_extension(conn, ext, missing) for ext in mig.needs):
                    left.append(mig)  # stays pending until the extension can be had
                else:
                    _apply(conn, mig, lock_wait)
                    applied.append(mig)
            for mig in [m for m in stale if not m.first]:
                if _follows(mig, left):
                    continue  # it may need what that migration makes
                if not any(_extension(conn, ext, missing) for ext in mig.needs):
                    _apply(conn, mig, lock_wait)
                    applied.append(mig)
            return applied
    finally:
        conn.autocommit = was


def _apply(conn: Conn, mig: Migration, lock_wait: float) -> None:
    """Run one file and record it, in one transaction."""
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{round(lock_wait * 1000)}ms",))
            if mig.first:  # its functions may name tables a numbered migration makes later
                conn.execute("SELECT set_config('check_function_bodies', 'off', true)")
            conn.execute(mig.sql.encode())
            if mig.version is None:
                conn.execute(
                    f"INSERT INTO {REPEATABLES} (name, checksum) VALUES (%s, %s)"
                    " ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum",
                    (mig.name, mig.checksum),
                )
            else:
                conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (mig.version, mig.name))
    except pgerr.LockNotAvailable:
        holders = conn.cursor(row_factory=dict_row).execute(sql("locks.table_holders")).fetchall()
        who = locks.describe(holders)
        raise DatabaseError(
            f"migration {mig.label} waited {lock_wait:g} s (CLI_ORG_LOCK_WAIT) for tables held by {who}"
        ) from None


def _refuse_unrebased(conn: Conn, todo: list[Migration]) -> None:
    """A database that ran some of the migrations up to REBASED but not all that it could
    (those that wait for an extension aside), with no record of the files the rebase made,
    was made by a cli-org before the rebase: its functions, triggers and policies are those of
    some older migration, which the repeatable files do not know how to replace."""
    done = {row["version"] for row in conn.execute("SELECT version FROM schema_migrations")}
    behind_rebase = [m for m in todo if m.version is not None and m.version <= REBASED and not m.needs]
    if not done or not behind_rebase:
        return
    if first(conn, f"SELECT count(*) AS n FROM {REPEATABLES} WHERE name = %s", (REBASE_MARK,))["n"]:
        return  # migrated part-way by this runner (a restore's `only`)
    raise DatabaseError(
        f"this database stopped before migration {behind_rebase[0].label}, which the move of functions to "
        "repeatable files rewrote; migrate it with a cli-org from before that move first (docs/migrations.md)"
    )


def _extension(conn: Conn, name: str, seen: dict[str, str | None]) -> str | None:
    """Create the extension if it is missing; None when it is there, else why it is not."""
    if name not in seen:
        try:
            with conn.transaction():
                conn.execute(pgsql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(pgsql.Identifier(name)))
            seen[name] = None
        except (pgerr.UndefinedFile, pgerr.FeatureNotSupported, pgerr.InsufficientPrivilege) as exc:
            # Not installed on the server (UndefinedFile), or this login may not create it.
            seen[name] = str(exc).strip().splitlines()[0]
    return seen[name]


@owns_transaction
def missing_extensions(conn: Conn, todo: list[Migration] | None = None) -> dict[str, list[str]]:
    """Extensions that pending migrations (`todo`, else pending()) wait for, each with those
    migrations' names. An extension the database already has is waited for by nothing: after
    an upgrade, a changed vectors.sql is pending for `init` to apply, not waiting."""
    todo = (pending(conn) or []) if todo is None else todo
    have = {r["extname"] for r in conn.cursor(row_factory=dict_row).execute("SELECT extname FROM pg_extension")}
    waiting: dict[str, list[str]] = {}
    for mig in todo:
        for ext in dict.fromkeys(mig.needs):
            if ext not in have:
                waiting.setdefault(ext, []).append(mig.label)
    return waiting


@owns_transaction
def pending(conn: Conn) -> list[Migration] | None:
    """Migrations not yet applied, then the repeatable files whose text changed since they
    ran; None when the database was never migrated."""
    if not first(conn, "SELECT to_regclass('schema_migrations') IS NOT NULL AS found")["found"]:
        return None
    todo = _not_applied(conn)
    # A file that waits for an extension with the migrations it follows is said once, by them.
    return todo + [m for m in _stale(conn) if not (m.needs and _follows(m, [t for t in todo if t.needs]))]


@owns_transaction
def behind(conn: Conn) -> list[str] | None:
    """Pending migrations that wait for no extension (the ones the code needs and `cli-org
    init` applies); None when the database was never migrated. A long-lived face checks this
    before it serves, so a page never fails on a column an upgrade added."""
    todo = pending(conn)
    return None if todo is None else [m.label for m in todo if not m.needs]


def _follows(file: Migration, waiting: list[Migration]) -> bool:
    """Whether a repeatable file waits for one of these pending numbered migrations: one that
    requires no extension the file does not (it may use what that migration makes)."""
    return any(set(m.needs) <= set(file.needs) for m in waiting)


def _not_applied(conn: Conn) -> list[Migration]:
    done = {row["version"] for row in conn.execute("SELECT version FROM schema_migrations")}
    return [m for m in available() if m.version not in done]


def _stale(conn: Conn) -> list[Migration]:
    """Repeatable files not run with their current text (all of them in a database migrated
    before there were any, which has no record of them)."""
    ran: dict[str, str] = {}
    if first(conn, f"SELECT to_regclass('{REPEATABLES}') IS NOT NULL AS found")["found"]:
        ran = {row["name"]: row["checksum"] for row in conn.execute(f"SELECT name, checksum FROM {REPEATABLES}")}
    return [m for m in repeatables() if ran.get(m.name) != m.checksum]


# The one notice for a database without its vector parts (search, recall, embed, init).
NO_VECTORS = (
    "vectors are unavailable: this PostgreSQL has no pgvector (or it is not enabled in this database); "
    "install it and run `cli-org init` again"
)


@owns_transaction
def vectors_ready(conn: Conn) -> bool:
    """Whether the schema's vector parts (the migrations that require pgvector) are in place;
    once they are, a connection does not ask again (they are never taken away)."""
    return bool(
        remembered(conn, "vectors_ready", lambda: first(conn, sql("embed.vectors_ready"))["ready"],
                   seconds=float("inf"), keep=bool)
    )  # fmt: skip
