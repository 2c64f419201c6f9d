"""Back up one cli-org database to a file and restore it, with the PostgreSQL tools.

The file is pg_dump's custom format. Agents are roles of the cluster, not of the
database, so a dump holds the grants to them but not the roles themselves: restore reads
the agents (org_agents.role_name) out of the file and creates the member group and every
missing role, without a login (passwords are not carried; see README, "Backups"), before
the data goes in. The data goes into a temporary database first; only a complete restore
is renamed into place, in one transaction, so a failure leaves the old database as it was.
A replaced database is kept, renamed, never dropped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..config import Settings
from ..errors import ConfigError, DatabaseError, InputError, NotFound
from . import embedded, locks
from .connect import admin_conninfo, connect_error
from .errors import first_line

# pg_dump's custom format starts with these bytes (pg_backup_archiver.c, "PGDMP").
MAGIC = b"PGDMP"
# A dump is a cli-org backup when it carries these tables.
REQUIRED_TABLES = ("schema_migrations", "org_agents", "memory_facts")

Progress = Callable[[int, int, str], None]


@dataclass
class BackupResult:
    file: str
    database: str
    bytes: int
    tables: int
    seconds: float
    tool: str


@dataclass
class RestoreResult:
    file: str
    database: str
    source_database: str
    replaced: str | None  # the old database, kept under this name
    roles_created: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tool: str = ""


def tool(settings: Settings, name: str) -> Path:
    """pg_dump or pg_restore: the embedded server's own (from the server wheel), or for a
    URL the one on PATH, which must be at least the server's major version."""
    if not settings.database_url:
        return embedded.tool_path(name)
    found = shutil.which(name)
    if not found:
        raise ConfigError(
            f"{name} is not on PATH; install the PostgreSQL client tools of your server's version "
            "(e.g. the postgresql-client package)"
        )
    return Path(found)


def _major(path: Path) -> int:
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"(\d+)(?:\.\d+)?", out.split(")")[-1] if ")" in out else out)
    if not match:
        raise ConfigError(f"cannot tell the version of {path}: {out.strip()[:80]!r}")
    return int(match.group(1))


def _check_version(path: Path, conninfo: str) -> None:
    """A pg_dump older than the server refuses to dump it; say so before starting."""
    with psycopg.connect(conninfo, connect_timeout=10) as conn:
        server = int(conn.info.server_version) // 10000
    client = _major(path)
    if client < server:
        raise ConfigError(
            f"{path} is PostgreSQL {client}, older than the server ({server}); put version {server} or newer on PATH"
        )


def _command_target(conninfo: str) -> tuple[str, dict[str, str]]:
    """The connection string for a tool's command line without its password, which goes
    in PGPASSWORD instead (a command line is visible to every local user in ps)."""
    params = conninfo_to_dict(conninfo)
    password = params.pop("password", None)
    env = {"PGPASSWORD": str(password)} if password else {}
    return make_conninfo(**{k: str(v) for k, v in params.items() if v is not None}), env


