"""Back up one cli-org database to a file and restore it, with the PostgreSQL tools.

The file is pg_dump's custom format. A restore runs nothing the file defines (a backup is data): a
temporary database is migrated to the backup's migration, the file is refused if it lists
any object those migrations do not make, and then only its rows go in, through COPY
statements cli-org writes. Agents are roles of the cluster, not of the database: restore
reads them (org_agents.role_name) out of the file, makes the missing ones without a login
(passwords are not carried; see docs/facts.md, "Backups"), and cuts off the org's roles that no
agent of the backup has. Only a complete load is renamed into place, in one transaction,
so a failure leaves the old database as it was. A replaced database is kept, renamed,
never dropped, and closed to members.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import DictRow, dict_row

from ..config import Settings
from ..errors import ConfigError, DatabaseError, InputError, NotFound
from ..local.files import check_target, private_temporary
from . import Conn, embedded, first, locks
from .connect import admin_conninfo, connect_error
from .errors import first_line
from .migrate import REPEATABLES, available, migrate
from .queries import sql

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
    roles_disabled: list[str] = field(default_factory=list)  # agents the backup lacks, cut off (_reconcile)
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
    # "pg_dump (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)": the number after the product name.
    match = re.search(r"\(PostgreSQL\)\s+(\d+)", out) or re.search(r"(\d+)(?:\.\d+)?", out)
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
    check_target(file)  # before the dump runs: a device, a FIFO, a folder or a symlink is refused
    if not file.parent.is_dir():
        raise NotFound(f"folder {file.parent} does not exist")
    pg_dump = tool(settings, "pg_dump")
    _check_version(pg_dump, conninfo)
    target, env = _command_target(conninfo)
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        tables = int(row[0]) if row else 0
    done = 0

    def on_line(line: str) -> None:
        nonlocal done
        if "dumping contents of table" in line:
            done += 1
            if progress:
                progress(min(done, tables), tables, line.rsplit(" ", 1)[-1].strip('"'))

    # The file holds every agent's private notebook: readable by its owner only, from the
    # start; a new temporary name beside it, renamed over it under the target rule.
    with private_temporary(file) as partial:
        # Custom format (compressed, selective restore); -v names each table as it goes.
        _run([str(pg_dump), "-Fc", "-v", "-f", str(partial), "-d", target], env, on_line)
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
    entries: int  # tables with rows (TABLE DATA entries)
    objects: set[str]  # each entry of its table of contents, "KIND SCHEMA NAME"
    roles: list[str]
    versions: list[int]  # the migrations its database had


def _contents(pg_restore: Path, file: Path) -> tuple[str | None, set[str]]:
    """A dump's database name and its table of contents, each entry as "KIND SCHEMA NAME"
    (pg_restore --list without the ids and the owner, which differ from server to server)."""
    listed = subprocess.run(
        [str(pg_restore), "--list", str(file)], capture_output=True, text=True, errors="replace", check=False
    )
    if listed.returncode != 0:
        reason = (listed.stderr.strip().splitlines() or ["unreadable"])[-1].split(": ", 1)[-1]
        raise InputError(f"{file} is not a readable backup: {reason[:200]}")
    database = re.search(r"^;\s+dbname: (\S+)", listed.stdout, re.M)
    entries = re.findall(r"^\d+; \d+ \d+ (.*)$", listed.stdout, re.M)
    return (database.group(1) if database else None), {e.rsplit(" ", 1)[0] for e in entries}


def read_dump(settings: Settings, file: Path) -> _Dump:
    """What a backup holds (its database, objects, agent roles and migrations), refusing
    anything that is not a cli-org backup in pg_dump's custom format."""
    if not file.exists():
        raise NotFound(f"backup file {file} does not exist")
    if not file.is_file():
        raise InputError(f"{file} is not a file")
    with open(file, "rb") as fh:
        if fh.read(len(MAGIC)) != MAGIC:
            raise InputError(f"{file} is not a cli-org backup (not a pg_dump custom-format file)")
    pg_restore = tool(settings, "pg_restore")
    database, objects = _contents(pg_restore, file)
    tables = {o.split(" ", 2)[2] for o in objects if o.startswith("TABLE public ")}
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if not database or missing:
        raise InputError(f"{file} is a PostgreSQL dump but not of a cli-org database (no {', '.join(missing)})")
    # Read as text, never run: pg_restore writes the rows out, it connects to nothing.
    data = subprocess.run(
        [str(pg_restore), "--data-only", "--table=org_agents", "--table=schema_migrations", "-f", "-", str(file)],
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    if data.returncode != 0:
        raise InputError(f"{file}: cannot read its agents: {data.stderr.strip()[:200]}")
    versions = [row.get("version", "") for row in _rows(data.stdout, "schema_migrations")]
    if not all(v.isdigit() for v in versions):
        raise InputError(f"{file}: its schema_migrations holds something other than migration numbers")
    roles = [row.get("role_name", "") for row in _rows(data.stdout, "org_agents")]
    entries = sum(1 for o in objects if o.startswith("TABLE DATA "))
    return _Dump(database, entries, objects, roles, [int(v) for v in versions])


def _rows(copy_text: str, table: str) -> list[dict[str, str]]:
    """The rows of `table` in pg_restore's COPY text, each as column -> text."""
    match = re.search(rf"^COPY public\.{table} \((.+?)\) FROM stdin;\n(.*?)^\\\.$", copy_text, re.M | re.S)
    if not match:
        return []
    columns = [c.strip().strip('"') for c in match.group(1).split(",")]
    return [dict(zip(columns, line.split("\t"), strict=False)) for line in match.group(2).splitlines() if line]


def restore(settings: Settings, file: Path, *, force: bool = False, progress: Progress | None = None) -> RestoreResult:
    """Restore a backup into the configured database: refused when that database holds a
    cli-org schema unless `force`; the old one is then kept under a new name.

    A backup is data. A file is refused when it holds an object cli-org's
    migrations do not make; otherwise only its rows go in, into a database the migrations
    made (at the backup's migration), so no definition from the file ever runs."""
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
    newer = sorted(set(dump.versions) - {m.version for m in available()})
    if newer:
        raise InputError(
            f"{file} was made at migration {newer[-1]:04d}, which this cli-org does not have; upgrade cli-org first"
        )
    maintenance = make_conninfo(conninfo, dbname="postgres")
    try:
        admin = psycopg.connect(maintenance, autocommit=True, row_factory=dict_row)
    except psycopg.OperationalError as exc:
        raise connect_error(settings, exc) from None
    pg_restore = tool(settings, "pg_restore")
    with admin:
        _check_version(pg_restore, maintenance)
        # Two restores of one database would share (and drop) one staging database.
        got = first(admin, "SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS ok", (locks.RESTORE, target))
        if not got["ok"]:
            raise DatabaseError(f"another restore into {target!r} is running; wait for it to finish")
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (target,)).fetchone() is not None
        counts = _initialised(conninfo) if exists else None
        if exists and not force and _has_tables(conninfo):
            held = f" ({counts['facts']} facts, {counts['agents']} agents)" if counts else ""
            raise InputError(
                f"database {target!r} is not empty{held}; pass --force to replace it (it is kept, renamed)"
            )
        staging = f"{target}_restoring"[:63]
        _drop_staging(admin, staging)
        admin.execute(
            pgsql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'").format(pgsql.Identifier(staging))
        )
        # Nobody but the admin reaches it while it is made; the member group gets in by the
        # migrations' own grant, once it has members (at the swap).
        admin.execute(
            pgsql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(pgsql.Identifier(staging))
        )
        try:
            staged = make_conninfo(conninfo, dbname=staging)
            _migrate_to(staged, dump.versions, settings.lock_wait)
            foreign = sorted(dump.objects - _allowed(settings, staged))
            if foreign:
                more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
                raise InputError(
                    f"{file} holds objects not made by cli-org's migrations, which a cli-org backup cannot "
                    f"hold: {'; '.join(foreign[:5])}{more}; refused, nothing was restored"
                )
            _load(pg_restore, staged, file, dump.entries, progress)
            kept, created, disabled = _swap(admin, target, staging, exists, dump.roles, settings.lock_wait)
        except BaseException:
            _drop_staging(admin, staging)
            raise
    return RestoreResult(
        str(file),
        target,
        dump.database,
        kept,
        created,
        disabled,
        round(time.monotonic() - started, 2),
        str(pg_restore),
    )


