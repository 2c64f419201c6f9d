"""The migration runner: from empty, twice, and from two processes at once."""

import subprocess
import sys

from cli_org.db.connect import connect
from cli_org.db.migrate import available, migrate, pending


def _tables(conn):
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").fetchall()
    conn.rollback()  # library calls take an idle connection (cli_org/db/session.py)
    return [r["tablename"] for r in rows]


def _possible(server):
    """The migrations this server can apply: on one without pgvector (docs/operations.md, Team server),
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
