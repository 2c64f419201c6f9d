"""The demo's sample sessions (eval/sample/sessions): laid out as each harness keeps them,
imported by the real importer, they fill the Sessions and Usage pages."""

import importlib.util
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cli_org.archive.importer import import_sessions
from cli_org.archive.usage import usage

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sample_sessions", ROOT / "scripts" / "sample-sessions.py")
assert _spec and _spec.loader
sample = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample)

NOW = datetime(2031, 5, 6, 12, 0, tzinfo=UTC)


def _stores(tmp_path, now=NOW):
    laid = sample.lay_out(tmp_path / "harnesses", now=now)
    return {"claude-code": laid["claude"], "codex": laid["codex"], "hermes": laid["hermes"]}


def test_laid_out_in_each_harness_format_and_moved_to_now(tmp_path):
    stores = _stores(tmp_path)
    claude = sorted(stores["claude-code"].glob("*/*.jsonl"))
    codex = sorted(stores["codex"].glob("*/*/*/rollout-*.jsonl"))
    assert len(claude) == 3 and len(codex) == 2
    # Codex files are named for their (moved) start, in their day's folder.
    for path in codex:
        first = json.loads(path.read_text().splitlines()[0])
        assert first["type"] == "session_meta" and path.stem.endswith(first["payload"]["id"])
        assert path.parent.as_posix().endswith(first["timestamp"][:10].replace("-", "/"))
    db = sqlite3.connect(stores["hermes"] / "state.db")
    (last,) = db.execute("SELECT max(timestamp) FROM messages").fetchone()
    (sessions,) = db.execute("SELECT count(*) FROM sessions").fetchone()
    db.close()
    assert sessions == 3
    times = [
        datetime.fromisoformat(json.loads(line)["timestamp"].replace("Z", "+00:00"))
        for path in claude + codex
        for line in path.read_text().splitlines()
        if '"timestamp"' in line
    ]
    times.append(datetime.fromtimestamp(last, tz=UTC))
    # The latest message is an hour before "now"; the sample spans about a week.
    assert max(times) == NOW - sample.LAST_MESSAGE_AGO
    assert NOW - timedelta(days=8) < min(times)


def test_laying_out_again_replaces_the_hermes_store(tmp_path):
    _stores(tmp_path)
    stores = _stores(tmp_path, now=NOW + timedelta(days=1))
    db = sqlite3.connect(stores["hermes"] / "state.db")
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 3
    db.close()


@pytest.mark.slow
def test_imported_they_fill_sessions_and_usage(org, tmp_path):
    stores = _stores(tmp_path, now=datetime.now(UTC))
    with org.admin() as conn:
        summaries = {s.harness: s for s in import_sessions(conn, stores)}
    assert {h: (s.sessions, s.malformed, s.failed) for h, s in summaries.items()} == {
        "claude-code": (3, 0, []),
        "codex": (2, 0, []),
        "hermes": (3, 0, []),
    }
    with org.admin() as conn:
        rows = conn.execute(
            "SELECT harness, project, count(*) AS n FROM archive_sessions GROUP BY 1, 2 ORDER BY 1, 2"
        ).fetchall()
        conn.rollback()
        seen = usage(conn)
        again = import_sessions(conn, stores)
    assert [(r["harness"], r["project"], r["n"]) for r in rows] == [
        ("claude-code", "api", 1),
        ("claude-code", "web", 2),
        ("codex", "api", 2),
        ("hermes", "api", 2),
        ("hermes", "web", 1),
    ]
    # Each harness recalled through the MCP server, so the Usage page has adoption to show;
    # Hermes also remembered once (a session of its own).
    by_harness = {h.harness: h for h in seen.harnesses}
    assert {h: (u.sessions, u.sessions_using, u.recall_calls) for h, u in by_harness.items()} == {
        "claude-code": (3, 3, 3),
        "codex": (2, 2, 3),
        "hermes": (3, 2, 1),
    }
    assert by_harness["hermes"].remember_calls == 1
    # Importing the same sessions again adds nothing.
    assert all((s.sessions, s.messages) == (0, 0) for s in again)
