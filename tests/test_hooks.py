"""The Claude Code hooks, run as the harness runs them: a child process with recorded hook
JSON on stdin. Session start gets the context block; each prompt only the new on-match hits;
nothing applies, nothing printed; the database unreachable or silent, exit 0 and nothing."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cli_org.session.context import tokens
from cli_org.session.hooks import PROMPT_BUDGET, SESSION_START_BUDGET, fail_open, parse_hook_input
from cli_org.store import facts, notebook
from tests.helpers import hook

WORKTREE = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).resolve().parent / "data" / "hooks"


def recorded(name: str, **changes) -> str:
    """A hook input as Claude Code sends it (tests/data/hooks/), with some fields changed."""
    data = json.loads((RECORDED / f"{name}.json").read_text())
    data.update(changes)
    return json.dumps(data)


def context_of(done, event_name: str) -> str:
    data = json.loads(done.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == event_name
    return data["hookSpecificOutput"]["additionalContext"]


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "web"
    (folder / ".git").mkdir(parents=True)
    return folder


@pytest.mark.slow
def test_session_start_then_prompts_deliver_only_what_is_new(org, project):
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night from the release branch", source="docs/deploy.md")
        notebook.add(conn, "memory", "Run make lint before every commit")
    start = hook(org, "session-start", recorded("session_start", cwd=str(project)))
    block = context_of(start, "SessionStart")
    assert "Deploys run at night" in block and "make lint" in block
    assert tokens(block) <= SESSION_START_BUDGET

    # A fact learned during the session matches the next prompt: it comes once.
    with org.as_agent("other") as conn:
        facts.remember(conn, "flaky", "The payments e2e test is flaky on Fridays", source="ci/log.txt")
    # (A prompt holding the fact's words: the hook's own bar passes it with or without a
    # query model; tests/test_answer_shape.py has the bar itself.)
    prompt = recorded("prompt", cwd=str(project), prompt="is the payments e2e test flaky?")
    first = context_of(hook(org, "prompt", prompt), "UserPromptSubmit")
    assert "payments e2e test is flaky" in first and "Deploys run at night" not in first
    assert "make lint" not in first and tokens(first) <= PROMPT_BUDGET
    assert hook(org, "prompt", prompt).stdout == ""  # the same session: nothing new

    # Another session has seen nothing yet: it gets the hit again.
    other = recorded("prompt", cwd=str(project), session_id="another-session", prompt="payments e2e flaky?")
    assert "payments e2e test is flaky" in context_of(hook(org, "prompt", other), "UserPromptSubmit")


@pytest.mark.slow
@pytest.mark.parametrize("source", ["compact", "clear", "resume"])
def test_a_compacted_cleared_or_resumed_session_gets_the_block_again(org, project, source):
    """The conversation no longer holds what the session start delivered: a SessionStart
    with a source other than startup delivers the stable block again, in full."""
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night from the release branch", source="docs/deploy.md")
        notebook.add(conn, "memory", "Run make lint before every commit")
    first = context_of(hook(org, "session-start", recorded("session_start", cwd=str(project))), "SessionStart")
    assert hook(org, "session-start", recorded("session_start", cwd=str(project))).stdout == ""  # a repeat
    again = hook(org, "session-start", recorded("session_start", cwd=str(project), source=source))
    assert context_of(again, "SessionStart") == first
    # What the prompt hook adds is still only what is new in the session.
    prompt = recorded("prompt", cwd=str(project), prompt="when do deploys run?")
    assert "Deploys run at night" not in hook(org, "prompt", prompt).stdout


@pytest.mark.slow
def test_a_memory_line_holding_every_word_of_the_prompt_is_not_added(org, project):
    """The prompt hook's bar passes facts only (HookShaping): a bot's note that holds both
    words of "run the tests" spoke on that everyday instruction before the bar."""
    memory = project / ".agents/org/memory"
    memory.mkdir(parents=True)
    (memory / "builder.md").write_text("- run the tests with `make check`, never plain pytest\n")
    prompt = recorded("prompt", cwd=str(project), prompt="run the tests")
    assert hook(org, "prompt", prompt).stdout == ""


@pytest.mark.slow
def test_nothing_applies_prints_nothing(org, project):
    assert hook(org, "session-start", recorded("session_start", cwd=str(project))).stdout == ""
    done = hook(org, "prompt", recorded("prompt", cwd=str(project), prompt="zebra quasar nebula"))
    assert done.stdout == "" and done.stderr == ""
    done = hook(org, "prompt", recorded("prompt", cwd=str(project), prompt="   "))
    assert done.stdout == ""


@pytest.mark.slow
def test_a_long_prompt_is_cut_to_a_question(org, project):
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night", source="docs/deploy.md")
    long = "when do deploys run at night? " * 300  # 1,800 words, 9,000 characters
    done = hook(org, "prompt", recorded("prompt", cwd=str(project), prompt=long))
    assert "Deploys run at night" in context_of(done, "UserPromptSubmit") and done.stderr == ""


@pytest.mark.slow
def test_each_agent_sees_only_its_own_notebook(org, project):
    with org.as_agent("bot") as conn:
        notebook.add(conn, "memory", "The staging password rotates on Mondays")
    done = hook(org, "session-start", recorded("session_start", cwd=str(project)), agent="other")
    assert "staging password" not in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "stdin",
    ["not json at all", "[1, 2]", "", '{"session_id": 5, "prompt": ["x"]}'],
    ids=["text", "list", "empty", "wrong-types"],
)
def test_bad_hook_input_prints_nothing_and_exits_0(org, stdin):
    assert hook(org, "prompt", stdin).stdout == ""


@pytest.mark.slow
def test_an_unknown_agent_prints_nothing_and_exits_0(org, project):
    done = hook(org, "session-start", recorded("session_start", cwd=str(project)), agent="ghost")
    assert done.stdout == "" and "ghost" in done.stderr


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_database_down_exits_0_with_nothing(org, project):
    down = {"CLI_ORG_DATABASE_URL": f"postgresql://bot@127.0.0.1:{_closed_port()}/org"}
    for event, name in (("session-start", "session_start"), ("prompt", "prompt")):
        done = hook(org, event, recorded(name, cwd=str(project)), env=down)
        assert done.stdout == "" and "cannot connect" in done.stderr


@pytest.mark.slow
def test_a_server_that_never_answers_is_given_up_on(org, project):
    """A port that accepts connections and then says nothing: the hook's own bound ends it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = []
    stop = threading.Event()

    def hold() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        silent = {"CLI_ORG_DATABASE_URL": f"postgresql://bot@127.0.0.1:{listener.getsockname()[1]}/org"}
        done = hook(org, "session-start", recorded("session_start", cwd=str(project)), env=silent)
        assert done.stdout == "" and accepted
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        listener.close()


