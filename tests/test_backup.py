"""The embedded server keeps its port; `db backup` / `db restore` round-trip every table,
recreate the agents' roles, refuse what they should, and leave nothing half-written."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql as pgsql

from cli_org.archive.importer import import_sessions
from cli_org.archive.memory_versions import capture
from cli_org.config import Settings
from cli_org.db import embedded
from cli_org.db.backup import backup, restore
from cli_org.db.connect import connect
from cli_org.errors import AccessDenied, DatabaseError, InputError, NotFound
from cli_org.faces.cli import cli as group
from cli_org.store import facts, links, notebook, pins
from cli_org.store.vectors import embed_missing
from cli_org.vault.embed import embed_pending
from cli_org.vault.scan import scan
from tests.fakes import HashEmbedder


@pytest.fixture
def data_dir(server):
    if server.data_dir is None:
        pytest.skip("CLI_ORG_TEST_DATABASE_URL is set: the embedded server is not under test")
    # Not under pytest's temporary root: the server's own user must reach it, and another
    # pytest run re-secures that root (as for the suite's server, tests/conftest.py).
    folder = Path(tempfile.mkdtemp(prefix="cli-org-test-data-"))
    path = folder / "data"
    yield path
    embedded.stop(path)
    shutil.rmtree(folder, ignore_errors=True)


def _run(env: dict[str, str], *args: str):
    result = CliRunner(env=env).invoke(group, list(args))
    return result.exit_code, result.stdout, result.stderr


# --- the kept port ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_restart_keeps_the_port(data_dir):
    env = {"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_DATABASE_URL": ""}
    first = embedded.ensure_running(data_dir)
    assert embedded.port_file(data_dir).read_text().strip() == str(first.port)
    embedded.stop(data_dir)
    assert f"not running (data {data_dir}, port {first.port} kept)" in _run(env, "db", "status")[1]
    code, out, _ = _run(env, "db", "start")
    assert code == 0 and f"port {first.port}," in out
    second = embedded.running(data_dir)
    assert second is not None and second.port == first.port and second.pid != first.pid


@pytest.mark.slow
def test_a_taken_port_is_one_clear_line_and_can_be_moved(data_dir):
    env = {"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_DATABASE_URL": ""}
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        embedded.set_port(data_dir, taken)
        code, out, err = _run(env, "db", "start")
        assert code == 1 and out == ""
        assert err.count("\n") == 1 and f"port {taken} on 127.0.0.1" in err and "taken" in err
        assert "cli-org db start --port N" in err
        # Any command that needs the server says the same.
        code, _, err = _run(env, "facts")
        assert code == 1 and "taken by another program" in err
        with pytest.raises(DatabaseError, match="taken"):
            embedded.ensure_running(data_dir)
        assert embedded.running(data_dir) is None
        # Moved to a free port, and kept there.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        code, out, _ = _run(env, "db", "start", "--port", str(free))
        assert code == 0 and f"port {free}," in out
    # A running server is not moved under its clients.
    code, _, err = _run(env, "db", "start", "--port", str(taken))
    assert code == 1 and "`cli-org db stop` first" in err
    assert embedded.running(data_dir).port == free
    assert _run(env, "db", "start", "--port", "80")[0] == 2  # below 1024: a usage error


@pytest.mark.slow
def test_a_port_in_use_asked_for_is_never_kept(data_dir):
    """`db start --port N` with N taken: one line naming N and what to do; the kept port is
    unchanged, so the next command (and agents' saved URLs) still work."""
    env = {"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_DATABASE_URL": ""}
    kept = embedded.ensure_running(data_dir).port
    embedded.stop(data_dir)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        code, out, err = _run(env, "db", "start", "--port", str(taken))
        assert code == 1 and out == "" and err.count("\n") == 1
        assert f"port {taken} on 127.0.0.1 is taken by another program, so the server did not start" in err
        assert f"keeps port {kept}" in err and "cli-org db start --port N" in err
        assert embedded.saved_port(data_dir) == kept and embedded.running(data_dir) is None
    code, out, _ = _run(env, "db", "start")
    assert code == 0 and f"port {kept}," in out


@pytest.mark.slow
def test_a_corrupt_port_file_is_refused(data_dir):
    data_dir.mkdir(parents=True)
    embedded.port_file(data_dir).write_text("nonsense\n")
    with pytest.raises(DatabaseError, match="not a port"):
        embedded.ensure_running(data_dir)


def test_db_start_with_a_url_is_refused():
    code, _, err = _run({"CLI_ORG_DATABASE_URL": "postgresql://u@127.0.0.1:1/x"}, "db", "start")
    assert code == 1 and "no embedded server" in err


# --- backup and restore ----------------------------------------------------------------


def _fill(org, tmp_path: Path) -> None:
    """Something in every kind of table: facts (current, retired, superseded), notebooks
    with history, pins, a typed link, a vault with vectors, fact vectors, an archive, memory versions."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "deploy.md").write_text(
        "# Deploy\n\nDeploys run at night from the main branch.\n\n## Rollback\n\nUse the last tag.\n"
    )
    (vault / "auth.md").write_text("# Auth\n\nTokens expire after an hour. See [[deploy]].\n")
    projects = tmp_path / "projects"
    (projects / "-w").mkdir(parents=True)
    record = {
        "type": "user",
        "sessionId": "S",
        "uuid": "m1",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "message": {"content": "the deploy failed"},
    }
    (projects / "-w" / "S.jsonl").write_text(json.dumps(record) + "\n")
    memory = tmp_path / "memory.md"
    memory.write_text("- deploys at night\n")
    with connect(org.settings) as conn:
        scan(conn, vault)
        embed_pending(conn, HashEmbedder())
        import_sessions(conn, {"claude-code": projects})
        capture(conn, [memory])
    with org.as_agent("bot") as conn:
        old = facts.remember(conn, "deploys", "Deploys run at night", source="docs/deploy.md").id
        # what the source said when written (migration 0042): the round trip keeps it
        noon = facts.remember(
            conn, "deploys", "Deploys run at noon", source="docs/deploy.md", supersedes=old, source_hash="ab" * 32
        ).id
        gone = facts.remember(conn, "tokens", "Tokens last a day", source="docs/auth.md").id
        facts.forget(conn, gone, "they last an hour")
        pinned = facts.remember(conn, "rollback", "Roll back to the last tag", source="docs/deploy.md").id
        pins.pin(conn, pinned)
        links.link(conn, pinned, "depends-on", noon, reason="a rollback waits for the deploy")
        notebook.add(conn, "memory", "bot's private note about the staging host")
        notebook.add(conn, "user", "Prefers short answers")
        embed_missing(conn, HashEmbedder())
    with org.as_agent("other") as conn:
        notebook.add(conn, "memory", "other's private note")


HASHES = """
SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1
"""


def content_hashes(conninfo: str) -> dict[str, tuple[int, str]]:
    """Each table's row count and a hash of all its rows in a fixed order (as the superuser,
    so row-level security hides nothing)."""
    out = {}
    with psycopg.connect(conninfo) as conn:
        for (name,) in conn.execute(HASHES).fetchall():
            row = conn.execute(
                pgsql.SQL(
                    "SELECT count(*), md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) FROM {} t"
                ).format(pgsql.Identifier(name))
            ).fetchone()
            out[name] = (row[0], row[1])
        for (name,) in conn.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'").fetchall():
            out[f"sequence {name}"] = conn.execute(
                pgsql.SQL("SELECT last_value FROM {}").format(pgsql.Identifier(name))
            ).fetchone()
    return out


def security(conninfo: str) -> dict[str, list]:
    """Which tables force row-level security, their policies, and every grant on them."""
    with psycopg.connect(conninfo) as conn:
        return {
            "forced": conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relrowsecurity AND c.relforcerowsecurity ORDER BY 1"
            ).fetchall(),
            "policies": conn.execute(
                "SELECT tablename, policyname, cmd, roles::text, qual, with_check FROM pg_policies"
                " WHERE schemaname = 'public' ORDER BY 1, 2"
            ).fetchall(),
            "grants": conn.execute(
                "SELECT table_name, grantee, privilege_type FROM information_schema.role_table_grants"
                " WHERE table_schema = 'public' ORDER BY 1, 2, 3"
            ).fetchall(),
            "columns": conn.execute(
                "SELECT table_name, column_name, grantee, privilege_type FROM information_schema.column_privileges"
                " WHERE table_schema = 'public' ORDER BY 1, 2, 3, 4"
            ).fetchall(),
            "functions": conn.execute(
                "SELECT p.proname, p.prosecdef, p.proconfig::text, p.proacl::text FROM pg_proc p"
                " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
                " AND p.proname LIKE 'org%%' ORDER BY 1, 3"
            ).fetchall(),
        }


@pytest.mark.slow
def test_round_trip_into_a_fresh_data_folder_is_identical(org, tmp_path, data_dir):
    _fill(org, tmp_path)
    dump = tmp_path / "org.dump"
    made = backup(org.settings, dump)
    assert dump.stat().st_size == made.bytes > 0 and made.database == org.name
    assert not list(tmp_path.glob(".*.partial"))
    assert dump.stat().st_mode & 0o777 == 0o600  # private notebooks inside: the owner's only
    before = content_hashes(org.server.url(org.name))
    for table in (
        "memory_facts",
        "notebook_entries",
        "notebook_versions",
        "memory_pins",
        "memory_links",
        "vault_chunks",
        "memory_fact_vectors",
        "archive_sessions",
        "archive_messages",
        "archive_memory_versions",
        "org_agents",
    ):
        assert before[table][0] > 0, f"the fixture left {table} empty"

    fresh = Settings.from_env(
        {"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_DATABASE": org.name, "CLI_ORG_DATABASE_URL": ""}
    )
    result = restore(fresh, dump)
    assert result.replaced is None and result.database == org.name
    # The member group and every agent's role, made without a login.
    assert set(result.roles_created) == {f"{org.name}_{n}" for n in ("member", "boss", "lead", "bot", "other")}
    server = embedded.running(data_dir)
    after = content_hashes(server.conninfo(org.name))
    assert after == before
    with psycopg.connect(server.conninfo(org.name)) as conn:
        hashes = conn.execute("SELECT source_hash FROM memory_facts WHERE source_hash IS NOT NULL").fetchall()
        assert hashes == [("ab" * 32,)]  # the source hash came back (migration 0042)
    with psycopg.connect(server.conninfo("postgres")) as conn:
        logins = conn.execute("SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname LIKE %s", (org.name + "\\_%",))
        assert {r[0]: r[1] for r in logins} == {r: False for r in result.roles_created}
    # The same row-level security, policies and grants as the original.
    assert security(server.conninfo(org.name)) == security(org.server.url(org.name))
    assert security(org.server.url(org.name))["forced"]
    # Grants and row-level security hold on the restored copy: another agent reads none
    # of bot's notebook, and bot reads its own; writes work and ids go on.
    with connect(fresh, "other") as conn:
        bodies = [e.body for s in notebook.show(conn).stores for e in s.entries]
        assert bodies == ["other's private note"]
        with pytest.raises(AccessDenied):
            notebook.show(conn, agent="bot")
        # Under the library, at the SQL level: RLS hides bot's rows from other.
        assert conn.execute("SELECT count(*) AS n FROM notebook_entries WHERE agent = 'bot'").fetchone()["n"] == 0
    with connect(fresh, "bot") as conn:
        assert any("staging host" in e.body for s in notebook.show(conn).stores for e in s.entries)
        new = facts.remember(conn, "after", "Written after the restore", source="docs/after.md").id
    assert new > max(f.id for f in _all_facts(org.settings))


def _all_facts(settings):
    with connect(settings) as conn:
        return facts.list_facts(conn, include_retired=True)


@pytest.mark.slow
def test_restore_refuses_a_database_that_is_not_empty(org, tmp_path):
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    with org.as_agent("bot") as conn:
        facts.remember(conn, "later", "Written after the backup", source="docs/later.md")
    before = content_hashes(org.server.url(org.name))
    code, out, err = _run(org.env, "db", "restore", str(dump))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "is not empty (1 facts, 4 agents); pass --force" in err
    assert content_hashes(org.server.url(org.name)) == before


@pytest.mark.slow
def test_force_replaces_and_keeps_the_old_database(org, tmp_path):
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    with org.as_agent("bot") as conn:
        facts.remember(conn, "later", "Written after the backup", source="docs/later.md")
    code, out, err = _run(org.env, "db", "restore", str(dump), "--force", "--json")
    assert code == 0, err
    result = json.loads(out)
    kept = result["replaced"]
    assert kept.startswith(f"{org.name}_replaced_") and result["roles_created"] == []
    try:
        assert [f.subject for f in _all_facts(org.settings)] == []
        with psycopg.connect(org.server.url(kept)) as conn:
            assert conn.execute("SELECT subject FROM memory_facts").fetchall() == [("later",)]
    finally:
        with psycopg.connect(org.server.admin_url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("DROP DATABASE {}").format(pgsql.Identifier(kept)))


@pytest.mark.slow
def test_a_restore_keeps_its_own_record_of_the_repeatable_files(org, tmp_path):
    """The file's record says the write checks ran with other text (as in a backup made by
    another cli-org). The functions come from the migrations, never from the file, so the
    restored database keeps the record of what its migrations ran: up to date."""
    from cli_org.db.migrate import behind, repeatables

    with org.admin() as conn:
        conn.execute("UPDATE schema_repeatables SET checksum = 'other'")
        conn.commit()
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    code, out, err = _run(org.env, "db", "restore", str(dump), "--force", "--json")
    assert code == 0, err
    with connect(org.settings) as conn:
        assert behind(conn) == []
        ran = conn.execute("SELECT name, checksum FROM schema_repeatables ORDER BY name").fetchall()
        assert [(r["name"], r["checksum"]) for r in ran] == [(m.name, m.checksum) for m in repeatables()]


@pytest.mark.slow
def test_a_failed_restore_leaves_the_database_as_it_was(org, tmp_path):
    """A backup whose load fails at its very end (here: a fact by an author the file's
    org_agents lacks, which only the foreign keys made again after the rows are in can
    see): the staging database is dropped and the real one is untouched, even with --force."""
    with org.admin() as conn:
        conn.execute("ALTER TABLE memory_facts DROP CONSTRAINT memory_facts_author_fkey")
        conn.commit()
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night", source="docs/deploy.md")
    with org.admin() as conn:
        conn.execute("UPDATE memory_facts SET author = 'nobody'")
        conn.commit()
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    with org.admin() as conn:
        conn.execute("TRUNCATE memory_facts CASCADE")
        conn.execute("ALTER TABLE memory_facts ADD FOREIGN KEY (author) REFERENCES org_agents (name)")
        conn.commit()
    _fill(org, tmp_path)
    before = content_hashes(org.server.url(org.name))
    code, out, err = _run(org.env, "db", "restore", str(dump), "--force")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "rows do not fit cli-org's schema" in err and "memory_facts_author_fkey" in err, err
    assert content_hashes(org.server.url(org.name)) == before
    with psycopg.connect(org.server.admin_url) as conn:
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (org.name + "\\_%",)).fetchall()
        group = conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (f"{org.name}_restoring_member",))
        assert group.fetchone()[0] == 0
    assert left == []


@pytest.mark.slow
def test_other_sessions_on_the_database_are_ended(org, tmp_path):
    """Another session (an MCP or web server) on the database: it is ended, and the swap
    goes ahead; the next session opens on the restored database."""
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    with org.as_agent("bot") as held:
        facts.remember(held, "later", "Written after the backup", source="docs/later.md")
        code, out, err = _run(org.env, "db", "restore", str(dump), "--force")
        assert code == 0, err
        with pytest.raises(psycopg.OperationalError):
            held.execute("SELECT 1")
    assert [f.subject for f in _all_facts(org.settings)] == []


@pytest.mark.slow
def test_bad_files_are_one_line(org, tmp_path):
    missing = tmp_path / "nope.dump"
    with pytest.raises(NotFound, match="does not exist"):
        restore(org.settings, missing)
    text = tmp_path / "notes.dump"
    text.write_text("PGDMX not really\n")
    code, out, err = _run(org.env, "db", "restore", str(text), "--json")
    assert code == 1 and out == "" and "not a cli-org backup" in json.loads(err)["error"]
    magic_only = tmp_path / "magic.dump"
    magic_only.write_bytes(b"PGDMP\x00\x01garbage")
    with pytest.raises(InputError, match="not a readable backup"):
        restore(org.settings, magic_only)
    good = tmp_path / "good.dump"
    backup(org.settings, good)
    cut = tmp_path / "cut.dump"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(InputError, match="not a readable backup"):
        restore(org.settings, cut, force=True)
    with pytest.raises(InputError, match="a folder"):
        backup(org.settings, tmp_path)
    with pytest.raises(NotFound, match="does not exist"):
        backup(org.settings, tmp_path / "no" / "such" / "x.dump")


@pytest.mark.slow
def test_a_dump_of_another_database_is_refused(blank_db, tmp_path):
    """A PostgreSQL dump that is not of a cli-org database, and a backup of another
    cli-org database than the configured one."""
    import subprocess

    with blank_db.admin() as conn:
        conn.execute("CREATE TABLE unrelated (x int)")
        conn.commit()
    dump = tmp_path / "plain.dump"
    target = blank_db.server.url(blank_db.name)
    subprocess.run([str(embedded.tool_path("pg_dump")), "-Fc", "-f", str(dump), "-d", target], check=True)
    with pytest.raises(InputError, match="not of a cli-org database"):
        restore(blank_db.settings, dump)
    with pytest.raises(Exception, match="not initialised: nothing to back up"):
        backup(blank_db.settings, tmp_path / "x.dump")


@pytest.mark.slow
def test_a_backup_of_another_database_is_refused(org, tmp_path):
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    other = Settings.from_env({**org.env, "CLI_ORG_DATABASE": "elsewhere"}) if org.server.data_dir else None
    if other is None:
        pytest.skip("the database name comes from the URL")
    with pytest.raises(InputError, match=f"backup of database '{org.name}', not 'elsewhere'"):
        restore(other, dump)


# --- a team server (CLI_ORG_DATABASE_URL): the tools on PATH --------------------------


def _url_env(org, path: str) -> dict[str, str]:
    return {"CLI_ORG_DATABASE_URL": org.server.url(org.name), "PATH": path}


@pytest.mark.slow
def test_with_a_url_the_tools_come_from_path(org, tmp_path, monkeypatch):
    """The server's own pg_dump/pg_restore, found on PATH (here: the wheel's folder, which
    is what a team server's client package puts there): a round trip over the same database."""
    if org.server.data_dir is None:
        pytest.skip("needs the embedded server's tools to stand in for the PATH ones")
    _fill(org, tmp_path)
    for key, value in _url_env(org, str(embedded.tool_path("pg_dump").parent)).items():
        monkeypatch.setenv(key, value)
    settings = Settings.from_env()
    dump = tmp_path / "org.dump"
    made = backup(settings, dump)
    assert made.tool == str(embedded.tool_path("pg_dump"))
    before = content_hashes(org.server.url(org.name))
    result = restore(settings, dump, force=True)
    assert result.replaced and result.roles_created == []
    assert content_hashes(org.server.url(org.name)) == before


