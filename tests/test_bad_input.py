"""Adversarial input: one bad line, file, note or argument never aborts or hangs a whole job."""

import json
import sqlite3

import pytest

from cli_org.archive.importer import import_sessions


def _claude(uuid: str, text: str, session: str = "s-1", **extra) -> str:
    record = {
        "type": "user",
        "sessionId": session,
        "uuid": uuid,
        "cwd": "/home/u/proj",
        "timestamp": "2026-11-01T10:00:00Z",
        "message": {"role": "user", "content": text},
        **extra,
    }
    return json.dumps(record) + "\n"


def _import(org, **stores):
    with org.admin() as conn:
        return {s.harness: s for s in import_sessions(conn, {k.replace("_", "-"): v for k, v in stores.items()})}


def _texts(org) -> list[str]:
    with org.admin() as conn:
        return [r["text"] for r in conn.execute("SELECT text FROM archive_messages ORDER BY text")]


# Each of these once aborted the import of every later file.
BAD_CLAUDE_LINES = {
    "cwd is a number": _claude("b1", "x", cwd=123),
    "deeply nested": '{"type": "user", "sessionId": "s", "message": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
    "lone surrogate": _claude("b3", "x").replace('"x"', '"bad \\ud800 text"'),
    "dict for a string": _claude("b4", "x", gitBranch={"not": "a string"}),
    "NaN timestamp": _claude("b5", "x").replace('"2026-11-01T10:00:00Z"', "NaN"),
    "dict as session id": _claude("b6", "x", session={"id": 1}),
    "infinite number inside": _claude("b7", "x", toolUseResult={"n": 1e999}),
}


def test_bad_claude_lines_are_skipped_and_counted_and_later_files_import(org, tmp_path):
    root = tmp_path / "projects"
    folder = root / "-w"
    folder.mkdir(parents=True)
    for n, line in enumerate(BAD_CLAUDE_LINES.values()):
        (folder / f"a{n}.jsonl").write_text(
            _claude(f"g{n}", f"good before {n}") + line + _claude(f"h{n}", f"after {n}")
        )
    (folder / "z-last.jsonl").write_text(_claude("z", "the last file"))
    summary = _import(org, claude_code=root)["claude-code"]
    assert summary.failed == []
    texts = _texts(org)
    assert "the last file" in texts
    for n in range(len(BAD_CLAUDE_LINES)):
        assert f"good before {n}" in texts and f"after {n}" in texts
    # The surrogate line, the NaN and the infinity are kept with the bad values replaced;
    # the rest are skipped, each with its reason.
    assert "bad \ufffd text" in texts
    assert summary.malformed == 4
    assert sum(summary.skipped.values()) == 4
    assert any("nested" in reason for reason in summary.skipped)
    assert any("cwd" in reason for reason in summary.skipped)
    with org.admin() as conn:
        raw = conn.execute("SELECT raw FROM archive_messages WHERE raw->>'uuid' = 'b7'").fetchone()["raw"]
    assert raw["toolUseResult"] == {"n": None}


@pytest.mark.parametrize("name", list(BAD_CLAUDE_LINES))
def test_each_bad_line_alone_leaves_the_next_file_imported(org, tmp_path, name):
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text(BAD_CLAUDE_LINES[name])
    (folder / "b.jsonl").write_text(_claude("b", "next file"))
    summary = _import(org, claude_code=tmp_path / "projects")["claude-code"]
    assert summary.failed == [] and "next file" in _texts(org)


def test_bad_codex_lines_are_skipped(org, tmp_path):
    root = tmp_path / "sessions"
    root.mkdir()
    good = {"timestamp": "2026-11-01T10:00:00Z", "type": "response_item"}
    lines = [
        {**good, "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one"}]}},
        {**good, "type": "session_meta", "payload": {"id": "x", "cwd": ["not", "a", "string"]}},
        {**good, "type": "turn_context", "payload": {"model": {"name": 1}, "cwd": "/w"}},
        {**good, "payload": {"type": "function_call", "name": {"n": 1}, "arguments": "{}", "call_id": "c"}},
        {**good, "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "two"}]}},
    ]
    text = "".join(json.dumps(x) + "\n" for x in lines)
    text += '{"type": "response_item", "payload": ' + "{" * 5000 + "\n"
    (root / "rollout-2026-11-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl").write_text(text)
    summary = _import(org, codex=root)["codex"]
    assert summary.failed == [] and summary.malformed == 4
    assert _texts(org) == ["one", "two"]


def test_bad_hermes_rows_are_skipped(org, tmp_path):
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE sessions (id TEXT, parent_session_id TEXT, cwd, model, title, started_at, ended_at)")
    db.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id, role, content, tool_calls, timestamp)")
    db.execute("INSERT INTO sessions VALUES ('a', NULL, 42, 'm', 'ok', 1780000000, NULL)")
    db.execute("INSERT INTO messages VALUES (1, 'a', 'user', 'fine', NULL, 1780000001)")
    db.execute("INSERT INTO messages VALUES (2, 'a', 'user', x'ff00fe', NULL, 1780000002)")
    db.execute("INSERT INTO messages VALUES (3, 'a', 'user', CAST(x'61ff62' AS TEXT), NULL, 1780000003)")
    db.execute("INSERT INTO messages VALUES (4, 'a', 'assistant', 'calls', ?, 'nan')", ("[" * 10000,))
    db.execute("INSERT INTO messages VALUES (5, 'a', 'user', 'last', NULL, 1780000005)")
    db.commit()
    db.close()
    summary = _import(org, hermes=path)["hermes"]
    assert summary.failed == []
    texts = _texts(org)
    assert "fine" in texts and "last" in texts and "calls" in texts and "a\ufffdb" in texts


def test_bad_file_is_named_and_the_import_goes_on(org, tmp_path):
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    (root / "a.jsonl").write_text(_claude("a", "first file"))
    (root / "b.jsonl").mkdir()  # rglob finds it, but it cannot be read as a file
    (root / "c.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (root / "d.jsonl").write_text(_claude("d", "last file"))
    hermes = tmp_path / "state.db"
    hermes.write_bytes(b"not a sqlite database at all" * 100)
    summaries = _import(org, hermes=hermes, claude_code=tmp_path / "projects")  # the bad store first
    assert sorted(_texts(org)) == ["first file", "last file"]
    assert summaries["hermes"].failed and str(hermes) in summaries["hermes"].failed[0]


def test_cli_import_reports_skipped_lines_and_failed_files(cli, tmp_path):
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    (root / "a.jsonl").write_text(_claude("a", "ok") + "{broken\n" + BAD_CLAUDE_LINES["cwd is a number"])
    hermes = tmp_path / "state.db"
    hermes.write_bytes(b"garbage" * 100)
    code, out, err = cli("archive", "import", "--claude", str(tmp_path / "projects"), "--hermes", str(hermes))
    assert code == 1, (out, err)
    assert "2 malformed lines skipped (" in out and "not JSON: 1" in out
    assert f"hermes: {hermes}" in err and "Traceback" not in err
    data = json.loads(cli("archive", "import", "--hermes", str(hermes), "--json")[1])
    assert data[0]["failed"] and data[0]["failed"][0].startswith(str(hermes))