def _drop_staging(admin: Conn, staging: str) -> None:
    """The staging database and the member group its migrations made (named after it)."""
    admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(staging)))
    admin.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(f"{staging}_member")))


def _has_tables(conninfo: str) -> bool:
    with psycopg.connect(conninfo, connect_timeout=10) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')"
        ).fetchone()
        return bool(row and row[0])


def _migrate_to(staged: str, versions: list[int], lock_wait: float) -> None:
    """The migrations the backup's database had, and only those: its rows fit that schema,
    and `cli-org init` applies the rest afterwards as for any older database."""
    with psycopg.connect(staged, row_factory=dict_row) as conn:
        applied = {m.version for m in migrate(conn, lock_wait, only=set(versions))}
    missing = sorted(set(versions) - applied)
    if missing:
        raise DatabaseError(
            f"this server cannot make the backup's schema: migration {missing[0]:04d} needs an extension it lacks "
            "(pgvector: README, Team server)"
        )


def _allowed(settings: Settings, staged: str) -> set[str]:
    """What a backup of the staging database (migrated as the file's was) may list: its
    objects, the rows of its tables and the positions of its sequences."""
    target, env = _command_target(staged)
    with tempfile.TemporaryDirectory(prefix="cli-org-restore-") as folder:
        schema = Path(folder) / "schema.dump"
        _run([str(tool(settings, "pg_dump")), "-Fc", "--schema-only", "-f", str(schema), "-d", target], env, _quiet)
        _, objects = _contents(tool(settings, "pg_restore"), schema)
    rows = {f"TABLE DATA {o.split(' ', 1)[1]}" for o in objects if o.startswith("TABLE ")}
    positions = {f"SEQUENCE SET {o.split(' ', 1)[1]}" for o in objects if o.startswith("SEQUENCE ")}
    return objects | rows | positions