def _run(argv: list[str], env: dict[str, str], on_line: Callable[[str], None]) -> None:
    """Run a tool, passing each stderr line (its -v log) to on_line; one clean line on failure."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env={**os.environ, **env},
    )
    errors: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        line = line.rstrip("\n")
        if "error:" in line or "FATAL" in line or "ERROR" in line:
            errors.append(line)
        on_line(line)
    if proc.wait() != 0:
        detail = errors[0] if errors else f"exit code {proc.returncode}"
        # "pg_restore: error: could not execute query: ERROR:  role ... does not exist": the server's words.
        detail = re.split(r"ERROR:\s+|error:\s+", detail)[-1].strip()
        raise DatabaseError(f"{Path(argv[0]).name} failed: {detail[:300]}")


def _initialised(conninfo: str) -> dict[str, int] | None:
    """Counts of the main tables, or None when the database holds no cli-org schema."""
    try:
        with psycopg.connect(conninfo, connect_timeout=10) as conn:
            found = conn.execute("SELECT to_regclass('public.schema_migrations') IS NOT NULL").fetchone()
            if not found or not found[0]:
                return None
            row = conn.execute(
                "SELECT (SELECT count(*) FROM memory_facts), (SELECT count(*) FROM org_agents)"
            ).fetchone()
            assert row is not None
            return {"facts": row[0], "agents": row[1]}
    except psycopg.OperationalError as exc:
        if "does not exist" in str(exc):
            return None
        raise


def backup(settings: Settings, file: Path, progress: Progress | None = None) -> BackupResult:
    """Write the database to `file` (pg_dump custom format), atomically: a failure leaves no file."""
    started = time.monotonic()
    conninfo = admin_conninfo(settings)
    try:
        counts = _initialised(conninfo)
    except psycopg.OperationalError as exc:
        raise connect_error(settings, exc) from None
    if counts is None:
        raise ConfigError("the database is not initialised: nothing to back up (run `cli-org init`)")
    if file.is_dir():
        raise InputError(f"{file} is a folder; name the backup file")
    if not file.parent.is_dir():
        raise NotFound(f"folder {file.parent} does not exist")
    pg_dump = tool(settings, "pg_dump")
    _check_version(pg_dump, conninfo)
    target, env = _command_target(conninfo)
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        tables = int(row[0]) if row else 0
    partial = file.with_name(f".{file.name}.partial")
    done = 0

    def on_line(line: str) -> None:
        nonlocal done
        if "dumping contents of table" in line:
            done += 1
            if progress:
                progress(min(done, tables), tables, line.rsplit(" ", 1)[-1].strip('"'))

    partial.unlink(missing_ok=True)
    # The file holds every agent's private notebook: readable by its owner only, from the start.
    os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        # Custom format (compressed, selective restore); -v names each table as it goes.
        _run([str(pg_dump), "-Fc", "-v", "-f", str(partial), "-d", target], env, on_line)
        partial.replace(file)
    finally:
        partial.unlink(missing_ok=True)
    return BackupResult(
        str(file),
        str(conninfo_to_dict(conninfo).get("dbname") or ""),
        file.stat().st_size,
        done,
        round(time.monotonic() - started, 2),
        str(pg_dump),
    )


@dataclass
class _Dump:
    database: str
    entries: int
    tables: set[str]
    roles: list[str]


def read_dump(settings: Settings, file: Path) -> _Dump:
    """What a backup holds (its database, tables and agent roles), refusing anything that
    is not a cli-org backup in pg_dump's custom format."""
    if not file.exists():
        raise NotFound(f"backup file {file} does not exist")
    if not file.is_file():
        raise InputError(f"{file} is not a file")
    with open(file, "rb") as fh:
        if fh.read(len(MAGIC)) != MAGIC:
            raise InputError(f"{file} is not a cli-org backup (not a pg_dump custom-format file)")
    pg_restore = tool(settings, "pg_restore")
    listed = subprocess.run(
        [str(pg_restore), "--list", str(file)], capture_output=True, text=True, errors="replace", check=False
    )
    if listed.returncode != 0:
        reason = (listed.stderr.strip().splitlines() or ["unreadable"])[-1].split(": ", 1)[-1]
        raise InputError(f"{file} is not a readable backup: {reason[:200]}")
    database = re.search(r"^;\s+dbname: (\S+)", listed.stdout, re.M)
    tables = set(re.findall(r"^\d+; \d+ \d+ TABLE public (\S+) ", listed.stdout, re.M))
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if not database or missing:
        raise InputError(f"{file} is a PostgreSQL dump but not of a cli-org database (no {', '.join(missing)})")
    entries = sum(1 for line in listed.stdout.splitlines() if line and not line.startswith(";"))
    data = subprocess.run(
        [str(pg_restore), "--data-only", "--table=org_agents", "-f", "-", str(file)],
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    if data.returncode != 0:
        raise InputError(f"{file}: cannot read its agents: {data.stderr.strip()[:200]}")
    return _Dump(database.group(1), entries, tables, _roles(data.stdout))


def _roles(copy_text: str) -> list[str]:
    """role_name of each org_agents row in pg_restore's COPY text."""
    match = re.search(r"^COPY public\.org_agents \((.+?)\) FROM stdin;\n(.*?)^\\\.$", copy_text, re.M | re.S)
    if not match:
        return []
    columns = [c.strip().strip('"') for c in match.group(1).split(",")]
    at = columns.index("role_name")
    return [line.split("\t")[at] for line in match.group(2).splitlines() if line]


def restore(settings: Settings, file: Path, *, force: bool = False, progress: Progress | None = None) -> RestoreResult:
    """Restore a backup into the configured database: refused when that database holds a
    cli-org schema unless `force`; the old one is then kept under a new name."""
    started = time.monotonic()
    dump = read_dump(settings, file)
    conninfo = admin_conninfo(settings)
    target = conninfo_to_dict(conninfo).get("dbname") or ""
    if dump.database != target:
        # The member group and roles are named after the database (migration 0001), and the
        # dump's grants name them: a restore under another name would grant to the wrong group.
        raise InputError(
            f"{file} is a backup of database {dump.database!r}, not {target!r}; restore it into a database "
            f"of that name (CLI_ORG_DATABASE={dump.database} or the URL's database)"
        )
    maintenance = make_conninfo(conninfo, dbname="postgres")
    try:
        admin = psycopg.connect(maintenance, autocommit=True)
    except psycopg.OperationalError as exc:
        raise connect_error(settings, exc) from None
    pg_restore = tool(settings, "pg_restore")
    with admin:
        _check_version(pg_restore, maintenance)
        # Two restores of one database would share (and drop) one staging database.
        got = admin.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (locks.RESTORE, target)).fetchone()
        if not got or not got[0]:
            raise DatabaseError(f"another restore into {target!r} is running; wait for it to finish")
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (target,)).fetchone() is not None
        counts = _initialised(conninfo) if exists else None
        if exists and not force and _has_tables(conninfo):
            held = f" ({counts['facts']} facts, {counts['agents']} agents)" if counts else ""
            raise InputError(
                f"database {target!r} is not empty{held}; pass --force to replace it (it is kept, renamed)"
            )
        created = _make_roles(admin, target, dump.roles)
        staging = f"{target}_restoring"[:63]
        admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(staging)))
        admin.execute(
            pgsql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'").format(pgsql.Identifier(staging))
        )
        try:
            _load(pg_restore, make_conninfo(conninfo, dbname=staging), file, dump.entries, progress)
            admin.execute(
                pgsql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                    pgsql.Identifier(staging), pgsql.Identifier(f"{target}_member")
                )
            )
            replaced = _swap(admin, target, staging, exists)
        except BaseException:
            admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(staging)))
            raise
    return RestoreResult(
        str(file), target, dump.database, replaced, created, round(time.monotonic() - started, 2), str(pg_restore)
    )


