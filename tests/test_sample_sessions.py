"""The demo's sample sessions (eval/sample/sessions): laid out as each harness keeps them,
imported by the real importer, they fill the Sessions and Usage pages."""

import importlib.util
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

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


def _session_of(stores, prefix: str) -> tuple[str, str]:
    """(harness, session id) of the sample transcript whose file name starts with, or holds, prefix."""
    for harness in ("claude-code", "codex"):
        for path in stores[harness].glob("**/*.jsonl"):
            if prefix in path.name:
                return harness, path.stem[-36:]
    raise AssertionError(f"no sample transcript named {prefix}")


def test_the_demos_import_proposes_the_samples_lessons_and_nothing_from_plain_work(org, cli, tmp_path):
    """The demo's own command on the sample: a proposal for each of the five lessons the
    sessions hold (a correction, a rule, a failure and its fix, a decision, a remember-that),
    none from the three sessions of plain work (a typo, a rename fixed within the task, a
    version bump, questions answered, a disk cleaned)."""
    stores = _stores(tmp_path, now=datetime.now(UTC))
    # The demo's three imports, each store one agent's (bot, lead and other stand in for
    # builder, reviewer and ops).
    outs = []
    for flag, store, agent in (("--claude", "claude-code", "bot"), ("--codex", "codex", "lead"),
                               ("--hermes", "hermes", "other")):  # fmt: skip
        code, out, err = cli("archive", "import", flag, str(stores[store]), "--agent", agent)
        assert code == 0, err
        outs.append(out)
    assert "claude-code: 3 files, 3 with new lines; 3 sessions" in outs[0] and "lessons proposed" in outs[0], outs
    code, out, err = cli("proposals", "--json", agent="boss")
    assert code == 0, err
    proposed = json.loads(out)
    claims = {(p["harness"], p["project"]): [] for p in proposed}
    for p in proposed:
        claims[(p["harness"], p["project"])].append(p["claim"].lower())
        assert p["agent"] == {"claude-code": "bot", "codex": "lead", "hermes": "other"}[p["harness"]]
    lessons = {
        ("claude-code", "web"): ("pnpm", "never npm"),
        ("claude-code", "api"): ("make lint", "before every commit"),
        ("codex", "api"): ("5433", "not 5432"),
        ("hermes", "api"): ("v1 routes", "until march"),
    }
    for (harness, project), needed in lessons.items():
        assert any(all(w in c for w in needed) for c in claims.get((harness, project), [])), (harness, project, claims)
    assert any("courier webhook" in c and "24 hours" in c for c in claims[("hermes", "api")]), claims
    # Plain work proposes nothing: the typo, rename and question session (Claude Code), the
    # version bump (Codex), the runner's disk (Hermes, the only session in web).
    plain = {_session_of(stores, "c996bdc5"), _session_of(stores, "fb318439")}
    assert not [p for p in proposed if (p["harness"], p["session"]) in plain or p["project"] is None]
    assert ("hermes", "web") not in claims
    # The demo run again (a new temporary folder, the same sessions): nothing new.
    again = _stores(tmp_path / "again", now=datetime.now(UTC))
    code, out, _ = cli(
        "archive", "import", "--claude", str(again["claude-code"]), "--codex", str(again["codex"]),
        "--hermes", str(again["hermes"]),
    )  # fmt: skip
    assert code == 0 and "0 sessions and 0 messages added" in out and "proposals: 0 lessons proposed" in out, out


def test_the_layout_script_explains_itself_and_refuses_an_option_as_a_folder(tmp_path):
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "scripts" / "sample-sessions.py"
    done = subprocess.run([sys.executable, script, "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and "OUT/claude" in done.stdout
    done = subprocess.run([sys.executable, script, "-x"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "usage:" in done.stdout
    assert list(tmp_path.iterdir()) == []  # no folder named after the option
