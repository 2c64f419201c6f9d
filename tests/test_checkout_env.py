"""Issue 21, finding 10a: a checkout's .env may not choose the database, the identity or the
files cli-org uses; it still sets the harmless settings (config.DOTENV_TAKEN)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKTREE = Path(__file__).resolve().parents[1]


def _run(org, *args, cwd, env=None):
    """cli-org in a child process, from `cwd`, as a user whose own environment names only
    the server's data folder and database (the rest is left to defaults, and so to a .env)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ORG_", "CLI_ORG_"))}
    own = {k: v for k, v in org.env.items() if v}
    return subprocess.run(
        [sys.executable, "-m", "cli_org", *args],
        cwd=cwd,
        env={**base, **own, "CLI_ORG_WARM": "0", "PYTHONPATH": str(WORKTREE), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _checkout(tmp_path: Path, dotenv: str) -> Path:
    folder = tmp_path / "checkout"
    folder.mkdir()
    (folder / ".env").write_text(dotenv)
    return folder


@pytest.mark.slow
@pytest.mark.attack("config")
def test_a_checkouts_dotenv_cannot_choose_the_database(org, tmp_path):
    # The attacker's database: another one on the same server (any server would do).
    evil = org.server.url("postgres")
    dotenv = f"CLI_ORG_DATABASE_URL={evil}\nCLI_ORG_DATABASE=postgres\n"
    checkout = _checkout(tmp_path, dotenv)
    done = _run(org, "facts", "--json", cwd=checkout, env={"ORG_AGENT": "bot"})
    assert done.returncode == 0, done.stderr  # the user's own database answered
    assert json.loads(done.stdout) == []
    warned = [line for line in done.stderr.splitlines() if "in .env is ignored" in line]
    assert any("CLI_ORG_DATABASE_URL" in line for line in warned) and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.attack("config")
def test_a_checkouts_dotenv_cannot_choose_who_you_are(org, tmp_path):
    checkout = _checkout(tmp_path, "ORG_AGENT=boss\nORG_VIA=claude@laptop-3\n")
    _run(org, "remember", "ci", "Runners reboot nightly", "--source", "#ops-9", cwd=checkout)
    done = _run(org, "remember", "ci", "Runners are ephemeral", "--source", "#ops-9", "--as", "bot", cwd=checkout)
    with org.admin() as conn:
        rows = conn.execute("SELECT author, via FROM memory_facts ORDER BY id").fetchall()
    assert all(r["author"] != "boss" for r in rows)  # the owner was not impersonated
    assert done.returncode == 0, done.stderr
    assert rows[-1] == {"author": "bot", "via": "claude@laptop-3"}  # the harmless setting still applies
    assert done.stderr.count("\n") == 1 and "ORG_AGENT in .env is ignored" in done.stderr


@pytest.mark.slow
def test_the_environment_wins_over_a_harmless_dotenv_setting(org, tmp_path):
    checkout = _checkout(tmp_path, "ORG_VIA=from-dotenv@x\nAPP_SECRET=not-ours\n")
    done = _run(
        org,
        "remember",
        "ci",
        "Runners are small",
        "--source",
        "#ops-9",
        "--as",
        "bot",
        cwd=checkout,
        env={"ORG_VIA": "codex@ci-2"},
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    with org.admin() as conn:
        assert conn.execute("SELECT via FROM memory_facts").fetchone()["via"] == "codex@ci-2"


def test_the_warm_client_takes_the_same_settings_from_dotenv(tmp_path, monkeypatch):
    from cli_org.config import DOTENV_TAKEN
    from cli_org.faces.warm.client import environment

    checkout = _checkout(tmp_path, "CLI_ORG_DATABASE_URL=postgresql://evil.example/org\nCLI_ORG_WARM=0\nPGHOST=evil\n")
    monkeypatch.chdir(checkout)
    for key in ("CLI_ORG_DATABASE_URL", "CLI_ORG_WARM", "PGHOST"):
        monkeypatch.delenv(key, raising=False)
    env = environment()
    assert "CLI_ORG_DATABASE_URL" not in env and "PGHOST" not in env and env["CLI_ORG_WARM"] == "0"
    assert "CLI_ORG_WARM" in DOTENV_TAKEN


@pytest.mark.slow
@pytest.mark.attack("config")
def test_a_checkouts_oversized_dotenv_is_ignored_with_a_warning(org, tmp_path):
    """A .env of 5 MB (a setting, then padding) was read whole by every command and hook in
    the folder; now nothing in it is taken and the command says why, in one line."""
    from cli_org.config import DOTENV_MAX_BYTES

    checkout = _checkout(tmp_path, "ORG_VIA=codex@evil\n" + "#" * (80 * DOTENV_MAX_BYTES) + "\n")
    done = _run(org, "facts", "--json", cwd=checkout, env={"ORG_AGENT": "bot"})
    assert done.returncode == 0 and json.loads(done.stdout) == []
    assert done.stderr == "cli-org: warning: .env is ignored: over 64 KiB (no settings file is that long)\n"
