"""Session importers, on the real transcripts in ../shared/corpora and on files grown by hand."""

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from cli_org.archive.importer import import_sessions
from cli_org.errors import NotFound

pytestmark = pytest.mark.slow

MAIN = "4d5611e5-241a-462a-8d15-5122611a9569"


@pytest.fixture
def transcripts(corpora):
    """The real transcripts, through the one corpora fixture (skipped, saying why, without them)."""
    return corpora("transcripts")


def _import(org, **stores):
    with org.admin() as conn:
        return {s.harness: s for s in import_sessions(conn, {k.replace("_", "-"): v for k, v in stores.items()})}


def _one(org, query, params=()):
    with org.admin() as conn:
        return conn.execute(query, params).fetchone()


def _all(org, query, params=()):
    with org.admin() as conn:
        return conn.execute(query, params).fetchall()


def _bash_uses(org, external_id):
    return _one(
        org,
        "SELECT count(DISTINCT m.tool_call_id) AS n FROM archive_messages m"
        " JOIN archive_sessions s ON s.id = m.session_id"
        " WHERE s.external_id = %s AND m.kind = 'assistant' AND m.tool_name = 'Bash' AND m.command IS NOT NULL",
        (external_id,),
    )["n"]


def test_claude_code_counts_and_subagent_linking(org, transcripts):
    summary = _import(org, claude_code=transcripts / "claude-code")["claude-code"]
    # Six files: four main sessions, and two subagent files under the 3 MB session.
    assert (summary.sources, summary.sessions, summary.malformed) == (6, 6, 0)
    assert _bash_uses(org, MAIN) == 67
    subagent = f"{MAIN}/agent-a2898e3"
    assert _bash_uses(org, subagent) == 5
    rows = {
        r["external_id"]: r
        for r in _all(
            org,
            "SELECT s.external_id, p.external_id AS parent, s.git_branch, s.project, s.model"
            " FROM archive_sessions s LEFT JOIN archive_sessions p ON p.id = s.parent_session",
        )
    }
    assert rows[subagent]["parent"] == MAIN and rows[f"{MAIN}/agent-acompact-e1f845"]["parent"] == MAIN
    assert rows[MAIN]["parent"] is None and rows[MAIN]["git_branch"] == "spotter-dov"
    assert rows[MAIN]["project"] == "spotter-dov" and rows[MAIN]["model"] == "claude-opus-4-6"
    # The whole tree holds the 72 Bash calls the corpus README names; the main file's
    # progress lines repeat the subagent's five calls and must not count twice.
    tree = _one(
        org,
        "SELECT count(DISTINCT m.tool_call_id) AS n FROM archive_messages m"
        " JOIN archive_sessions s ON s.id = m.session_id"
        " WHERE s.external_id LIKE %s AND m.kind = 'assistant' AND m.tool_name = 'Bash'",
        (MAIN + "%",),
    )["n"]
    assert tree == 72
    # A file-history-snapshot line has no sessionId: it is not a message of any session.
    snapshot = json.loads((transcripts / "claude-code" / f"{MAIN}.jsonl").open().readline())
    assert snapshot["type"] == "file-history-snapshot" and "sessionId" not in snapshot
    stored = _one(org, "SELECT count(*) AS n FROM archive_messages WHERE raw->>'type' = 'file-history-snapshot'")
    assert stored["n"] == 0


def test_hermes_counts(org, transcripts):
    summary = _import(org, hermes=transcripts / "hermes" / "state.db")["hermes"]
    assert (summary.sessions, summary.malformed) == (2, 0)
    row = _one(
        org,
        "SELECT count(DISTINCT s.id) AS sessions,"
        " count(*) FILTER (WHERE m.part = 0) AS messages,"
        " count(DISTINCT m.tool_call_id) FILTER (WHERE m.kind = 'assistant' AND m.tool_name = 'terminal'"
        "   AND m.command IS NOT NULL) AS terminal"
        " FROM archive_sessions s JOIN archive_messages m ON m.session_id = s.id WHERE s.harness = 'hermes'",
    )
    assert row == {"sessions": 2, "messages": 42, "terminal": 15}
    # The folder (HERMES_HOME) works as well as the file, and adds nothing the second time.
    again = _import(org, hermes=transcripts / "hermes")["hermes"]
    assert (again.sessions, again.messages) == (0, 0)


