"""The command line as a new user meets it: .env identity, --json errors, usage errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WORKTREE = Path(__file__).resolve().parents[1]


def _run(org, *args, cwd, env=None, timeout=60):
    """cli-org in a child process, from `cwd`, importing this checkout."""
    base = {k: v for k, v in os.environ.items() if k not in ("ORG_AGENT", "ORG_VIA")}
    return subprocess.run(
        [sys.executable, "-m", "cli_org", *args],
        cwd=cwd,
        env={**base, **org.env, "PYTHONPATH": str(WORKTREE), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- .env is read before the command line is parsed --------------------------------------


def test_org_via_from_a_dotenv_file_and_org_agent_ignored(org, tmp_path):
    # ORG_AGENT picks the identity: a folder's .env may not set it (issue 21, finding 10a).
    (tmp_path / ".env").write_text("ORG_AGENT=other\nORG_VIA=claude@laptop-3\n")
    done = _run(
        org, "remember", "ci", "Runners are ephemeral", "--source", "#ops-9", "--as", "bot", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("cli-org: warning: ORG_AGENT in .env is ignored")
    fact_id = json.loads(done.stdout)["id"]
    with org.admin() as conn:
        row = conn.execute("SELECT author, via FROM memory_facts WHERE id = %s", (fact_id,)).fetchone()
    assert row == {"author": "bot", "via": "claude@laptop-3"}


def test_the_environment_and_the_command_line_win_over_dotenv(org, tmp_path):
    (tmp_path / ".env").write_text("ORG_VIA=ghost@nowhere\n")
    done = _run(
        org,
        "remember",
        "ci",
        "Runners reboot",
        "--source",
        "#ops-9",
        cwd=tmp_path,
        env={"ORG_AGENT": "bot", "ORG_VIA": "codex@ci"},
    )
    assert done.returncode == 0, done.stderr
    done = _run(
        org,
        "remember",
        "ci",
        "Runners are small",
        "--source",
        "#ops-9",
        "--as",
        "other",
        "--via",
        "cli@box",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    with org.admin() as conn:
        rows = [(r["author"], r["via"]) for r in conn.execute("SELECT author, via FROM memory_facts ORDER BY id")]
    assert rows == [("bot", "codex@ci"), ("other", "cli@box")]


# --- errors under --json ------------------------------------------------------------------


def test_errors_are_json_on_stderr_under_json(cli):
    code, out, err = cli("forget", "999", "gone", "--json", agent="bot")
    assert code == 1 and out == ""
    assert json.loads(err) == {"error": "no fact with id 999"}
    assert err.count("\n") == 1
    code, out, err = cli("forget", "999", "gone", agent="bot")
    assert code == 1 and err == "cli-org: no fact with id 999\n"


def test_usage_errors_are_json_under_json_too(cli):
    code, out, err = cli("recall", "x", "--limit", "0", "--json")
    assert code == 2 and out == ""
    assert "--limit" in json.loads(err)["error"] and err.count("\n") == 1


def test_not_utf8_argument_is_json_under_json(org, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "cli_org", b"recall", b"caf\xe9", b"--json"],
        cwd=tmp_path,
        env={**os.environ, **org.env, "PYTHONPATH": str(WORKTREE)},
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "not valid UTF-8" in json.loads(done.stderr)["error"]


# --- usage errors: exit 2, one line --------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["recall", ""],
        ["recall", "   "],
        ["search", ""],
        ["search", " \t"],
        ["sessions", "search", ""],
    ],
)
def test_an_empty_query_is_a_usage_error(cli, args):
    code, out, err = cli(*args, agent="bot")
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith("cli-org: ") and "empty" in err


@pytest.mark.parametrize(
    "args, named",
    [
        (["remember", "s", "claim"], "--source"),
        (["remember", "only-subject"], "CLAIM"),
        (["recall"], "QUESTION"),
        (["forget", "x", "why"], "ID"),
        (["facts", "--kind", "gossip"], "--kind"),
        (["no-such-command"], "no-such-command"),
    ],
)
def test_usage_errors_exit_2_with_one_line(cli, args, named):
    code, out, err = cli(*args, agent="bot")
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith("cli-org: ") and named in err and "--help" in err


def test_help_and_version_still_exit_0(cli):
    code, out, _ = cli("--version")
    assert code == 0 and "cli-org" in out
    code, out, _ = cli("facts", "--help")
    assert code == 0 and "Usage:" in out
