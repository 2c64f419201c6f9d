"""The migration runner: from empty, twice, and from two processes at once; the repeatable
files, run again when their text changes; a database of the runner before them."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli_org.checks import rules
from cli_org.db import embedded
from cli_org.db.connect import connect
from cli_org.db.migrate import available, behind, migrate, pending, repeatables
from cli_org.store.bootstrap import init, state
from tests.databases import fresh_database

pytestmark = pytest.mark.slow


def _tables(conn):
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").fetchall()
    conn.rollback()  # library calls take an idle connection (cli_org/db/session.py)
    return [r["tablename"] for r in rows]


def _possible(server):
    """The migrations this server can apply: on one without pgvector (docs/operations.md, Team server),
    those that require it wait."""
    return [m for m in available() if server.vectors or "vector" not in m.needs]


def _files(server):
    """The repeatable files this server can apply (the vectors' waits for pgvector)."""
    return [m for m in repeatables() if server.vectors or "vector" not in m.needs]


def _order(server):
    """What migrating from empty applies, in order: the function files, the numbered
    migrations, then the other repeatable files (triggers, policies, grants)."""
    files = _files(server)
    return [m for m in files if m.first] + _possible(server) + [m for m in files if not m.first]


def test_from_empty_database_then_again(blank_db):
    possible = _possible(blank_db.server)
    with connect(blank_db.settings) as conn:
        assert pending(conn) is None
        conn.commit()
        applied = migrate(conn)
        # The function files, the numbered migrations in order, then the other repeatable files.
        assert [m.label for m in applied] == [m.label for m in _order(blank_db.server)]
        assert {"org_agents", "memory_facts", "schema_migrations", "schema_repeatables"} <= set(_tables(conn))
        # (the vectors' file, when it waits, waits with the migrations it follows)
        assert pending(conn) == [m for m in available() if m not in possible]
        assert migrate(conn) == []
        count = conn.execute("SELECT count(*) AS n FROM schema_migrations").fetchone()["n"]
        assert count == len(possible)
        assert _ran(conn) == [(m.name, m.checksum) for m in _files(blank_db.server)]


def test_two_processes_at_once(blank_db):
    code = (
        "from cli_org.config import Settings; from cli_org.db.connect import connect;"
        "from cli_org.db.migrate import migrate; import os, json;"
        "c = connect(Settings.from_env()); print(json.dumps([m.label for m in migrate(c)]))"
    )
    env = {**__import__("os").environ, **blank_db.env}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    applied = sorted(__import__("json").loads(out) for out, _ in outputs)
    # Exactly one process did the work; the other waited on the lock and found nothing to do.
    assert applied[0] == []
    assert applied[1] == [m.label for m in _order(blank_db.server)]
    with connect(blank_db.settings) as conn:
        count = conn.execute("SELECT count(*) AS n FROM schema_migrations").fetchone()["n"]
        assert count == len(_possible(blank_db.server))


def test_failed_migration_leaves_nothing_half_applied(blank_db, monkeypatch):
    from cli_org.db import migrate as mod

    good = available()
    broken = mod.Migration(9999, "broken", "CREATE TABLE half_done (id int); SELECT 1/0;")
    monkeypatch.setattr(mod, "available", lambda: [*good, broken])
    with connect(blank_db.settings) as conn:
        try:
            migrate(conn)
        except Exception as exc:  # the division by zero
            assert "division by zero" in str(exc)
        else:
            raise AssertionError("broken migration did not fail")
        assert "half_done" not in _tables(conn)
        versions = [r["version"] for r in conn.execute("SELECT version FROM schema_migrations")]
        assert 9999 not in versions and len(versions) == len(_possible(blank_db.server))


# --- repeatable files ------------------------------------------------------------------


def _ran(conn) -> list[tuple[str, str]]:
    rows = conn.execute("SELECT name, checksum FROM schema_repeatables ORDER BY name").fetchall()
    conn.rollback()
    return [(r["name"], r["checksum"]) for r in rows]


def _caps(conn) -> tuple[int, int]:
    row = conn.execute("SELECT * FROM org_pin_caps()").fetchone()
    conn.rollback()
    return row["org_cap"], row["project_cap"]


# An older copy of one function the repeatable file defines, as an older cli-org left it.
OLDER_CAPS = (
    "CREATE OR REPLACE FUNCTION public.org_pin_caps(OUT org_cap integer, OUT project_cap integer)"
    " LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $$ SELECT 1, 1 $$"
)


def test_a_changed_repeatable_file_runs_again_on_init_and_an_unchanged_one_does_not(blank_db):
    url = blank_db.server.url(blank_db.name)
    files = _files(blank_db.server)
    waiting = [m.label for m in available() if m not in _possible(blank_db.server)]  # for pgvector
    assert "repeatable/write_checks" in init(blank_db.settings, "boss").applied
    with connect(blank_db.settings) as conn:
        conn.execute(OLDER_CAPS)
        conn.commit()
    # Its text is the one that ran: init leaves the function alone, and nothing is pending.
    assert init(blank_db.settings).applied == []
    assert state(url)["pending_migrations"] == waiting
    with connect(blank_db.settings) as conn:
        assert _caps(conn) == (1, 1)
        # The file changed since it ran (a test-only edit of the checksum it recorded).
        conn.execute("UPDATE schema_repeatables SET checksum = 'older' WHERE name = 'write_checks'")
        conn.commit()
        assert behind(conn) == ["repeatable/write_checks"]
    assert state(url)["pending_migrations"] == sorted([*waiting, "repeatable/write_checks"], key=_pending_order)
    assert init(blank_db.settings).applied == ["repeatable/write_checks"]
    with connect(blank_db.settings) as conn:
        assert _caps(conn) == (rules.PIN_CAP_ORG, rules.PIN_CAP_PROJECT)
        assert _ran(conn) == [(m.name, m.checksum) for m in files]
        assert behind(conn) == []
    assert init(blank_db.settings).applied == []


def _pending_order(label: str) -> tuple[bool, str]:
    """pending() lists the numbered migrations, then the repeatable files by name."""
    return label.startswith("repeatable/"), label


def _schema(db) -> str:
    """The database's schema as pg_dump writes it, its name replaced (roles are named after it)."""
    out = subprocess.run(
        # The server wheel's, the newest: it dumps a team server's older PostgreSQL too.
        [str(embedded.tool_path("pg_dump")), "--schema-only", "-d", db.server.url(db.name)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # \restrict and \unrestrict carry a random key per dump.
    lines = [line for line in out.splitlines() if not line.startswith(("\\restrict", "\\unrestrict"))]
    return _steady("\n".join(lines)).replace(db.name, "DB")


def _steady(dump: str) -> str:
    """A dump without what differs between two databases of one schema: PostgreSQL 15.20
    (Debian's, November 2026) stamps each column with a `pg_attver` option of its own."""
    return re.sub(r"pg_attver=\d+", "pg_attver=N", dump)


# The last commit before the functions, triggers and policies moved to repeatable files: its
# migrations are those every database made until then ran (cli_org/db/migrate.py, REBASED).
BEFORE_THE_MOVE = "d9cd9c6c634f2b8c0b351d908a0a093e17564933"
ROOT = Path(__file__).resolve().parents[1]


def _migrations_before_the_move() -> tuple[list, list]:
    """The numbered migrations and the repeatable file as they were, read from git."""
    from cli_org.db.migrate import Migration

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout

    known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", BEFORE_THE_MOVE], capture_output=True)
    if not (ROOT / ".git").exists() or known.returncode != 0:
        pytest.skip("no history back to the move here (not a git checkout, or a shallow one)")
    folder = "cli_org/migrations/"
    numbered, files = [], []
    for name in git("ls-tree", "--name-only", BEFORE_THE_MOVE, folder, folder + "repeatable/").split():
        text = git("show", f"{BEFORE_THE_MOVE}:{name}")
        base = name.rsplit("/", 1)[-1].removesuffix(".sql")
        needs = tuple(re.findall(r"^-- requires: ([a-z_]+)\s*$", text, re.M))
        if "/repeatable/" in name:
            files.append(Migration(None, base, text, needs))
        elif re.match(r"\d{4}_", base):
            numbered.append(Migration(int(base[:4]), base[5:], text, needs))
    return sorted(numbered, key=lambda m: m.version), files


def test_a_database_the_migrations_before_the_move_made_ends_as_a_new_one(server, blank_db, monkeypatch):
    """A database every migration before the move made (the shipped state; on a server
    without pgvector, with the vectors' migrations pending): the next `init` applies the
    repeatable files, and schema (functions, triggers, policies, grants) and records are then
    exactly a new database's."""
    from cli_org.db import migrate as runner

    numbered, files = _migrations_before_the_move()
    with monkeypatch.context() as before:
        before.setattr(runner, "available", lambda: numbered)
        before.setattr(runner, "repeatables", lambda: files)
        with connect(blank_db.settings) as conn:
            migrate(conn)
    old = _schema(blank_db)
    with connect(blank_db.settings) as conn:
        # `db status` before the upgrade: the files are pending for `init`; they wait for
        # pgvector only where the database lacks it (it said "wait" where it had it).
        waiting = runner.missing_extensions(conn)
        has_vector = conn.execute("SELECT count(*) AS n FROM pg_extension WHERE extname = 'vector'").fetchone()
        conn.commit()
        assert waiting == ({} if has_vector["n"] else {"vector": waiting.get("vector")}), waiting
        newest = max(m.version for m in numbered)
        # the repeatable files, and the numbered migrations written since the move
        assert all(m.version is None or m.version > newest for m in migrate(conn))
        assert migrate(conn) == []
        upgraded = _ran(conn)
    with fresh_database(server) as new, connect(new.settings) as conn:
        migrate(conn)
        assert _ran(conn) == upgraded
        assert _schema(new) == _schema(blank_db)

    # Nothing was taken away or added, and nothing changed but two functions' text: the policy
    # sync passes over a policy not made yet (the vectors' file makes theirs after the others),
    # and the erasure of a fact's vectors no longer makes their delete policy (that file does).
    def unchanged(dump: str) -> str:
        return re.sub(
            r"(CREATE FUNCTION public\.(org_project_policies_sync|org_erase_vectors)).*?(?=\n--\n)",
            r"\1",
            dump,
            flags=re.S,
        )

    # A property of the move itself, which holds while no numbered migration came after it
    # (a later one adds tables; the equality with a new database above holds for every one).
    if newest == max(m.version for m in runner.available()):
        assert unchanged(old) == unchanged(_schema(blank_db)) != _schema(blank_db)


def test_a_database_left_part_way_by_the_migrations_before_the_move_is_refused(blank_db, monkeypatch):
    """Its functions and policies are some older migration's, which the repeatable files
    cannot tell how to replace: one line, and nothing is applied."""
    from cli_org.db import migrate as runner
    from cli_org.errors import DatabaseError

    numbered, files = _migrations_before_the_move()
    with monkeypatch.context() as before:
        before.setattr(runner, "available", lambda: [m for m in numbered if m.version < 30])
        before.setattr(runner, "repeatables", lambda: [])
        with connect(blank_db.settings) as conn:
            migrate(conn)
    with connect(blank_db.settings) as conn:
        with pytest.raises(DatabaseError, match="stopped before migration 0030_context_reads.*from before that move"):
            migrate(conn)
        assert conn.execute("SELECT max(version) AS v FROM schema_migrations").fetchone()["v"] == 29


def _dump(db) -> str:
    """Everything pg_dump writes of the database, privileges and the database's own included,
    with its name replaced: all but when each migration was applied."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from cli_org.db import embedded

    params = conninfo_to_dict(db.server.url(db.name))
    password = params.pop("password", None)
    out = subprocess.run(
        [
            str(embedded.tool_path("pg_dump")),
            "--create",
            "--enable-row-security",
            "--exclude-table-data=schema_migrations",
        ]
        + ["-d", make_conninfo(**params)],
        env={**os.environ, **({"PGPASSWORD": str(password)} if password else {})},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    out = re.sub(r"^\\(un)?restrict \S+$", "", out, flags=re.M)  # a random key per dump
    with connect(db.settings) as conn:
        versions = [(r["version"], r["name"]) for r in conn.execute("SELECT version, name FROM schema_migrations")]
    return _steady(out).replace(db.name, "DB") + repr(sorted(versions))


def test_a_copy_of_the_template_is_what_migrating_makes(server, template, blank_db):
    """Every test's `org` is a copy of one database migrated for the session, given its own
    member group (tests/conftest.py): it must be what migrating from empty makes."""
    from tests.databases import fresh_database

    with connect(blank_db.settings, bounded=False) as conn:
        migrate(conn)
    with fresh_database(server, template) as copy:
        assert _dump(copy) == _dump(blank_db)
