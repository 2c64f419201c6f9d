"""`cli-org hook claude-code stop`, run as Claude Code runs it (a child process, the Stop
hook's JSON on stdin) on hand-written transcripts: a correction in the turn that just ended
asks the agent to save it with org_remember, once per session; plain work, a lesson that is
already a fact, and a harness already continuing because a stop hook asked print nothing; a
hostile transcript path exits 0 with nothing printed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_org.archive.lessons import Lesson
from cli_org.session.hooks import ASK_LESSONS, ASKED, lesson_ask, parse_hook_input
from cli_org.store import facts
from tests.clients import query_model
from tests.helpers import hook

CORRECTION = "No, in this repo we always use pnpm, never npm."
CLAIM_WORDS = "always use pnpm, never npm"


def line(kind: str, uuid: str, content, **extra) -> str:
    """One transcript line as Claude Code writes it."""
    record = {
        "type": kind,
        "uuid": uuid,
        "sessionId": "s-stop",
        "timestamp": "2026-12-04T09:00:00Z",
        "cwd": "/home/dev/web",
        "message": {"role": kind, "content": content, **({"model": "m"} if kind == "assistant" else {})},
        **extra,
    }
    return json.dumps(record)


def transcript(folder: Path, *lines: str, name: str = "session.jsonl") -> Path:
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return path


def corrected(folder: Path) -> Path:
    """A turn in which the person corrects the agent's package manager."""
    return transcript(
        folder,
        line("user", "u1", "install the dependencies"),
        line("assistant", "a1", [{"type": "text", "text": "Running npm install now."}]),
        line("user", "u2", CORRECTION),
        line("assistant", "a2", [{"type": "text", "text": "Understood: pnpm install it is."}]),
    )


def plain(folder: Path) -> Path:
    """A turn of plain work: a typo fixed on request."""
    return transcript(
        folder,
        line("user", "u1", "fix the typo in the README heading"),
        line("assistant", "a1", [{"type": "text", "text": "Fixed: 'Instalation' is now 'Installation'."}]),
        name="plain.jsonl",
    )


def stop_input(path: Path | str, cwd: Path, **changes) -> str:
    data = {
        "session_id": "s-stop",
        "transcript_path": str(path),
        "cwd": str(cwd),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        **changes,
    }
    return json.dumps(data)


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "web"
    (folder / ".git").mkdir(parents=True)
    return folder


def asked(done) -> str:
    data = json.loads(done.stdout)
    assert data["decision"] == "block"
    return data["reason"]


@pytest.mark.slow
def test_a_correction_asks_once_per_session(org, project, tmp_path):
    path = corrected(tmp_path)
    reason = asked(hook(org, "stop", stop_input(path, project)))
    assert CLAIM_WORDS in reason and "org_remember" in reason and "why not" in reason
    # The same lesson at a later stop of the same session: asked already.
    assert hook(org, "stop", stop_input(path, project)).stdout == ""
    # Another session of the same agent has not been asked.
    assert CLAIM_WORDS in asked(hook(org, "stop", stop_input(path, project, session_id="s-other")))


@pytest.mark.slow
def test_plain_work_prints_nothing(org, project, tmp_path):
    done = hook(org, "stop", stop_input(plain(tmp_path), project))
    assert done.stdout == "" and done.stderr == ""


@pytest.mark.slow
def test_a_harness_continuing_because_a_stop_hook_asked_gets_nothing(org, project, tmp_path):
    done = hook(org, "stop", stop_input(corrected(tmp_path), project, stop_hook_active=True))
    assert done.stdout == "" and done.stderr == ""


@pytest.mark.slow
def test_a_lesson_that_is_already_a_fact_is_not_asked(org, project, tmp_path):
    with org.as_agent("other") as conn:  # any agent's fact: the team knows it
        facts.remember(conn, "pnpm", "In this repo we always use pnpm, never npm.", source="docs/dev.md")
    assert hook(org, "stop", stop_input(corrected(tmp_path), project)).stdout == ""


@pytest.mark.slow
@pytest.mark.vectors
def test_a_lesson_a_fact_says_in_other_words_is_not_asked(org, project, tmp_path):
    with org.as_agent("other") as conn:
        facts.remember(
            conn, "package manager", "This repo always uses pnpm, never npm.", source="docs/dev.md", project="web",
            embedder=query_model(org),
        )  # fmt: skip
    assert hook(org, "stop", stop_input(corrected(tmp_path), project)).stdout == ""


def _huge(folder: Path) -> Path:
    path = folder / "huge.jsonl"
    with path.open("wb") as fh:
        fh.truncate(3 << 30)  # 3 GiB of zeros, sparse: no line, no newline
    return path


def _link_to_dev_zero(folder: Path) -> Path:
    path = folder / "zero.jsonl"
    path.symlink_to("/dev/zero")
    return path


def _fifo(folder: Path) -> Path:
    path = folder / "pipe.jsonl"
    os.mkfifo(path)  # nobody writes: a blocking read would never end
    return path


def _not_json(folder: Path) -> Path:
    return transcript(folder, "{not json", "[1, 2", '{"type": "user", "message": 5}', "\x00\xff", name="bad.jsonl")


HOSTILE = {
    "link-to-dev-zero": _link_to_dev_zero,
    "missing": lambda folder: folder / "missing.jsonl",
    "directory": lambda folder: folder,
    "huge": _huge,
    "fifo": _fifo,
    "not-json": _not_json,
    "relative": lambda folder: Path("session.jsonl"),
    "nul-byte": lambda folder: f"{folder}/a\x00b.jsonl",
    "very-long": lambda folder: "/" + "a/" * 5000 + "x.jsonl",
}