@pytest.mark.slow
def test_a_missing_or_older_tool_on_path_is_one_line(org, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    code, out, err = _run(_url_env(org, str(empty)), "db", "backup", str(tmp_path / "x.dump"))
    assert code == 1 and out == "" and err.count("\n") == 1 and "pg_dump is not on PATH" in err
    old = empty / "pg_dump"
    old.write_text("#!/bin/sh\necho 'pg_dump (PostgreSQL) 9.6.24'\n")
    old.chmod(0o755)
    code, out, err = _run(_url_env(org, str(empty)), "db", "backup", str(tmp_path / "x.dump"))
    assert code == 1 and "is PostgreSQL 9, older than the server" in err
    assert not (tmp_path / "x.dump").exists()


@pytest.mark.slow
def test_one_restore_at_a_time_and_progress(org, tmp_path):
    from cli_org.db import locks

    dump = tmp_path / "org.dump"
    seen: list[tuple[int, int, str]] = []
    made = backup(org.settings, dump, progress=lambda done, total, what: seen.append((done, total, what)))
    assert seen and seen[-1][0] == seen[-1][1] == made.tables
    assert [s[0] for s in seen] == sorted(s[0] for s in seen)
    with psycopg.connect(org.server.url("postgres"), autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (locks.RESTORE, org.name))
        with pytest.raises(DatabaseError, match="another restore into"):
            restore(org.settings, dump, force=True)
    seen.clear()
    result = restore(org.settings, dump, force=True, progress=lambda d, t, w: seen.append((d, t, w)))
    assert result.replaced and seen and all(0 < d <= t for d, t, _ in seen)


# --- a hostile backup, a member who holds on, a ghost (issue 21, findings 4 and 10) ------------

# A plpgsql body that is harmless in the database it was made in and runs a program
# (`touch MARKER`) in any other, such as the one a restore loads the file into.
PROGRAM = """
BEGIN
    IF current_database() <> {home} THEN
        EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'touch ' || {marker});
    END IF;
    RETURN {result};
END
"""


@pytest.fixture
def marker():
    """Where the hostile program leaves its mark: a folder the database server's own user
    can write (pytest's temporary root is private to the user running the tests)."""
    folder = Path(tempfile.mkdtemp(prefix="cli-org-marker-"))
    folder.chmod(0o777)
    yield folder / "pwned"
    shutil.rmtree(folder, ignore_errors=True)


def _hostile_dump(org, tmp_path: Path, marker: Path, function: str, result: str, check: str) -> Path:
    """A backup made by the real pg_dump after the admin (re)defined `function` with the
    program in its body and added a CHECK on memory_facts calling it, with a fact in the
    table, so that loading the file's schema and data runs the program."""
    with org.admin() as conn:
        body = PROGRAM.format(
            home=pgsql.Literal(org.name).as_string(conn),
            marker=pgsql.Literal(str(marker)).as_string(conn),
            result=result,
        )
        conn.execute(f"{function} LANGUAGE plpgsql AS {pgsql.Literal(body).as_string(conn)}")
        conn.execute(f"ALTER TABLE memory_facts ADD CONSTRAINT evil CHECK ({check})")
        conn.commit()
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night", source="docs/deploy.md")
    dump = tmp_path / "hostile.dump"
    backup(org.settings, dump)
    assert not marker.exists()
    return dump


def _databases(org) -> list[str]:
    with psycopg.connect(org.server.admin_url) as conn:
        return [r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (org.name + "%",))]


