"""Full-text session search: matching, newest first, snippets, filters and the limit bounds."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from cli_org.archive.importer import import_sessions
from cli_org.archive.sessions import search_messages
from cli_org.errors import InputError

pytestmark = pytest.mark.slow

NOW = datetime.now(UTC)


def _line(uuid, text, days_ago, kind="user", session="S"):
    at = (NOW - timedelta(days=days_ago)).isoformat()
    record = {"type": kind, "sessionId": session, "uuid": uuid, "timestamp": at, "message": {"content": text}}
    return json.dumps(record) + "\n"


@pytest.fixture
def archived(org, tmp_path):
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    (root / "S.jsonl").write_text(
        _line("m1", "The migration lock failed during the deploy", 3)
        + _line("m2", "Deploy finished and the migration is fine", 1, kind="assistant")
        + _line("m3", "Unrelated chatter about lunch", 2)
        + _line("m4", "deploy", 5)
        + _line("m5", "deploy deploy, the deploy again", 5)
    )
    sid = "00000000-0000-0000-0000-00000000c0de"
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "codex deploy notes"}]}
    lines = [
        {"timestamp": NOW.isoformat(), "type": "session_meta", "payload": {"id": sid}},
        {"timestamp": (NOW - timedelta(days=4)).isoformat(), "type": "response_item", "payload": item},
    ]
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / f"rollout-{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "projects", "codex": codex})
    return org


def _search(org, query, **options):
    with org.admin() as conn:
        return search_messages(conn, query, **options)


def test_every_keyword_must_match_newest_first(archived):
    hits = _search(archived, "migration deploy")
    assert [h.snippet for h in hits] == [
        "«Deploy» finished and the «migration» is fine",
        "«migration» lock failed during the «deploy»",
    ]
    assert [h.kind for h in hits] == ["assistant", "user"]
    assert hits[0].session == "S" and hits[0].harness == "claude-code"


def test_ties_in_time_go_to_the_better_match(archived):
    hits = _search(archived, "deploy")
    assert [h.snippet.count("«") for h in hits[-2:]] == [3, 1]  # both five days old
    assert [h.harness for h in hits].index("codex") == 2  # four days old, after days 1 and 3


def test_phrases_exclusions_and_harness_filter(archived):
    assert [h.snippet for h in _search(archived, '"migration lock"')] == ["«migration» «lock» failed during the deploy"]
    assert len(_search(archived, "deploy -lock")) == 4
    assert [h.harness for h in _search(archived, "deploy", harness="codex")] == ["codex"]
    assert _search(archived, "kubernetes") == []


def test_limit_bounds_in_the_library(archived):
    assert len(_search(archived, "deploy", limit=1)) == 1
    assert len(_search(archived, "deploy", limit=50)) == 5
    for bad in (0, 51):
        with pytest.raises(InputError, match="limit must be between 1 and 50"):
            _search(archived, "deploy", limit=bad)


def test_cli_search_text_json_and_refusals(cli, archived):
    code, out, _ = cli("sessions", "search", "migration deploy", "--limit", "1")
    assert code == 0 and out.count("\n") == 1
    assert "  claude-code  S  assistant  «Deploy» finished" in out
    (hit,) = json.loads(cli("sessions", "search", "lunch", "--json")[1])
    assert set(hit) == {"harness", "session", "project", "occurred_at", "kind", "tool_name", "rank", "snippet"}
    for bad in ("0", "51"):
        code, out, err = cli("sessions", "search", "deploy", "--limit", bad)
        assert code == 2 and out == "" and f"{bad} is not in the range 1<=x<=50" in err
    code, _, err = cli("sessions", "search", "the")
    assert code == 1 and "no searchable words" in err
    code, _, err = cli("sessions", "search", "  ")
    assert code == 2 and err.startswith("cli-org: invalid value for 'QUERY': is empty") and err.count("\n") == 1
    assert cli("sessions", "search", "kubernetes")[1] == "no matching messages\n"
    assert cli("sessions", "search", "deploy", "--harness", "gemini")[0] == 2


def test_real_transcripts_are_searchable(org, corpora):
    transcripts = corpora("transcripts")
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": transcripts / "claude-code", "hermes": transcripts / "hermes"})
    hits = _search(org, "desktop app", harness="hermes", limit=3)
    assert len(hits) == 3 and all("«desktop»" in h.snippet.lower() for h in hits)
    times = [h.occurred_at for h in hits]
    assert times == sorted(times, reverse=True)
    bash = _search(org, "mix test", harness="claude-code", limit=50)
    assert any(h.tool_name == "Bash" for h in bash)