@pytest.mark.slow
@pytest.mark.attack("hooks")
@pytest.mark.parametrize("make", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_transcript_path_exits_0_with_nothing(org, project, tmp_path, make):
    corrected(project)  # a real transcript beside it, for the relative path to find
    done = hook(org, "stop", stop_input(make(tmp_path), project), cwd=project)
    assert done.stdout == ""


@pytest.mark.slow
@pytest.mark.parametrize(
    "stdin",
    ["not json", "[]", "", '{"transcript_path": 5, "stop_hook_active": "yes"}', '{"hook_event_name": "Stop"}'],
    ids=["text", "list", "empty", "wrong-types", "no-transcript"],
)
def test_bad_stop_input_prints_nothing(org, stdin):
    assert hook(org, "stop", stdin).stdout == ""


def test_parse_hook_input_reads_the_stop_fields():
    read = parse_hook_input(stop_input("/t/s.jsonl", Path("/w"), stop_hook_active=True))
    assert read.event == "Stop" and read.transcript_path == "/t/s.jsonl" and read.stop_hook_active
    # Only JSON true means active: a string or a number is not.
    assert not parse_hook_input(stop_input("/t/s.jsonl", Path("/w"), stop_hook_active="true")).stop_hook_active


def test_at_most_two_lessons_are_named_best_first_and_remembered(org, project):
    found = [
        Lesson("u1", "The staging database listens on port 5433, not 5432.", "staging database", "failure", 0.7, "x"),
        Lesson("u2", "Run make lint before every commit.", "lint", "rule", 0.9, "rule"),
        Lesson("u3", "Keep the v1 routes until March.", "v1 routes", "decision", 0.8, "decision"),
    ]
    read = parse_hook_input(stop_input("/t/s.jsonl", project))
    with org.as_agent("bot") as conn:
        reason = json.loads(lesson_ask(conn, read, found))["reason"]
        assert ASK_LESSONS == 2
        assert reason.index("make lint") < reason.index("v1 routes") and "5433" not in reason
        # The third is asked at the next stop of the session; the two asked never again.
        assert "5433" in json.loads(lesson_ask(conn, read, found))["reason"]
        assert lesson_ask(conn, read, found) == ""
        keys = [r["hit_key"] for r in conn.execute("SELECT hit_key FROM context_delivered")]
        conn.commit()
        assert len(keys) == 3 and all(k.startswith(ASKED) for k in keys)
        assert not any("lint" in k for k in keys)  # a digest, never the words
        # A stop the harness makes because a stop hook asked: nothing, whatever was found.
        again = parse_hook_input(stop_input("/t/s.jsonl", project, session_id="s2", stop_hook_active=True))
        assert lesson_ask(conn, again, found) == ""


def test_a_claim_with_line_breaks_and_control_characters_is_one_line_in_the_ask(org, project):
    claim = "Deploy with make ship\n\x1b[31mnever\x1b[0m by hand." + "x" * 400
    odd = Lesson("u1", claim, "deploys", "rule", 0.9, "rule")
    with org.as_agent("bot") as conn:
        reason = json.loads(lesson_ask(conn, parse_hook_input(stop_input("/t", project)), [odd]))["reason"]
    quoted = reason.splitlines()[1]
    assert "\x1b" not in reason and quoted.startswith('- "Deploy with make ship') and len(quoted) < 200


def rollout_line(role: str, words: str) -> str:
    """One response item of a Codex rollout (Codex 0.169's transcript)."""
    part = "input_text" if role == "user" else "output_text"
    payload = {"type": "message", "role": role, "content": [{"type": part, "text": words}]}
    return json.dumps({"timestamp": "2026-12-04T09:00:00.000Z", "type": "response_item", "payload": payload})


@pytest.mark.slow
def test_codex_stop_reads_its_rollout(org, project, tmp_path):
    """Codex's Stop hook names its rollout; the answer is the same block."""
    meta = {"id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "timestamp": "2026-12-04T09:00:00.000Z", "cwd": str(project)}
    rollout = transcript(
        tmp_path,
        json.dumps({"timestamp": "2026-12-04T09:00:00.000Z", "type": "session_meta", "payload": meta}),
        rollout_line("user", "<environment_context>\n  <cwd>/home/dev/web</cwd>\n</environment_context>"),
        rollout_line("user", "install the dependencies"),
        rollout_line("assistant", "Running npm install now."),
        rollout_line("user", CORRECTION),
        rollout_line("assistant", "Understood: pnpm install it is."),
        name="rollout-2026-12-04T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
    )
    codex = ["hook", "codex", "stop", "--as", "bot"]
    reason = asked(hook(org, "stop", stop_input(rollout, project, turn_id="t1"), argv=codex))
    assert CLAIM_WORDS in reason and "org_remember" in reason
    # A Claude Code transcript handed to the Codex hook holds no Codex turn: nothing.
    assert hook(org, "stop", stop_input(corrected(tmp_path), project, session_id="s3"), argv=codex).stdout == ""
    # Codex gets the session-start and stop hooks from cli-org, no prompt hook.
    done = hook(org, "prompt", stop_input(rollout, project), argv=["hook", "codex", "prompt", "--as", "bot"])
    assert done.stdout == "" and "codex gets no prompt hook" in done.stderr