def _roles(org) -> dict[str, bool]:
    with psycopg.connect(org.server.admin_url) as conn:
        rows = conn.execute("SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname LIKE %s", (org.name + "%",))
        return {r[0]: r[1] for r in rows}


@pytest.mark.slow
@pytest.mark.attack("restore")
def test_a_backup_with_a_function_the_migrations_do_not_make_is_refused(org, tmp_path, marker):
    """A CHECK on memory_facts calling a function that runs a program: refused before
    anything is loaded; the program never runs, nothing changes, no role is made."""
    dump = _hostile_dump(
        org, tmp_path, marker, "CREATE FUNCTION public.org_evil() RETURNS boolean", "true", "public.org_evil()"
    )
    before = content_hashes(org.server.url(org.name))
    roles = _roles(org)
    code, out, err = _run(org.env, "db", "restore", str(dump), "--force")
    assert not marker.exists()
    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert "not made by cli-org's migrations" in err and "FUNCTION public org_evil()" in err
    assert content_hashes(org.server.url(org.name)) == before
    assert _databases(org) == [org.name] and _roles(org) == roles


@pytest.mark.slow
@pytest.mark.attack("restore")
def test_a_known_function_redefined_in_a_backup_never_runs(org, tmp_path, marker):
    """The program in the body of a function the migrations do make, called by a CHECK
    written into the table: every object in the file has a name the migrations make, so
    the load must not run the file's definitions at all. The restored schema is the
    migrations' own, the data the file's."""
    with org.admin() as conn:
        original = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'org_member_role'").fetchone()["prosrc"]
    dump = _hostile_dump(
        org,
        tmp_path,
        marker,
        "CREATE OR REPLACE FUNCTION public.org_member_role() RETURNS text",
        "current_database() || '_member'",
        "public.org_member_role() IS NOT NULL",
    )
    code, out, err = _run(org.env, "db", "restore", str(dump), "--force")
    assert not marker.exists()
    assert code == 0, err
    with psycopg.connect(org.server.url(org.name)) as conn:
        assert conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'org_member_role'").fetchone()[0] == original
        evil = conn.execute("SELECT count(*) FROM pg_constraint WHERE conname = 'evil'").fetchone()[0]
        assert evil == 0
        assert conn.execute("SELECT subject FROM memory_facts").fetchall() == [("deploys",)]


