"""The Usage page and /api/usage over a real archive, read as the serving identity; refusals,
escaping, and the figures the library computes (tests/test_quoted.py tests the rule)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from cli_org.archive.importer import import_sessions

pytestmark = pytest.mark.slow

NOW = datetime.now(UTC)


def _line(n: int, role: str, content, session: str) -> str:
    stamp = (NOW - timedelta(hours=1) + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
    return (
        json.dumps(
            {
                "type": role,
                "sessionId": session,
                "uuid": f"{session}-{n}",
                "timestamp": stamp,
                "cwd": "/w/<b>app</b>",
                "message": {"role": role, "model": "m", "content": content},
            }
        )
        + "\n"
    )


@pytest.fixture
def archived(org, tmp_path):
    folder = tmp_path / "claude" / "-w-app"
    folder.mkdir(parents=True)
    session = "<script>alert(1)</script>"
    answer = "[fact #7] deploy: Deploys run from the release branch every Tuesday (docs; bot; today)"
    lines = [
        _line(1, "user", "How do we ship?", session),
        _line(
            2,
            "assistant",
            [{"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "cli-org recall 'how do we ship'"}}],
            session,
        ),
        _line(3, "user", [{"type": "tool_result", "tool_use_id": "c1", "content": answer}], session),
        _line(4, "assistant", [{"type": "text", "text": "Following fact #7."}], session),
    ]
    (folder / "s1.jsonl").write_text("".join(lines))
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "claude"})
        conn.execute(
            "INSERT INTO recall_events (agent, query, arms, hits, chars, ms) VALUES ('bot', 'ship', '{fact}', 1, 90, 4)"
        )
        conn.commit()
    return org


def test_the_usage_page_shows_adoption_quotes_agents_and_sessions(archived, web):
    page = web("boss").get("/usage")
    assert page.status_code == 200
    text = page.text
    assert "<svg" in text and "Adoption over time" in text and "Hits later quoted" in text
    assert "<strong>1 tied</strong>" in text
    # The fact arm: one recall, one hit, quoted by its id.
    assert '<span class="arm fact">fact</span></td><td class="num">1</td><td class="num">1</td>' in text
    assert "100.0%" in text
    # A session id and a folder an agent's transcript chose are escaped.
    assert "<script>alert(1)</script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert ">bot</td>" in text


def test_the_usage_api_matches_the_library(archived, web):
    from pydantic import TypeAdapter

    from cli_org.archive.usage import UsageDetail, usage_detail

    data = web("bot").get("/api/usage", params={"days": 30, "by": "week"}).json()
    with archived.as_agent("bot") as conn:  # the JSON reads back as the very dataclass the library returns
        assert TypeAdapter(UsageDetail).validate_python(data) == usage_detail(conn, 30, "week")
    assert data["quoted"]["tied"] == 1
    assert {a["arm"]: a["quoted"] for a in data["quoted"]["arms"]} == {"fact": 1, "memory": 0, "vault": 0}
    assert data["sessions"][0]["session"] == "<script>alert(1)</script>"  # JSON carries the text as stored
    assert data["agents"][0]["agent"] == "bot" and data["agents"][0]["chars_median"] == 90


def test_usage_refusals(web):
    client = web("bot")
    assert client.get("/api/usage", params={"days": 0}).status_code == 422
    assert client.get("/api/usage", params={"days": 3651}).status_code == 422
    assert client.get("/api/usage", params={"by": "month"}).status_code == 422
    assert client.get("/usage", params={"days": "x"}).status_code == 422
    assert client.post("/api/usage", json={}).status_code == 405  # read-only


def test_an_empty_archive_says_so(web):
    text = web("bot").get("/usage", params={"days": 7}).text
    assert "none archived yet" in text and "no data yet" in text
    assert "No archived session recalled or remembered in the last 7 days." in text


def test_the_schema_names_the_usage_api(web):
    schema = web("boss").get("/api/openapi.json").json()
    assert "/api/usage" in schema["paths"]
    assert {"quoted", "over_time", "sessions"} <= set(schema["components"]["schemas"]["UsageDetail"]["properties"])


def test_the_page_reads_stored_verdicts_and_applies_no_rule(archived, web, monkeypatch):
    """The verdicts were stored at import (archive/verdicts.py): a page, the first after the
    server starts included, reads them and judges no transcript."""
    from cli_org.archive import verdicts

    def judged_again(*args, **kwargs):
        raise AssertionError("the page judged a session")

    monkeypatch.setattr(verdicts, "quoted_in_session", judged_again)
    page = web("boss").get("/usage")
    assert page.status_code == 200 and "<strong>1 tied</strong>" in page.text
    assert "not judged yet" not in page.text


def test_a_session_dated_in_year_9999_is_counted_but_draws_no_endless_axis(org, web, tmp_path):
    folder = tmp_path / "claude" / "-w-far"
    folder.mkdir(parents=True)
    far = datetime(9999, 12, 31, 12, tzinfo=UTC)
    lines = [
        json.dumps(
            {
                "type": role,
                "sessionId": "far",
                "uuid": f"far-{n}",
                "timestamp": (far + timedelta(seconds=n)).isoformat(),
                "cwd": "/w/far",
                "message": {"role": role, "model": "m", "content": content},
            }
        )
        + "\n"
        for n, role, content in [
            (1, "user", "How do we ship?"),
            (
                2,
                "assistant",
                [{"type": "tool_use", "id": "c9", "name": "Bash", "input": {"command": "cli-org recall ship"}}],
            ),
            (3, "user", [{"type": "tool_result", "tool_use_id": "c9", "content": "nothing found"}]),
        ]
    ]
    (folder / "far.jsonl").write_text("".join(lines))
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "claude"})
        conn.commit()
    client = web("boss")
    for by in ("day", "week"):
        page = client.get("/usage", params={"days": 3650, "by": by})
        assert page.status_code == 200 and ">far<" in page.text
    assert any(s["session"] == "far" for s in client.get("/api/usage", params={"days": 3650}).json()["sessions"])