def _has_tables(conninfo: str) -> bool:
    with psycopg.connect(conninfo, connect_timeout=10) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')"
        ).fetchone()
        return bool(row and row[0])


def _make_roles(admin: psycopg.Connection, database: str, roles: list[str]) -> list[str]:
    """The member group and each agent's role, made when missing (without a login: a
    backup carries no passwords), and each role put in the group."""
    group = f"{database}_member"
    created = []
    for role in [group, *roles]:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
            admin.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN").format(pgsql.Identifier(role)))
            created.append(role)
    for role in roles:
        admin.execute(pgsql.SQL("GRANT {} TO {}").format(pgsql.Identifier(group), pgsql.Identifier(role)))
    return created


def _load(pg_restore: Path, conninfo: str, file: Path, entries: int, progress: Progress | None) -> None:
    target, env = _command_target(conninfo)
    done = 0

    def on_line(line: str) -> None:
        nonlocal done
        if "creating " in line or "processing data for table" in line or "processing item" in line:
            done += 1
            if progress:
                progress(min(done, entries), entries, line.split(": ", 1)[-1])

    # --no-owner: the restoring admin owns everything (the dump's owner may not exist here);
    # --exit-on-error: the first failure stops it, and the staging database is dropped.
    _run([str(pg_restore), "-v", "--no-owner", "--exit-on-error", "-d", target, str(file)], env, on_line)


def _swap(admin: psycopg.Connection, target: str, staging: str, exists: bool) -> str | None:
    """Rename the staging database into place in one transaction; the old one is kept."""
    kept = None
    try:
        with admin.transaction():
            if exists:
                stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
                kept = f"{target}_replaced_{stamp}"[:63]
                admin.execute(
                    pgsql.SQL("ALTER DATABASE {} RENAME TO {}").format(pgsql.Identifier(target), pgsql.Identifier(kept))
                )
            admin.execute(
                pgsql.SQL("ALTER DATABASE {} RENAME TO {}").format(pgsql.Identifier(staging), pgsql.Identifier(target))
            )
    except psycopg.errors.ObjectInUse:
        raise DatabaseError(
            f"database {target!r} is in use by other sessions; stop them (the MCP and web servers, "
            "`cli-org warm stop`) and run the restore again"
        ) from None
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot put the restored database in place: {first_line(exc)}") from None
    return kept
