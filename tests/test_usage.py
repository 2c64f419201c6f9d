"""Adoption figures from a fixture archive holding recall and remember calls in every spelling."""

import json
import os
import re
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cli_org.archive.importer import import_sessions
from cli_org.archive.usage import usage
from cli_org.store import facts

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime.now(UTC)


def _iso(days_ago: float) -> str:
    return (NOW - timedelta(days=days_ago)).isoformat().replace("+00:00", "Z")


def _claude(session, uuid, block, days_ago=1, **extra):
    record = {
        "type": "assistant",
        "sessionId": session,
        "uuid": uuid,
        "timestamp": _iso(days_ago),
        "cwd": "/w/app",
        "message": {"role": "assistant", "id": "msg-" + uuid, "model": "m", "content": [block]},
        **extra,
    }
    return json.dumps(record) + "\n"


def _bash(call_id, command):
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}


def _tool(call_id, name):
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"query": "deploy"}}


def _claude_fixture(root: Path) -> None:
    project = root / "-w-app"
    (project / "A" / "subagents").mkdir(parents=True)
    (project / "A.jsonl").write_text(
        "".join(
            [
                _claude("A", "a1", _bash("t1", 'cli-org recall "deploy window"')),
                _claude("A", "a2", _bash("t2", "org remember deploy 'At 02:00' --source docs/d.md")),
                _claude("A", "a3", _bash("t3", "~/.venv/bin/cli-org recall ci && cli-org remember ci x --source a.md")),
                _claude("A", "a4", _tool("t4", "mcp__cli-org__org_recall")),
                _claude("A", "a5", _tool("t5", "mcp__cli-org__org_remember")),
                # The same tool use on a second line of the same message: one call.
                _claude("A", "a6", _bash("t1", 'cli-org recall "deploy window"')),
                # Not calls: other words, other tools, or not a tool call at all.
                _claude("A", "d1", _bash("d1", "xorg recall; echo my-org recall; cli-org recalled; cli-org facts")),
                _claude("A", "d2", {"type": "tool_use", "id": "d2", "name": "Read", "input": {"command": "x"}}),
                _claude("A", "d3", {"type": "text", "text": "I could run cli-org recall here"}),
                _claude("A", "d4", _tool("d4", "recall")),
                # Another server's tool of the same name, and the names guessed before the server existed.
                _claude("A", "d5", _tool("d5", "mcp__other__org_recall")),
                _claude("A", "d6", _tool("d6", "mcp__cli-org__recall")),
                _claude("A", "d7", _tool("d7", "mcp__org__remember")),
                # A bare tool name says nothing of its server: any server may have an org_recall.
                _claude("A", "d8", _tool("d8", "org_recall")),
            ]
        )
    )
    (project / "A" / "subagents" / "agent-s1.jsonl").write_text(
        _claude("A", "s1", _bash("t6", "cli-org recall 'deploy'"), agentId="s1", isSidechain=True)
    )
    (project / "B.jsonl").write_text(_claude("B", "b1", _bash("b1", "ls")))
    (project / "C.jsonl").write_text(_claude("C", "c1", _bash("c1", "cli-org recall old"), days_ago=90))


def _hermes_fixture(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, started_at REAL);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, content TEXT,"
        " tool_calls TEXT, timestamp REAL);"
    )
    recent = (NOW - timedelta(days=2)).timestamp()
    for sid, parent in (("H1", None), ("H2", "H1"), ("H3", None), ("H4", None)):
        db.execute("INSERT INTO sessions VALUES (?, ?, ?)", (sid, parent, recent))

    def call(cid, name, command=None):
        args = json.dumps({"command": command} if command else {"query": "x"})
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}

    def message(sid, *calls):
        db.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES (?, 'assistant', '', ?, ?)",
            (sid, json.dumps(list(calls)), recent),
        )

    message("H1", call("k1", "terminal", "org recall 'deploy'"), call("k2", "mcp_cli_org_org_recall"))
    message("H1", call("k3", "mcp__cli_org__org_remember"))
    # The compacted continuation repeats k1 and adds one remember of its own.
    message("H2", call("k1", "terminal", "org recall 'deploy'"), call("k4", "terminal", "cli-org remember a b"))
    message("H3", call("k5", "terminal", "ls"))
    message("H4", call("k6", "terminal", "echo organ recall"))
    db.commit()
    db.close()