def test_codex_counts(org, transcripts):
    summary = _import(org, codex=transcripts / "codex")["codex"]
    assert (summary.sources, summary.sessions, summary.malformed) == (3, 3, 0)
    row = _one(
        org,
        "SELECT count(DISTINCT tool_call_id) FILTER (WHERE tool_name = 'exec_command') AS exec,"
        " count(DISTINCT tool_call_id) FILTER (WHERE tool_name LIKE 'mcp\\_\\_%%') AS mcp"
        " FROM archive_messages WHERE kind = 'assistant'",
    )
    # 116 + 1 exec_command calls; their arguments are redacted upstream, so no command is read.
    assert row == {"exec": 117, "mcp": 4}
    branches = {r["git_branch"] for r in _all(org, "SELECT git_branch FROM archive_sessions")}
    assert branches == {"main"}


def test_reimport_adds_nothing(org, transcripts):
    stores = {
        "claude_code": transcripts / "claude-code",
        "hermes": transcripts / "hermes",
        "codex": transcripts / "codex",
    }
    first = _import(org, **stores)
    counts = _one(
        org, "SELECT (SELECT count(*) FROM archive_sessions) AS s, (SELECT count(*) FROM archive_messages) AS m"
    )
    assert counts["s"] == 11 and counts["m"] == sum(s.messages for s in first.values())
    second = _import(org, **stores)
    assert [(s.sessions, s.messages, s.read) for s in second.values()] == [(0, 0, 0)] * 3
    assert _one(org, "SELECT count(*) AS m FROM archive_messages")["m"] == counts["m"]


def _claude_line(uuid, text, session="s-1", kind="user", **extra):
    message = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"role": "assistant", "id": f"msg-{uuid}", "model": "m1", "content": text}
    record = {
        "type": kind,
        "sessionId": session,
        "uuid": uuid,
        "cwd": "/home/u/proj",
        "gitBranch": "main",
        "timestamp": "2026-11-01T10:00:00Z",
        "message": message,
        **extra,
    }
    return json.dumps(record) + "\n"


@pytest.fixture
def transcript(tmp_path):
    folder = tmp_path / "projects" / "-home-u-proj"
    folder.mkdir(parents=True)
    path = folder / "s-1.jsonl"
    path.write_text(_claude_line("u1", "first question") + _claude_line("u2", "second question"))
    return tmp_path / "projects", path


def _messages(org):
    return [r["text"] for r in _all(org, "SELECT text FROM archive_messages ORDER BY position, part")]


def test_appended_line_is_picked_up(org, transcript):
    root, path = transcript
    assert _import(org, claude_code=root)["claude-code"].messages == 2
    with path.open("a") as fh:
        fh.write(_claude_line("u3", "third question"))
    summary = _import(org, claude_code=root)["claude-code"]
    assert (summary.read, summary.messages, summary.sessions) == (1, 1, 0)
    assert _messages(org) == ["first question", "second question", "third question"]


def test_truncated_last_line_is_malformed_then_imported_once_complete(org, transcript):
    root, path = transcript
    _import(org, claude_code=root)
    line = _claude_line("u3", "a line still being written")
    with path.open("a") as fh:
        fh.write(line[:40])
    summary = _import(org, claude_code=root)["claude-code"]
    assert (summary.messages, summary.malformed) == (0, 1)
    with path.open("a") as fh:
        fh.write(line[40:])
    summary = _import(org, claude_code=root)["claude-code"]
    assert (summary.messages, summary.malformed) == (1, 0)
    assert _messages(org)[-1] == "a line still being written"
    assert _import(org, claude_code=root)["claude-code"].messages == 0


def test_whole_line_without_newline_is_imported_once(org, transcript):
    root, path = transcript
    with path.open("a") as fh:
        fh.write(_claude_line("u3", "no newline yet").rstrip("\n"))
    assert _import(org, claude_code=root)["claude-code"].messages == 3
    with path.open("a") as fh:
        fh.write("\n" + _claude_line("u4", "next"))
    summary = _import(org, claude_code=root)["claude-code"]
    assert (summary.messages, summary.malformed) == (1, 0)
    assert _messages(org) == ["first question", "second question", "no newline yet", "next"]


def test_malformed_lines_are_skipped_and_counted(org, transcript):
    root, path = transcript
    with path.open("a") as fh:
        fh.write("{not json\n[1, 2]\n\n" + _claude_line("u3", "after the noise"))
    summary = _import(org, claude_code=root)["claude-code"]
    assert (summary.messages, summary.malformed) == (3, 2)
    # Counted once: the read position moved past them.
    assert _import(org, claude_code=root)["claude-code"].malformed == 0


def test_replaced_file_is_read_again_without_duplicates(org, transcript):
    root, path = transcript
    _import(org, claude_code=root)
    path.write_text(_claude_line("u1", "first question"))
    assert _import(org, claude_code=root)["claude-code"].messages == 0
    assert len(_messages(org)) == 2


