"""Error shapes (issue 33, finding 7): a bad project name is a usage error; a raw database
error ("bigint out of range", "role ... is a member of role ...") never reaches the user; the
web API refuses with {"error": ...} whatever refuses; a visitor without the token sees nothing
of the org; a checkout's .env cannot stop every command with an out-of-range setting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WORKTREE = Path(__file__).resolve().parents[1]


@pytest.mark.attack("fuzz")
@pytest.mark.parametrize("command", [("tidy",), ("todo", "list"), ("facts",)])
def test_a_project_with_a_line_break_is_a_usage_error(cli, command):
    code, out, err = cli(*command, "--project", "x\ny", agent="bot")
    assert code == 2 and out == "" and err.count("\n") == 1 and "project" in err, (code, out, err)


@pytest.mark.attack("fuzz")
def test_an_agent_named_after_the_member_group_is_one_clean_line(cli, org):
    code, out, err = cli("agents", "add", "member")
    assert code == 1 and err.count("\n") == 1, (code, out, err)
    assert "is a member of role" not in err and "member group" in err, err


@pytest.mark.attack("fuzz")
def test_a_number_past_bigint_is_never_a_raw_database_error(org):
    """The net under every path the faces do not bound: the library's translation."""
    from cli_org.db.errors import translated
    from cli_org.errors import InputError

    with org.as_agent("bot") as conn, pytest.raises(InputError, match="out of range") as caught, translated(conn):
        conn.execute("SELECT id FROM memory_facts WHERE id = %s::numeric::bigint", (str(10**20),))
    assert "1 to 9223372036854775807" in str(caught.value)


@pytest.mark.attack("web")
def test_the_apis_own_refusals_are_error_objects(web):
    client = web("bot")
    too_short = client.post("/api/recall", json={"q": ""})
    assert too_short.status_code == 422 and set(too_short.json()) == {"error"}, too_short.text
    assert "q" in too_short.json()["error"]
    broken = client.post("/api/recall", content=b"{", headers={"content-type": "application/json"})
    assert broken.status_code in (400, 422) and set(broken.json()) == {"error"}, broken.text
    missing = client.get("/api/no-such-thing")
    assert missing.status_code == 404 and set(missing.json()) == {"error"}, missing.text


@pytest.mark.attack("web")
def test_a_visitor_without_the_token_sees_only_how_to_get_in(web, org):
    client = web("boss", login=False)
    page = client.get("/facts")
    assert page.status_code == 401
    text = page.text
    assert "token" in text
    assert "boss" not in text and org.name not in text and "<nav" not in text, text
    assert "/facts" not in text and "/agents" not in text, text


@pytest.mark.attack("config")
@pytest.mark.parametrize(
    "setting", ["CLI_ORG_STATEMENT_TIMEOUT=999999999", "CLI_ORG_LOCK_WAIT=-1", "ORG_RECALL_MIN_SIMILARITY=nan"]
)
def test_an_out_of_range_dotenv_setting_is_ignored_not_fatal(org, tmp_path, setting):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".env").write_text(setting + "\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ORG_", "CLI_ORG_"))}
    own = {k: v for k, v in org.env.items() if v}
    done = subprocess.run(
        [sys.executable, "-m", "cli_org", "facts", "--json"],
        cwd=checkout,
        env={**base, **own, "CLI_ORG_WARM": "0", "PYTHONPATH": str(WORKTREE), "ORG_AGENT": "bot"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    name = setting.split("=")[0]
    assert done.stderr.count("\n") == 1 and f"{name}=" in done.stderr and "ignored" in done.stderr, done.stderr