def _codex_fixture(root: Path) -> None:
    root.mkdir(parents=True)

    def rollout(sid, items):
        lines = [{"timestamp": _iso(3), "type": "session_meta", "payload": {"id": sid, "timestamp": _iso(3)}}]
        lines += [{"timestamp": _iso(3), "type": "response_item", "payload": item} for item in items]
        (root / f"rollout-x-{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    def fc(cid, name, args, **more):
        return {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": cid, **more}

    rollout(
        "00000000-0000-0000-0000-0000000000a1",
        [
            fc("x1", "exec_command", {"cmd": "cli-org recall foo"}),
            fc("x2", "shell", {"command": ["bash", "-lc", "cli-org remember a b --source c.md"]}),
            fc("x3", "mcp__cli-org__org_recall", {"query": "foo"}),
        ],
    )
    rollout(
        "00000000-0000-0000-0000-0000000000a2",
        [
            fc("x4", "exec_command", {"cmd": "pwd"}),
            fc("x5", "mcp__cli-org__org_search", {"query": "foo"}),
            # Codex names an MCP tool by its server's namespace and the function.
            fc("x6", "org_recall", {"question": "foo"}, namespace="mcp__cli_org"),
            fc("x7", "org_recall", {"question": "foo"}, namespace="mcp__other"),
        ],
    )


@pytest.fixture
def archive(org, tmp_path):
    _claude_fixture(tmp_path / "claude")
    _hermes_fixture(tmp_path / "state.db")
    _codex_fixture(tmp_path / "codex")
    stores = {"claude-code": tmp_path / "claude", "hermes": tmp_path / "state.db", "codex": tmp_path / "codex"}
    with org.admin() as conn:
        import_sessions(conn, stores)
    return org


def _figures(org, days=30):
    with org.admin() as conn:
        found = usage(conn, days)
    return found, {
        h.harness: (h.sessions, h.sessions_using, h.recall_calls, h.remember_calls, h.adoption_pct)
        for h in found.harnesses
    }


def test_counts_every_spelling_once(archive):
    found, rows = _figures(archive)
    assert rows == {
        "claude-code": (2, 1, 4, 3, 50.0),
        "hermes": (3, 1, 2, 2, 33.3),
        "codex": (2, 2, 3, 1, 100.0),
    }
    log = found.log  # the recall log is empty: no recall ran, no fact was written
    assert (log.agents, log.agents_using, log.recall_calls, log.remember_calls) == (4, 0, 0, 0)


def test_codex_names_mcp_tools_as_the_regex_expects(org, corpora):
    """The real Codex rollouts record an MCP call as a function_call named
    mcp__<server>__<tool> (the fixture above writes cli-org's tools that way), and the
    importer keeps that name as the tool name the usage query matches."""
    with org.admin() as conn:
        import_sessions(conn, {"codex": corpora("transcripts") / "codex"})
        names = {
            r["tool_name"]
            for r in conn.execute("SELECT DISTINCT tool_name FROM archive_messages WHERE tool_name LIKE 'mcp%%'")
        }
    assert names and all(re.fullmatch(r"mcp__[a-z0-9-]+__[a-z0-9_]+", n) for n in names), names
    server, tool = sorted(names)[0].split("__")[1:]
    assert "-" in server  # a server name with a hyphen is kept as it is, like cli-org


def test_window_reaches_older_sessions(archive):
    _, rows = _figures(archive, days=120)
    assert rows["claude-code"] == (3, 2, 5, 3, 66.7)


def _recall_events(org):
    with org.admin() as conn:
        conn.execute(
            "INSERT INTO recall_events (agent, query, arms, hits, chars, ms, created_at) VALUES"
            " ('bot', 'deploy', '{fact}', 2, 300, 12, now()),"
            " ('bot', 'ci', '{fact,vault}', 1, 120, 9, now() - interval '1 day'),"
            " ('other', 'old', '{fact}', 0, 0, 5, now() - interval '40 days'),"
            " (NULL, 'by the admin', '{fact}', 0, 0, 5, now())"
        )
        conn.commit()
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploy", "Deploys run at 02:00 UTC", source="docs/deploy.md")


def test_recall_log_beside_the_archive(archive):
    _recall_events(archive)
    found, _ = _figures(archive)
    log = found.log
    # The admin's call (no agent) is a recall, but not an agent using memory.
    assert (log.agents, log.agents_using, log.recall_calls, log.remember_calls, log.adoption_pct) == (4, 1, 3, 1, 25.0)
    found, _ = _figures(archive, days=60)
    assert (found.log.agents_using, found.log.recall_calls) == (2, 4)


def test_cli_usage_text_json_and_bounds(cli, archive):
    code, out, _ = cli("usage")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "last 30 days, from archived sessions:"
    assert lines[1].split() == ["harness", "sessions", "using", "recall", "remember", "adoption"]
    assert lines[2].split() == ["claude-code", "2", "1", "4", "3", "50.0%"]
    assert lines[-1] == "cli-org's own log: 0 recalls, 0 remembers; 0 of 4 agents used memory (0.0%)"
    _recall_events(archive)
    data = json.loads(cli("usage", "--days", "30", "--json")[1])
    assert data["days"] == 30 and data["log"]["recall_calls"] == 3
    assert {h["harness"]: h["remember_calls"] for h in data["harnesses"]} == {"claude-code": 3, "hermes": 2, "codex": 1}
    assert cli("usage")[1].splitlines()[-1] == (
        "cli-org's own log: 3 recalls, 1 remembers; 1 of 4 agents used memory (25.0%)"
    )
    code, _, err = cli("usage", "--days", "0")
    assert code == 2 and "0 is not in the range" in err


def _documented_psql_command() -> str:
    section = (ROOT / "docs" / "agents.md").read_text().split("## Archive and adoption", 1)[1].split("\n## ", 1)[0]
    (command,) = [c for c in re.findall(r"```bash\n(.+?)\n```", section, re.S) if "| cli-org db psql" in c]
    return command


def test_documented_psql_command_runs_the_usage_sql(archive, tmp_path):
    import sys

    from cli_org.db import embedded

    psql = embedded._bin_dir() / "psql"
    if not psql.exists():
        pytest.skip(f"no psql next to the embedded server ({psql})")
    # `cli-org` on PATH runs this checkout, whatever is installed.
    shim = tmp_path / "bin" / "cli-org"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m cli_org "$@"\n')
    shim.chmod(0o755)
    url = archive.server.url(archive.name)
    env = {**os.environ, "PATH": f"{shim.parent}:{os.environ['PATH']}", "CLI_ORG_DATABASE_URL": url}
    out = subprocess.run(
        ["bash", "-c", _documented_psql_command()], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    rows = [re.split(r"\s*\|\s*", line.strip()) for line in out.splitlines() if "|" in line]
    assert rows[0] == ["harness", "sessions", "sessions_using", "recall_calls", "remember_calls", "adoption_pct"]
    assert ["claude-code", "2", "1", "4", "3", "50.0"] in rows and ["hermes", "3", "1", "2", "2", "33.3"] in rows


def test_cli_usage_on_an_empty_window_says_how_to_widen_it(cli):
    code, out, _ = cli("usage", "--days", "7")
    assert code == 0
    assert out.splitlines()[1] == (
        "no archived sessions in the last 7 days; widen the window (--days 28) or "
        "import sessions with `cli-org archive import`"
    )
    out = cli("usage", "--days", "3650")[1]
    assert "widen" not in out and "no archived sessions in the last 3650 days" in out