def _quiet(line: str) -> None:
    """pg_dump's -v log is not wanted here."""


# The only statements a backup's data section may hold (pg_restore --data-only -f -): each
# table's COPY and each sequence's position. Everything else is a setting or a comment, and
# none of it is run: the rows go in through COPY statements cli-org writes itself.
_COPY = re.compile(r'^COPY public\.("?)([a-z_][a-z0-9_]*)\1 \((.*)\) FROM stdin;$')
_COLUMN = re.compile(r'^("?)([a-z_][a-z0-9_]*)\1$')
_SETVAL = re.compile(r"^SELECT pg_catalog\.setval\('public\.(\"?)([a-z_][a-z0-9_]*)\1', (\d+), (true|false)\);$")
_ENCODING = re.compile(r"^SET client_encoding = '(\w+)';$")
_IGNORED = re.compile(
    r"^(|--.*|SET [a-z_]+ = [^;]*;|SELECT pg_catalog\.set_config\('search_path', '', false\);|\\(un)?restrict \w+)$"
)
_BATCH = 1 << 20  # bytes of COPY data sent at once


def _load(pg_restore: Path, staged: str, file: Path, entries: int, progress: Progress | None) -> None:
    """Put the file's rows into the staging database, in one transaction: all or none."""
    with tempfile.TemporaryFile() as errors, psycopg.connect(staged, row_factory=dict_row) as conn:
        proc = subprocess.Popen(
            [str(pg_restore), "--data-only", "-f", "-", str(file)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        assert proc.stdout is not None
        try:
            tables = {t["name"]: t for t in conn.execute(sql("restore.tables")).fetchall()}
            # The staging database keeps its own record of the repeatable files it ran: the
            # file's is about functions a restore never brings (they come from the migrations).
            tables.pop(REPEATABLES, None)
            keys = conn.execute(sql("restore.foreign_keys")).fetchall()
            _set_aside(conn, tables, keys)
            _copy_rows(conn, proc.stdout, tables, file, lambda done, name: progress and progress(done, entries, name))
            for key in keys:  # checks every row the file brought against every foreign key
                conn.execute(
                    pgsql.SQL("ALTER TABLE {} ADD CONSTRAINT {} " + key["definition"]).format(
                        pgsql.Identifier(key["tbl"]), pgsql.Identifier(key["name"])
                    )
                )
            _set_aside(conn, tables, [], undo=True)
            # A restricted project's read policies follow the rows just loaded (migration 0035:
            # the table's own trigger was off for the load).
            if first(conn, "SELECT to_regprocedure('public.org_project_policies_sync(boolean)') AS f")["f"]:
                conn.execute("SELECT public.org_project_policies_sync()")
            if proc.wait() != 0:
                errors.seek(0)
                reason = errors.read().decode(errors="replace").strip().splitlines() or [f"exit code {proc.returncode}"]
                raise InputError(f"{file} is not a readable backup: {reason[-1].split(': ', 1)[-1][:200]}")
            conn.commit()
        except psycopg.Error as exc:
            raise InputError(f"{file}: its rows do not fit cli-org's schema: {first_line(exc)}") from None
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()


def _set_aside(conn: Conn, tables: dict[str, DictRow], keys: list[DictRow], undo: bool = False) -> None:
    """For the load only (one transaction, in a database nobody else reaches): the tables'
    triggers off (they would rewrite or refuse rows that are history, not new writes),
    forced row-level security lifted (a non-superuser owner would be held to the policies),
    the foreign keys dropped (made again after), and the rows the migrations wrote removed."""
    for name, table in tables.items():
        ident = pgsql.Identifier(name)
        for trigger in table["triggers"]:
            verb = "ENABLE" if undo else "DISABLE"
            conn.execute(pgsql.SQL(f"ALTER TABLE {{}} {verb} TRIGGER {{}}").format(ident, pgsql.Identifier(trigger)))
        if table["forced"]:
            force = "FORCE" if undo else "NO FORCE"
            conn.execute(pgsql.SQL(f"ALTER TABLE {{}} {force} ROW LEVEL SECURITY").format(ident))
    for key in keys:
        conn.execute(
            pgsql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
                pgsql.Identifier(key["tbl"]), pgsql.Identifier(key["name"])
            )
        )
    if not undo and tables:
        conn.execute(pgsql.SQL("TRUNCATE {}").format(pgsql.SQL(", ").join(map(pgsql.Identifier, tables))))


def _copy_rows(
    conn: Conn, lines: IO[bytes], tables: dict[str, DictRow], file: Path, loaded: Callable[[int, str], object]
) -> None:
    """Read pg_restore's data text line by line; COPY each table's rows with a statement of
    cli-org's own (known table, known columns) and set each known sequence."""
    sequences = {r["name"] for r in conn.execute(sql("restore.sequences")).fetchall()}
    done = 0
    for raw in lines:
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        if copy := _COPY.match(line):
            if copy.group(2) == REPEATABLES:  # read past (see _load)
                for row in lines:
                    if row in (b"\\.\n", b"\\."):
                        break
                continue
            table = tables.get(copy.group(2))
            columns = [_COLUMN.match(c) for c in copy.group(3).split(", ")]
            if table is None or not all(c and c.group(2) in table["columns"] for c in columns):
                raise InputError(f"{file}: rows for a table or column cli-org's schema does not have: {line[:200]}")
            statement = pgsql.SQL("COPY {} ({}) FROM STDIN").format(
                pgsql.Identifier(copy.group(2)),
                pgsql.SQL(", ").join(pgsql.Identifier(c.group(2)) for c in columns if c),
            )
            with conn.cursor().copy(statement) as out:
                batch: list[bytes] = []
                size = 0
                for row in lines:
                    if row in (b"\\.\n", b"\\."):
                        break
                    batch.append(row)
                    size += len(row)
                    if size >= _BATCH:
                        out.write(b"".join(batch))
                        batch, size = [], 0
                else:
                    raise InputError(f"{file} is not a readable backup: the rows of {copy.group(2)} are cut short")
                out.write(b"".join(batch))
            done += 1
            loaded(done, copy.group(2))
        elif setval := _SETVAL.match(line):
            if setval.group(2) not in sequences:
                raise InputError(f"{file}: a position for a sequence cli-org's schema does not have: {line[:200]}")
            conn.execute(
                "SELECT setval(%s::regclass, %s, %s)",
                (pgsql.Identifier(setval.group(2)).as_string(conn), int(setval.group(3)), setval.group(4) == "true"),
            )
        elif (encoding := _ENCODING.match(line)) and encoding.group(1) != "UTF8":
            raise InputError(f"{file} holds text in {encoding.group(1)}; a cli-org database is UTF8")
        elif not _IGNORED.match(line):
            raise InputError(f"{file} holds a statement a cli-org backup cannot: {line[:200]}")


def _swap(
    admin: Conn, target: str, staging: str, exists: bool, roles: list[str], wait: float
) -> tuple[str | None, list[str], list[str]]:
    """Put the staging database and its member group in place, in one transaction; the old
    database and group are kept, renamed. Returns the kept name, the roles made and the
    roles cut off (see _reconcile)."""
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    kept = f"{target}_replaced_{stamp}"[:63]
    group, staged_group = f"{target}_member", f"{staging}_member"
    if exists:
        # No session holds the restore up. New ones are kept out, the others
        # ended (a member's idle login included); one the admin may not end fails it below.
        admin.execute(pgsql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(pgsql.Identifier(target)))
        for session in admin.execute(sql("restore.sessions"), {"database": target}).fetchall():
            # A superuser's session, on a team server, may not be ended: named in the error below.
            with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
                admin.execute("SELECT pg_terminate_backend(%s, %s)", (session["pid"], round(wait * 1000)))
    try:
        with admin.transaction():
            admin.execute("SELECT set_config('lock_timeout', %s, true)", (f"{round(wait * 1000)}ms",))
            had_group = first(admin, "SELECT count(*) AS n FROM pg_roles WHERE rolname = %s", (group,))["n"] > 0
            created = _make_roles(admin, staged_group, roles)
            disabled = _reconcile(admin, target, group, roles) if had_group else []
            if had_group:
                admin.execute(
                    pgsql.SQL("ALTER ROLE {} RENAME TO {}").format(
                        pgsql.Identifier(group), pgsql.Identifier(f"{kept}_member")
                    )
                )
            if exists:
                old = pgsql.Identifier(kept)
                admin.execute(pgsql.SQL("ALTER DATABASE {} RENAME TO {}").format(pgsql.Identifier(target), old))
                # The kept database is the admin's to check, not the members'.
                admin.execute(pgsql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(old))
                if had_group:
                    admin.execute(
                        pgsql.SQL("REVOKE CONNECT ON DATABASE {} FROM {}").format(
                            old, pgsql.Identifier(f"{kept}_member")
                        )
                    )
                admin.execute(pgsql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(old))
            admin.execute(
                pgsql.SQL("ALTER DATABASE {} RENAME TO {}").format(pgsql.Identifier(staging), pgsql.Identifier(target))
            )
            admin.execute(
                pgsql.SQL("ALTER ROLE {} RENAME TO {}").format(pgsql.Identifier(staged_group), pgsql.Identifier(group))
            )
    except psycopg.Error as exc:
        if exists:
            admin.execute(pgsql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(pgsql.Identifier(target)))
        if isinstance(exc, psycopg.errors.ObjectInUse | psycopg.errors.LockNotAvailable):
            who = locks.describe(admin.execute(sql("restore.sessions"), {"database": target}).fetchall())
            raise DatabaseError(f"database {target!r} is in use by sessions this admin may not end: {who}") from None
        raise DatabaseError(f"cannot put the restored database in place: {first_line(exc)}") from None
    return (kept if exists else None), ([group] if not had_group else []) + created, disabled


def _make_roles(admin: Conn, group: str, roles: list[str]) -> list[str]:
    """Each agent's role, made when missing (without a login: a backup carries no
    passwords), and each put in the (staging) member group."""
    created = []
    for role in roles:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
            admin.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN").format(pgsql.Identifier(role)))
            created.append(role)
        admin.execute(pgsql.SQL("GRANT {} TO {}").format(pgsql.Identifier(group), pgsql.Identifier(role)))
    return created


def _reconcile(admin: Conn, target: str, group: str, roles: list[str]) -> list[str]:
    """A role in the org's member group that no agent of the restored data has (an
    agent made after the backup) would stay a "ghost" member. It leaves the group; a role
    named after the database (`<database>_<agent>`, as `agents add` makes them) also loses
    its login. A role mapped with --role may serve elsewhere, so it keeps its login, and no
    role is dropped: the kept database still grants to them. Returns the roles cut off."""
    ghosts = [r["role"] for r in admin.execute(sql("restore.ghosts"), {"group": group, "agents": roles}).fetchall()]
    for ghost in ghosts:
        admin.execute(pgsql.SQL("REVOKE {} FROM {}").format(pgsql.Identifier(group), pgsql.Identifier(ghost)))
        if ghost.startswith(f"{target}_"):
            admin.execute(pgsql.SQL("ALTER ROLE {} NOLOGIN").format(pgsql.Identifier(ghost)))
    return ghosts
