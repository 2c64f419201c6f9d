"""The migration runner: from empty, twice, and from two processes at once."""

import os
import re
import subprocess
import sys

from cli_org.db.connect import connect
from cli_org.db.migrate import available, migrate, pending


def _tables(conn):
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").fetchall()
    conn.rollback()  # library calls take an idle connection (cli_org/db/session.py)
    return [r["tablename"] for r in rows]


def _possible(server):
    """The migrations this server can apply: on one without pgvector (README, Team server),
    those that require it wait."""
    return [m for m in available() if server.vectors or "vector" not in m.needs]


def test_from_empty_database_then_again(blank_db):
    possible = _possible(blank_db.server)
    with connect(blank_db.settings) as conn:
        assert pending(conn) is None
        conn.commit()
        applied = migrate(conn)
        assert [m.version for m in applied] == [m.version for m in possible]
        assert {"org_agents", "memory_facts", "schema_migrations"} <= set(_tables(conn))
        assert pending(conn) == [m for m in available() if m not in possible]
        assert migrate(conn) == []
        count = conn.execute("SELECT count(*) AS n FROM schema_migrations").fetchone()["n"]
        assert count == len(possible)


def test_two_processes_at_once(blank_db):
    code = (
        "from cli_org.config import Settings; from cli_org.db.connect import connect;"
        "from cli_org.db.migrate import migrate; import os, json;"
        "c = connect(Settings.from_env()); print(json.dumps([m.version for m in migrate(c)]))"
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
    assert applied[1] == [m.version for m in _possible(blank_db.server)]
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


def _dump(db) -> str:
    """Everything pg_dump writes of the database, privileges and the database's own included,
    with its name replaced: all but when each migration was applied."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from cli_org.db import embedded

    params = conninfo_to_dict(db.server.url(db.name))
    password = params.pop("password", None)
    out = subprocess.run(
        [str(embedded.tool_path("pg_dump")), "--create", "--exclude-table-data=schema_migrations"]
        + ["-d", make_conninfo(**params)],
        env={**os.environ, **({"PGPASSWORD": str(password)} if password else {})},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    out = re.sub(r"^\\(un)?restrict \S+$", "", out, flags=re.M)  # a random key per dump
    with connect(db.settings) as conn:
        versions = [(r["version"], r["name"]) for r in conn.execute("SELECT version, name FROM schema_migrations")]
    return out.replace(db.name, "DB") + repr(sorted(versions))


def test_a_copy_of_the_template_is_what_migrating_makes(server, template, blank_db):
    """Every test's `org` is a copy of one database migrated for the session, given its own
    member group (tests/conftest.py): it must be what migrating from empty makes."""
    from conftest import fresh_database

    with connect(blank_db.settings, bounded=False) as conn:
        migrate(conn)
    with fresh_database(server, template) as copy:
        assert _dump(copy) == _dump(blank_db)