def _restore_process(org, dump: Path) -> subprocess.CompletedProcess:
    """`cli-org db restore --force` as its own process, as an admin runs it; a restore that
    waits on a member forever fails the test at the timeout instead of hanging the suite."""
    return subprocess.run(
        ["cli-org", "db", "restore", str(dump), "--force", "--json"],
        env={**os.environ, **org.env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.attack("restore")
@pytest.mark.parametrize("in_transaction", [False, True])
def test_a_members_idle_connection_does_not_hold_up_a_restore(org, tmp_path, in_transaction):
    """A member logged in with her own password sits idle (or idle in a transaction) on
    the database: the restore ends her session and goes ahead."""
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        bot.autocommit = not in_transaction
        bot.execute("SELECT count(*) FROM memory_facts").fetchone()
        done = _restore_process(org, dump)
        assert done.returncode == 0, done.stderr
        with pytest.raises(psycopg.OperationalError):
            bot.execute("SELECT 1").fetchone()
    # She logs in again, to the restored database.
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        assert bot.execute("SELECT org_me() AS me").fetchone()["me"] == "bot"


@pytest.mark.slow
@pytest.mark.attack("restore")
def test_the_kept_database_refuses_a_members_login(org, tmp_path):
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    done = _restore_process(org, dump)
    assert done.returncode == 0, done.stderr
    kept = json.loads(done.stdout)["replaced"]
    with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
        psycopg.connect(
            host=org.server.tcp_host, port=org.server.tcp_port, dbname=kept, user=f"{org.name}_bot", password="bot-pw"
        )
    # The admin still reaches it, to check it before dropping it.
    with psycopg.connect(org.server.url(kept)) as conn:
        assert conn.execute("SELECT count(*) FROM org_agents").fetchone()[0] == 4


@pytest.mark.slow
@pytest.mark.attack("restore")
def test_an_agent_made_after_the_backup_cannot_log_in_after_the_restore(org, tmp_path):
    """`ghost` joins after the backup; the restored org has no such agent, so her role
    loses its login and its place in the member group (the role itself stays: the kept
    database still names it)."""
    from cli_org.store.agents import add_agent

    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    with org.admin() as conn:
        add_agent(conn, "ghost", password="ghost-pw")
        conn.commit()
    with org.login(f"{org.name}_ghost", "ghost-pw") as ghost:
        assert ghost.execute("SELECT org_me() AS me").fetchone()["me"] == "ghost"
    done = _restore_process(org, dump)
    assert done.returncode == 0, done.stderr
    with pytest.raises(psycopg.OperationalError, match="not permitted to log in"):
        org.login(f"{org.name}_ghost", "ghost-pw")
    assert json.loads(done.stdout)["roles_disabled"] == [f"{org.name}_ghost"]
    with psycopg.connect(org.server.admin_url) as conn:
        member = conn.execute(
            "SELECT pg_has_role(%s, %s, 'member')", (f"{org.name}_ghost", f"{org.name}_member")
        ).fetchone()[0]
        assert member is False
    # The agents of the backup still log in.
    with org.login(f"{org.name}_other", "other-pw") as other:
        assert other.execute("SELECT org_me() AS me").fetchone()["me"] == "other"


@pytest.mark.slow
def test_a_backup_whose_data_breaks_the_schema_fails_whole(org, tmp_path):
    """A file whose own schema lacks a CHECK and a foreign key (so pg_dump wrote rows the
    migrations' schema refuses): the restore fails on them, and nothing is half-restored."""
    with org.admin() as conn:
        conn.execute("ALTER TABLE memory_facts DROP CONSTRAINT memory_facts_author_fkey")
        conn.execute("ALTER TABLE memory_facts DROP CONSTRAINT memory_facts_claim_check")
        conn.commit()
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night", source="docs/deploy.md")
    with org.admin() as conn:
        conn.execute("UPDATE memory_facts SET claim = repeat('x', 2000), author = 'nobody'")
        conn.commit()
    dump = tmp_path / "broken.dump"
    backup(org.settings, dump)
    with org.admin() as conn:
        conn.execute("TRUNCATE memory_facts CASCADE")
        conn.commit()
    _fill(org, tmp_path)
    before = content_hashes(org.server.url(org.name))
    roles = _roles(org)
    code, out, err = _run(org.env, "db", "restore", str(dump), "--force")
    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert "memory_facts" in err and "check constraint" in err
    assert content_hashes(org.server.url(org.name)) == before
    assert _databases(org) == [org.name] and _roles(org) == roles