def test_claude_tool_calls_split_and_counted_by_id(org, transcript):
    root, path = transcript
    blocks = [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls -la"}},
        {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "a.py"}},
    ]
    # The same message.id on two lines, repeating a tool use: still one call.
    lines = _claude_line("a1", blocks, kind="assistant") + _claude_line("a2", blocks[:1], kind="assistant")
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "total 0"}]
    with path.open("a") as fh:
        fh.write(lines + _claude_line("r1", result))
    _import(org, claude_code=root)
    rows = _all(
        org,
        "SELECT source_key, kind, tool_name, tool_call_id, command, text FROM archive_messages"
        " WHERE tool_call_id IS NOT NULL ORDER BY position, part",
    )
    assert [(r["source_key"], r["kind"], r["tool_name"], r["command"]) for r in rows] == [
        ("a1", "assistant", "Bash", "ls -la"),
        ("a1#1", "assistant", "Read", None),
        ("a2", "assistant", "Bash", "ls -la"),
        ("r1", "tool", None, None),
    ]
    assert rows[-1]["text"] == "total 0"
    assert _bash_uses(org, "s-1") == 1


def _function_call(name, args, call_id):
    return {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": call_id}


def _codex_lines(session_id):
    meta = {"id": session_id, "timestamp": "2026-11-01T10:00:00Z", "cwd": "/w/app", "git": {"branch": "dev"}}
    items = [
        _function_call("exec_command", {"cmd": "git status"}, "c1"),
        _function_call("shell", {"command": ["bash", "-lc", "make test"]}, "c2"),
        _function_call("shell_command", {"command": "ls"}, "c3"),
        {"type": "local_shell_call", "call_id": "c4", "action": {"command": ["grep", "-r", "x y", "."]}},
        _function_call("container.exec", {"command": ["pwd"]}, "c5"),
        {"type": "function_call_output", "call_id": "c1", "output": "clean"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    lines = [{"timestamp": "2026-11-01T10:00:00Z", "type": "session_meta", "payload": meta}]
    lines.append({"timestamp": "2026-11-01T10:00:01Z", "type": "turn_context", "payload": {"model": "gpt-x"}})
    lines += [{"timestamp": "2026-11-01T10:00:02Z", "type": "response_item", "payload": item} for item in items]
    lines.append({"timestamp": "2026-11-01T10:00:03Z", "type": "event_msg", "payload": {"type": "agent_message"}})
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_codex_shell_tool_names(org, tmp_path):
    sid = "019c0000-0000-7000-8000-000000000001"
    day = tmp_path / "sessions" / "2026" / "11" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-11-01T10-00-00-{sid}.jsonl").write_text(_codex_lines(sid))
    summary = _import(org, codex=tmp_path / "sessions")["codex"]
    assert (summary.sessions, summary.messages, summary.malformed) == (1, 7, 0)
    commands = [
        (r["tool_name"], r["command"])
        for r in _all(
            org,
            "SELECT tool_name, command FROM archive_messages WHERE kind = 'assistant' AND tool_name IS NOT NULL"
            " ORDER BY position",
        )
    ]
    assert commands == [
        ("exec_command", "git status"),
        ("shell", "make test"),
        ("shell_command", "ls"),
        ("local_shell", "grep -r 'x y' ."),
        ("container.exec", "pwd"),
    ]
    session = _one(org, "SELECT external_id, git_branch, model, project FROM archive_sessions")
    assert session == {"external_id": sid, "git_branch": "dev", "model": "gpt-x", "project": "app"}


def _hermes_store(path: Path, extra_column: bool = True):
    db = sqlite3.connect(path)
    extra = ", shiny_new_column TEXT" if extra_column else ""
    db.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, model TEXT, parent_session_id TEXT,"
        f" started_at REAL, ended_at REAL, title TEXT{extra});"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, content TEXT,"
        f" tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL{extra});"
    )
    return db


def _hermes_message(db, session, role, content, calls, at):
    db.execute(
        "INSERT INTO messages VALUES (NULL, ?, ?, ?, NULL, ?, NULL, ?, 'x')", (session, role, content, calls, at)
    )


def _terminal_call(call_id, command):
    args = json.dumps({"command": command})
    return {"id": call_id, "type": "function", "function": {"name": "terminal", "arguments": args}}


def test_hermes_newer_schema_compaction_and_growth(org, tmp_path):
    path = tmp_path / "state.db"
    db = _hermes_store(path)
    db.execute("INSERT INTO sessions VALUES ('a', 'cli', 'm', NULL, 1780000000, NULL, 'first', 'x')")
    calls = json.dumps([_terminal_call("k1", "ls"), _terminal_call("k2", "pwd")])
    _hermes_message(db, "a", "user", "hi", None, 1780000001)
    _hermes_message(db, "a", "assistant", "on it", calls, 1780000002)
    db.commit()
    first = _import(org, hermes=path)["hermes"]
    assert (first.sessions, first.messages) == (1, 4)
    # Compression starts a child session holding a copy of the earlier call (same id).
    db.execute("INSERT INTO sessions VALUES ('b', 'cli', 'm', 'a', 1780000100, NULL, NULL, 'x')")
    copied = json.dumps([_terminal_call("k1", "ls")])
    _hermes_message(db, "b", "assistant", "summary", copied, 1780000101)
    db.commit()
    db.close()
    second = _import(org, hermes=path)["hermes"]
    assert (second.sessions, second.messages) == (1, 2)
    child = _one(
        org,
        "SELECT p.external_id AS parent FROM archive_sessions s JOIN archive_sessions p ON p.id = s.parent_session"
        " WHERE s.external_id = 'b'",
    )
    assert child["parent"] == "a"
    assert _import(org, hermes=path)["hermes"].messages == 0


def test_hermes_store_missing_columns_is_refused(org, tmp_path):
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE sessions (name TEXT)")
    db.execute("CREATE TABLE messages (id INTEGER)")
    db.close()
    (failed,) = _import(org, hermes=path)["hermes"].failed
    assert failed.startswith(f"{path}: not a Hermes store")


def test_missing_store_is_not_found(org, tmp_path):
    with pytest.raises(NotFound, match="does not exist"):
        _import(org, codex=tmp_path / "nowhere")


def test_cli_import_summary_and_json(cli, tmp_path, transcripts):
    root = tmp_path / "projects"
    shutil.copytree(transcripts / "claude-code", root)
    code, out, err = cli("archive", "import", "--claude", str(root), "--hermes", str(transcripts / "hermes"))
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "claude-code: 6 files, 6 with new lines; 6 sessions and 577 messages added; 0 malformed lines skipped",
        "hermes: 1 store, 1 with new lines; 2 sessions and 66 messages added; 0 malformed lines skipped",
        # these real sessions hold no lasting lesson the detector takes (benchmarks/RESULTS.md, Proposals)
        "proposals: 0 lessons proposed from 643 new messages of 8 sessions",
    ]
    code, out, _ = cli("archive", "import", "--claude", str(root), "--json")
    data = json.loads(out)
    assert data["proposed"] == {"sessions": 0, "messages": 0, "proposed": 0, "known": 0, "refused": 0, "repeated": 0}
    (summary,) = data["imported"]
    assert summary == {
        "harness": "claude-code",
        "sources": 6,
        "read": 0,
        "sessions": 0,
        "messages": 0,
        "malformed": 0,
        "skipped": {},
        "failed": [],
    }
    code, _, err = cli("archive", "import", "--codex", str(tmp_path / "nope"))
    assert code == 1 and err.startswith("cli-org: codex:") and err.count("\n") == 1


def test_cli_import_defaults_to_home_locations(cli, tmp_path, monkeypatch, transcript):
    root, _ = transcript
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root.parent))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    code, out, _ = cli("archive", "import")
    assert code == 0 and out.startswith("claude-code: 1 file, 1 with new lines; 1 session and 2 messages added")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "empty"))
    code, out, err = cli("archive", "import")
    assert code == 0 and out == "" and "no session stores found" in err


def test_unreadable_transcript_is_named_and_skipped(org, transcript):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    root, path = transcript
    path.chmod(0)
    (failed,) = _import(org, claude_code=root)["claude-code"].failed
    assert failed.startswith(f"{path}: cannot read")


def test_subagent_before_its_parent_and_parent_loops(org, tmp_path):
    sub = tmp_path / "projects" / "-w" / "P" / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-x.jsonl").write_text(_claude_line("x1", "child work", session="P", agentId="x"))
    _import(org, claude_code=tmp_path / "projects")
    parent = _one(org, "SELECT started_at, cwd FROM archive_sessions WHERE external_id = 'P'")
    assert parent["started_at"] is not None and parent["cwd"] == "/home/u/proj"
    path = tmp_path / "loop.db"
    db = _hermes_store(path, extra_column=False)
    db.execute("INSERT INTO sessions VALUES ('a', 'cli', 'm', 'b', 1780000000, NULL, NULL)")
    db.execute("INSERT INTO sessions VALUES ('b', 'cli', 'm', 'a', 1780000000, NULL, NULL)")
    db.commit()
    db.close()
    assert _import(org, hermes=path)["hermes"].sessions == 2
