"""sessions show: one archived session whole, tool calls with their command and result."""

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from cli_org.archive.importer import import_sessions
from cli_org.archive.sessions import show_session
from cli_org.errors import NotFound

pytestmark = pytest.mark.slow

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _record(uuid, kind, content, minute):
    return {
        "type": kind,
        "sessionId": "S1",
        "uuid": uuid,
        "timestamp": (START + timedelta(minutes=minute)).isoformat(),
        "cwd": "/w/app",
        "message": {"role": kind, "content": content},
    }


@pytest.fixture
def session(org, tmp_path):
    lines = [
        _record("u1", "user", "Why does the deploy fail?", 0),
        _record(
            "a1",
            "assistant",
            [
                {"type": "text", "text": "Let me look at the log."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "tail -n 2 deploy.log"}},
            ],
            1,
        ),
        _record(
            "t1",
            "user",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "line one\nERROR \x1b[31mlock held\x1b[0m"}],
            2,
        ),
        _record("a2", "assistant", [{"type": "text", "text": "A migration lock is held.\nRetry after it clears."}], 3),
    ]
    root = tmp_path / "projects" / "-w-app"
    root.mkdir(parents=True)
    (root / "S1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "projects"})
    return org


def test_show_session_folds_results_into_their_calls(session):
    with session.admin() as conn:
        found = show_session(conn, "S1")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert (found.harness, found.cwd, found.tool_calls) == ("claude-code", "/w/app", 1)
    assert [(t.kind, t.tool.name if t.tool else None) for t in found.messages] == [
        ("user", None),
        ("assistant", None),
        ("assistant", "Bash"),
        ("assistant", None),
    ]
    call = found.messages[2].tool
    assert call.command == "tail -n 2 deploy.log" and call.call_id == "toolu_1"
    assert call.result == "line one\nERROR \x1b[31mlock held\x1b[0m"


def test_cli_sessions_show_text_is_safe_and_json_whole(cli, session):
    code, out, err = cli("sessions", "show", "S1")
    assert (code, err) == (0, "")
    assert out.startswith(
        "session claude-code; S1; project app; cwd /w/app\n4 messages, 1 tool call; 2026-03-01 09:00 to "
    )
    assert (
        "tool call Bash (toolu_1)\n  $ tail -n 2 deploy.log\n  result:\n    line one\n    ERROR \ufffd[31mlock" in out
    )
    assert "\x1b" not in out
    assert "  A migration lock is held.\n  Retry after it clears." in out
    assert out.index("Why does the deploy fail?") < out.index("tool call Bash") < out.index("A migration lock")
    data = json.loads(cli("sessions", "show", "S1", "--json")[1])
    assert data["external_id"] == "S1" and len(data["messages"]) == 4
    assert data["messages"][2]["tool"]["result"].endswith("lock held\x1b[0m")  # JSON keeps the text as stored


def test_cli_sessions_show_unknown(cli, session):
    code, out, err = cli("sessions", "show", "nope")
    assert code == 1 and out == "" and err.startswith("cli-org: no archived session 'nope'")
    with session.admin() as conn, pytest.raises(NotFound):
        show_session(conn, "S1", harness="hermes")