def test_fail_open_returns_nothing_after_the_deadline_and_on_errors():
    release = threading.Event()
    slow = fail_open(lambda: release.wait(30) and "late", seconds=0.2)
    release.set()
    assert slow.text == "" and not slow.finished and "0.2" in (slow.problem or "")

    def broken() -> str:
        raise RuntimeError("boom")

    failed = fail_open(broken, seconds=5)
    assert failed.text == "" and failed.finished and failed.problem == "boom"
    assert fail_open(lambda: "ok", seconds=5).text == "ok"


def test_parse_hook_input_reads_the_recorded_fields():
    start = parse_hook_input(recorded("session_start"))
    assert start.event == "SessionStart" and start.session_id and start.cwd and start.prompt is None
    prompt = parse_hook_input(recorded("prompt"))
    assert prompt.event == "UserPromptSubmit" and prompt.prompt and prompt.session_id == start.session_id


@pytest.mark.parametrize(
    "args",
    [
        ["hook", "claude-code", "sesion-start", "--as", "bot"],  # a mistyped event
        ["hook", "claude-code", "SessionStart", "--as", "bot"],  # the harness's name for it
        ["hook", "claude", "prompt", "--as", "bot"],
        ["hook", "codex", "prompt", "--as", "bot"],  # Codex gets session-start and stop only
        ["hook", "hermes", "stop", "--as", "bot"],  # Hermes gets session-start only
        ["hook", "claude-code", "prompt", "--as"],
        ["hook", "claude-code", "prompt", "--as", "bot", "--bogus"],
        ["--json", "hook", "claude-code", "prompt"],  # an option the group does not know
        ["hook"],
    ],
)
def test_a_mistyped_hook_command_line_exits_0_never_2(args):
    """A harness reads exit 2 from a hook as "block this prompt"; a hook fails open."""
    done = subprocess.run(
        [sys.executable, "-m", "cli_org", *args],
        input=recorded("prompt"),
        env={**os.environ, "PYTHONPATH": str(WORKTREE)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert len(done.stderr.splitlines()) == 1, done.stderr


# --- Codex and Hermes at a session's start (issue 37) -------------------------------------------


def codex_start(project: Path, source: str = "startup") -> str:
    """A SessionStart input as Codex 0.169 sends it (its fields, seen in a real run)."""
    return json.dumps(
        {
            "session_id": "01a241c6-4a98-7320-a06e-7e06e1f0b0b8",
            "transcript_path": "/home/dev/.codex/sessions/rollout.jsonl",
            "cwd": str(project),
            "hook_event_name": "SessionStart",
            "model": "gpt-5",
            "permission_mode": "default",
            "source": source,
        }
    )


def hermes_turn(project: Path, first: bool, history: object = None) -> str:
    """A pre_llm_call input as Hermes 0.19 sends it (agent/shell_hooks.py, seen in a real run)."""
    extra = {"user_message": "hello", "conversation_history": history or [], "is_first_turn": first}
    return json.dumps(
        {"hook_event_name": "pre_llm_call", "session_id": "20261204_155828_fdf7d7", "cwd": str(project), "extra": extra}
    )


def harness_hook(org, harness: str, stdin: str, **kwargs):
    return hook(org, "", stdin, argv=["hook", harness, "session-start", "--as", "bot"], **kwargs)


@pytest.mark.slow
def test_codex_session_start_gives_the_block_and_again_after_compaction(org, project):
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night from the release branch", source="docs/deploy.md")
    first = context_of(harness_hook(org, "codex", codex_start(project)), "SessionStart")
    assert "Deploys run at night" in first and tokens(first) <= SESSION_START_BUDGET
    assert harness_hook(org, "codex", codex_start(project)).stdout == ""  # delivered in this session
    assert context_of(harness_hook(org, "codex", codex_start(project, "compact")), "SessionStart") == first


@pytest.mark.slow
def test_hermes_gets_the_block_on_the_first_turn_and_when_the_conversation_lost_it(org, project):
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night from the release branch", source="docs/deploy.md")
    block = json.loads(harness_hook(org, "hermes", hermes_turn(project, True)).stdout)["context"]
    assert block.startswith("== Org context for bot, project web ==") and "Deploys run at night" in block
    # A later turn whose history still holds it (what Hermes keeps as the message's api_content):
    # nothing, and no connection (a database that is down is never tried).
    held = [{"role": "user", "content": "hello", "api_content": "hello\n\n" + block}]
    down = {"CLI_ORG_DATABASE_URL": f"postgresql://bot@127.0.0.1:{_closed_port()}/org"}
    done = harness_hook(org, "hermes", hermes_turn(project, False, held), env=down)
    assert (done.stdout, done.stderr) == ("", "")
    # A later turn whose history lost it (a compaction summarised the first turn): all again.
    lost = [{"role": "user", "content": "[CONTEXT COMPACTION] summary of earlier turns"}]
    again = json.loads(harness_hook(org, "hermes", hermes_turn(project, False, lost)).stdout)["context"]
    assert again == block


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stdin", "given"),
    [
        ("not json", False),
        ("[1]", False),
        # No usable history: read as a conversation that holds no block, so it gets one.
        (json.dumps({"extra": "first"}), True),
        (json.dumps({"extra": {"is_first_turn": "true"}, "session_id": 7, "cwd": ["/"]}), True),
        (json.dumps({"extra": {"is_first_turn": True}, "session_id": "s" * 5000, "cwd": "relative/web"}), True),
    ],
    ids=["text", "list", "extra-text", "wrong-types", "long-session"],
)
def test_hostile_hermes_input_gives_nothing_or_the_plain_block_and_exits_0(org, stdin, given):
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night from the release branch", source="docs/deploy.md")
    done = harness_hook(org, "hermes", stdin)
    if given:
        assert "Deploys run at night" in json.loads(done.stdout)["context"]
    else:
        assert done.stdout == "" and "not" in done.stderr
