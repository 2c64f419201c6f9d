"""Export and import: full fidelity JSON lines, merged by id, refused where they must be."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql as pgsql

from cli_org.db.migrate import migrate
from cli_org.errors import AccessDenied, InputError, OrgError
from cli_org.store import facts, links, notebook, pins, todos
from cli_org.store.agents import add_agent
from cli_org.store.transfer import FORMAT, export_lines, import_lines
from tests.databases import OrgDb, _settings_for
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.slow

# Texts the write checks refuse: none may be stored, so none may be exported.
SECRETS = [
    "STRIPE_WEBHOOK_KEY=4f9a8c7d6e5b4a39281706f5e4d3c2b1",
    "sshpass -p 'Tr0ub4dor&3' ssh ops@10.0.0.4",
    "redis-cli -h cache-1 -a Xk2mP9qLw7 ping",
]


# The harness each write records (Activity, migration 0032): an export carries it, an import keeps it.
VIA = "claude-code@box"


def _populate(org) -> None:
    with org.admin() as conn:
        add_agent(conn, "scribe", person=True)
    with org.as_agent("bot") as conn:
        first = facts.remember(conn, "build", "The build takes four minutes", source="ci/build.log").id
        second = facts.remember(
            conn, "build", "The build takes six minutes", source="ci/build.log", supersedes=first
        ).id
        gone = facts.remember(conn, "deploy", "Deploys run on Fridays", source="docs/ops.md", project="web").id
        facts.forget(conn, gone, "no longer true")
        facts.restore(conn, gone, "it was right after all", via=VIA)
        facts.forget(conn, gone, "now really gone", via=VIA)
        kept = facts.remember(conn, "auth", "Tokens live one hour", source="docs/auth.md", kind="rule").id
        pins.pin(conn, kept, via=VIA)
        pins.pin(conn, second)
        pins.unpin(conn, second, via=VIA)
        notebook.add(conn, "memory", "The tests need a running PostgreSQL", via=VIA)
        notebook.add(conn, "user", "Prefers short answers")
        notebook.replace(conn, "user", "short answers", "Prefers short answers with links")
        notebook.add(conn, "memory", "Scratch note")
        notebook.remove(conn, "memory", "Scratch")
        todo = todos.add_todo(conn, "Migrate the auth tests", project="web", via=VIA).id
        todos.add_todo(conn, "Write the release notes")
        todos.done_todo(conn, todo, via=VIA)
        # typed links (migration 0041): a live one, and one removed with its reason
        links.link(conn, second, "explains", kept, reason="the build holds the token check")
        dropped = links.link(conn, kept, "depends-on", second).id
        links.unlink(conn, dropped, "not a dependency")
    with org.as_agent("other") as conn:  # an agent's own confirmation: no FROM fact
        links.add_link(conn, None, "confirms", kept, "Tokens expire after sixty minutes")
        conn.commit()
    for secret in SECRETS:
        with org.as_agent("bot") as conn, pytest.raises(OrgError):
            facts.remember(conn, "creds", secret, source="notes/shell.md")
        with org.as_agent("bot") as conn, pytest.raises(OrgError):
            notebook.add(conn, "memory", secret)
        with org.as_agent("bot") as conn, pytest.raises(OrgError):
            todos.add_todo(conn, secret)


def _export(org) -> list[str]:
    with org.admin() as conn:
        return export_lines(conn)[0]


def _body(lines: list[str]) -> list[str]:
    header = json.loads(lines[0])
    header.pop("exported_at")
    return [json.dumps(header), *lines[1:]]


def _counts(result) -> dict:
    return {c.kind: (c.added, c.present, c.conflicting) for c in result.kinds}


def test_export_holds_everything_and_no_refused_secret(org):
    _populate(org)
    lines = _export(org)
    header = json.loads(lines[0])
    assert header["kind"] == "header" and header["format"] == FORMAT and header["migration"] >= 14
    kinds = [json.loads(line)["kind"] for line in lines[1:]]
    assert kinds.count("agent") == 5 and kinds.count("fact") == 4
    assert {"restore", "pin", "notebook_entry", "todo"} <= set(kinds)
    text = "\n".join(lines)
    for secret in SECRETS:
        assert secret not in text
    with org.admin() as conn:  # the refused writes left nothing behind
        for table, column in (("memory_facts", "claim"), ("notebook_entries", "body"), ("org_todos", "text")):
            found = conn.execute(f"SELECT count(*) AS n FROM {table} WHERE {column} = ANY(%s)", (SECRETS,)).fetchone()
            assert found["n"] == 0
    facts_ = [json.loads(line) for line in lines if '"kind": "fact"' in line]
    assert any(f["superseded_by"] for f in facts_) and any(f["retired_reason"] == "now really gone" for f in facts_)
    entries = [json.loads(line) for line in lines if '"kind": "notebook_entry"' in line]
    assert max(len(e["versions"]) for e in entries) == 2


def test_round_trip_into_an_empty_database(org, server):
    _populate(org)
    lines = _export(org)
    # A second, empty database beside the fixture's, with the schema and nothing else.
    name = f"t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    try:
        settings, env = _settings_for(server, name)
        other = OrgDb(server, name, settings, env)
        with other.admin() as conn:  # the schema, no agent yet: the import brings them all
            migrate(conn)
        with other.admin() as conn:
            result = import_lines(conn, lines, embedder=HashEmbedder())
        counts = _counts(result)
        # Each current fact arrives with its author's vector, written as the author, and the
        # vectors table is back under forced row-level security.
        if server.vectors:  # a server without pgvector has no vectors table: the import went on without
            with other.admin() as conn:
                got = conn.execute(
                    "SELECT f.author, v.computed_by FROM memory_facts f LEFT JOIN memory_fact_vectors v"
                    " ON v.fact_id = f.id WHERE f.valid_to IS NULL"
                ).fetchall()
                forced = "SELECT relforcerowsecurity AS f FROM pg_class WHERE relname = 'memory_fact_vectors'"
                assert conn.execute(forced).fetchone()["f"] is True
            assert got and all(r["computed_by"] == r["author"] for r in got), got
        assert counts["agent"] == (5, 0, 0)
        assert counts["fact"] == (4, 0, 0) and counts["notebook_entry"][0] == 3
        assert counts["link"] == (3, 0, 0)
        assert _body(_export(other)) == _body(lines)
        # Every harness recorded travels (the body above compares them too): the last
        # retirement's, the restore's (not the retirement it undid: none was given), a pin's, an
        # unpin's, the notebook version's, the todo's and its done's.
        assert sum(line.count(f'"{VIA}"') for line in lines) == 7
        with other.admin() as conn:
            again = import_lines(conn, lines, embedder=HashEmbedder())  # a second import: all the same
        assert all(c.conflicting == 0 for c in again.kinds), again
        # The sequences follow the imported ids: a new fact gets the next id.
        with other.as_agent("bot") as conn:
            assert facts.remember(conn, "new", "A fresh claim", source="notes/new.md").id == 5
            notebook.add(conn, "memory", "A fresh entry")
    finally:
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("DROP DATABASE {} WITH (FORCE)").format(pgsql.Identifier(name)))
            for (role,) in conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (name + "\\_%",)):
                conn.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(role)))


def test_importing_twice_changes_nothing(org):
    _populate(org)
    lines = _export(org)
    with org.admin() as conn:
        result = import_lines(conn, lines)
    assert all(added == 0 and conflicting == 0 for added, _, conflicting in _counts(result).values())
    assert _counts(result)["fact"] == (0, 4, 0)
    assert _body(_export(org)) == _body(lines)


def test_a_newer_format_is_refused(org):
    lines = _export(org)
    header = json.loads(lines[0])
    header["format"] = FORMAT + 1
    with org.admin() as conn, pytest.raises(InputError, match="newer than this cli-org reads"):
        import_lines(conn, [json.dumps(header), *lines[1:]])


def test_a_conflict_is_reported_not_overwritten(org):
    _populate(org)
    lines = _export(org)
    changed = []
    for line in lines:
        record = json.loads(line)
        if record["kind"] == "fact" and record["id"] == 4:
            record["claim"] = "Tokens live two hours"
            line = json.dumps(record)
        changed.append(line)
    with org.admin() as conn:
        result = import_lines(conn, changed)
    fact = next(c for c in result.kinds if c.kind == "fact")
    assert (fact.added, fact.present, fact.conflicting, fact.conflicts) == (0, 3, 1, ["4"])
    with org.admin() as conn:
        assert conn.execute("SELECT claim FROM memory_facts WHERE id = 4").fetchone()["claim"] == "Tokens live one hour"


def test_a_malformed_line_is_named_and_nothing_is_imported(org, tmp_path: Path):
    _populate(org)
    lines = _export(org)
    fact = json.loads(next(line for line in lines if '"kind": "fact"' in line))
    fact["id"] = 99
    fact["claim"] = "A new claim"
    broken = [lines[0], json.dumps(fact), "{not json"]
    with org.admin() as conn, pytest.raises(InputError, match="line 3: not JSON"):
        import_lines(conn, broken)
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_facts WHERE id = 99").fetchone()["n"] == 0


def test_a_secret_in_a_crafted_file_is_refused(org):
    lines = _export(org)
    entry = {
        "kind": "todo",
        "id": 50,
        "text": SECRETS[0],
        "project": None,
        "author": "bot",
        "created_at": "2026-01-01T00:00:00+00:00",
        "done_by": None,
        "done_at": None,
    }
    with org.admin() as conn, pytest.raises(InputError, match="line 2: todo 50 was refused"):
        import_lines(conn, [lines[0], json.dumps(entry)])


@pytest.mark.attack("files")
def test_a_key_only_the_clients_scan_finds_cannot_be_imported(org):
    """issue 21: a crafted export carried a base64-encoded key in a fact's claim, which the
    database's patterns do not decode; an import gives every text the client's fuller scan."""
    import base64
    import random
    import string

    rng = random.Random(7)  # a made-up token, generated so the repository holds none
    key = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    blob = base64.b64encode(f"export GITHUB_TOKEN={key}".encode()).decode()
    with org.as_agent("bot") as conn:
        facts.remember(conn, "release bot", "The release bot runs at noon", source="docs/release.md")
    lines = _export(org)
    fact = json.loads(next(line for line in lines if '"kind": "fact"' in line))
    fact.update(id=90, claim=f"The release bot reads its settings from this blob: {blob}")
    with org.admin() as conn, pytest.raises(InputError, match="line 2: fact 90 was refused: .*GitHub token"):
        import_lines(conn, [lines[0], json.dumps(fact)])
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_facts WHERE id = 90").fetchone()["n"] == 0


def test_dry_run_reports_the_same_counts_and_changes_nothing(org):
    _populate(org)
    lines = _export(org)
    extra = json.loads(next(line for line in lines if '"kind": "todo"' in line))
    extra["id"] = 77
    extra["text"] = "A todo from elsewhere"
    with org.admin() as conn:
        dry = import_lines(conn, [*lines, json.dumps(extra)], dry_run=True)
    assert dry.dry_run and _counts(dry)["todo"] == (1, 2, 0)
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM org_todos WHERE id = 77").fetchone()["n"] == 0
    with org.admin() as conn:
        real = import_lines(conn, [*lines, json.dumps(extra)])
    assert _counts(real) == _counts(dry)


def test_unknown_agents_are_created_without_a_login(org):
    lines = _export(org)
    # The agent's own "kind" (bot or person) is not in the record here: it defaults to bot.
    agent = {
        "kind": "agent",
        "name": "visitor",
        "team_lead": "lead",
        "is_owner": False,
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    with org.admin() as conn:
        import_lines(conn, [lines[0], json.dumps(agent)])
        row = conn.execute(
            "SELECT a.team_lead, a.kind, r.rolcanlogin FROM org_agents a JOIN pg_roles r ON r.rolname = a.role_name"
            " WHERE a.name = 'visitor'"
        ).fetchone()
    assert row == {"team_lead": "lead", "kind": "bot", "rolcanlogin": False}


def test_a_member_is_refused(org):
    with org.as_agent("bot") as conn, pytest.raises(AccessDenied, match="needs the database admin"):
        export_lines(conn)
    with org.as_agent("boss") as conn, pytest.raises(AccessDenied, match="needs the database admin"):
        import_lines(conn, [json.dumps({"kind": "header", "format": FORMAT, "migration": 1})])


def test_the_commands(cli, org, tmp_path: Path):
    _populate(org)
    out = tmp_path / "org.jsonl"
    code, _, err = cli("export", "--out", str(out))
    assert code == 0 and "exported" in err
    code, stdout, _ = cli("import", str(out), "--dry-run", "--json")
    assert code == 0
    report = json.loads(stdout)
    assert report["dry_run"] and {k["kind"]: k["present"] for k in report["kinds"]}["fact"] == 4
    code, stdout, _ = cli("import", str(out))
    assert code == 0 and "fact: 0 added, 4 already present, 0 conflicting" in stdout
