"""What agent X actually sees, and which answers were used (issue 26): an agent's page shows
its session-start block as `cli-org context` gives that agent, read with the viewer's rights;
each recall's hits are stored with its log line (recall_hits, migration 0034) and a past
recall is shown from them, never asked again; a fact's page counts its hits and quotes.
Over a real database, through the library, the CLI and the web API, and from a member's own
login for the row-level security."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from cli_org.archive.verdicts import fact_recalls
from cli_org.db.connect import connect
from cli_org.errors import InputError, NotFound
from cli_org.recall.answer import recall
from cli_org.recall.past import past_recall
from cli_org.session.context import build_context
from cli_org.store import notebook as nb
from cli_org.store import pins, todos
from tests import web_site
from tests.web_site import remember

site = web_site.site  # the fixtures (tests/web_site.py)

pytestmark = pytest.mark.slow

SECRET = "The bot's notebook says the staging password rotates on Fridays."


def _bot_state(org) -> dict[str, int]:
    """A bot with a notebook, a pinned fact, a todo and facts of two kinds."""
    decision = remember(org, "bot", "deploys", "Deploys run from the main branch only.", kind="decision")
    plain = remember(org, "bot", "builds", "Builds take nine minutes on the shared runner.")
    remember(org, "other", "billing", "Invoices go out on the first working day.", kind="rule")
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", SECRET)
        nb.add(conn, "user", "Prefers short answers.")
        pins.pin(conn, decision)
        todos.add_todo(conn, "Move the build cache to the new runner")
    return {"decision": decision, "plain": plain}


def _own_block(org, settings, agent: str = "bot", **kw) -> str:
    with org.as_agent(agent) as conn:
        return build_context(conn, settings=settings, **kw).text


def _counts(org) -> tuple[int, int, int]:
    with org.admin() as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM recall_events) AS e, (SELECT count(*) FROM recall_hits) AS h,"
            " (SELECT count(*) FROM tool_calls) AS t"
        ).fetchone()
    return row["e"], row["h"], row["t"]


# --- the session-start block ----------------------------------------------------------------


def test_the_block_shown_is_what_context_gives_the_agent_where_the_viewer_may_read_it(org, site, cli):  # noqa: F811
    _bot_state(org)
    own = _own_block(org, site.settings)
    assert SECRET in own and "Pinned:" in own and "Open todos:" in own  # the whole block, notebook first
    for viewer in ("bot", "lead", "boss"):  # itself, its team lead, an owner: all of it
        data = site(viewer).get("/api/agents/bot").json()["context"]
        assert data["text"] == own and data["agent"] == "bot" and data["hidden"] == [], viewer
        with org.as_agent(viewer) as conn:
            assert build_context(conn, settings=site.settings, agent="bot").text == own
    page = site("lead").get("/agents/bot").text
    assert "Session-start block" in page and "staging password rotates on Fridays" in page
    # The CLI prints the same bytes, and with a project that project's block.
    code, out, err = cli("context", "--of", "bot", agent="lead")
    assert (code, out, err) == (0, own, "")
    code, out, _ = cli("context", "--of", "bot", "--json", agent="boss")
    assert code == 0 and json.loads(out)["hidden"] == []
    remember(org, "bot", "web", "The web project deploys on Tuesdays.", project="web")
    in_web = _own_block(org, site.settings, project="web")
    assert "deploys on Tuesdays" in in_web
    assert site("boss").get("/api/agents/bot", params={"project": "web"}).json()["context"]["text"] == in_web
    assert "deploys on Tuesdays" not in site("boss").get("/api/agents/bot").json()["context"]["text"]


def test_a_part_the_viewer_may_not_read_is_named_hidden_never_shown(org, site, cli):  # noqa: F811
    ids = _bot_state(org)
    own = _own_block(org, site.settings)
    client = site("other")  # neither bot, nor its lead, nor an owner
    data = client.get("/api/agents/bot").json()
    block = data["context"]
    assert [h["part"] for h in block["hidden"]] == ["notebook"]
    assert "only bot, its team lead or an owner" in block["hidden"][0]["reason"]
    assert "staging password" not in json.dumps(data) and "short answers" not in json.dumps(data)
    assert "Notebook" not in block["text"] and block["text"] != own
    # Everything else is the agent's: its pinned decision, its todo, the facts by kind.
    assert f"#{ids['decision']}" in block["text"] and "Move the build cache" in block["text"]
    assert f"#{ids['plain']} builds" in block["text"] and "Invoices go out" in block["text"]
    page = client.get("/agents/bot").text
    assert "staging password" not in page and "Hidden from other: the notebook" in page
    code, out, err = cli("context", "--of", "bot", agent="other")
    assert code == 0 and out == block["text"] and "staging password" not in out
    assert err.startswith("hidden from you: notebook: only bot, its team lead or an owner")
    code, out, _ = cli("context", "--of", "bot", "--json", agent="other")
    assert "staging password" not in out and json.loads(out)["hidden"][0]["part"] == "notebook"


def test_another_agents_block_is_only_its_session_start_block(org, site):  # noqa: F811
    with org.as_agent("lead") as conn:
        with pytest.raises(InputError, match="no --for, no --session"):
            build_context(conn, settings=site.settings, agent="bot", for_text="deploys")
        with pytest.raises(InputError, match="no --for, no --session"):
            build_context(conn, settings=site.settings, agent="bot", session="s1")
        with pytest.raises(NotFound, match="no agent named 'ghost'"):
            build_context(conn, settings=site.settings, agent="ghost")
    assert site("boss").get("/api/agents/bot", params={"project": "x" * 201}).status_code == 422
    with org.admin() as conn:  # building it wrote nothing: no delivery record, no recall
        assert conn.execute("SELECT count(*) AS n FROM context_delivered").fetchone()["n"] == 0
        assert conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"] == 0


# --- past recalls, stored and shown ------------------------------------------------------


def test_a_recalls_hits_are_stored_and_shown_exactly_without_asking_again(org, site):  # noqa: F811
    fid = remember(org, "bot", "rollback", "A rollback needs the VPN profile and `make rollback`.")
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", "Rollback drills need the VPN profile on Thursdays.")
        result = recall(conn, "rollback deploy vpn", settings=site.settings)
    assert {h.arm for h in result.hits} == {"fact", "memory", "vault"}  # every arm is stored
    with org.admin() as conn:
        event = conn.execute("SELECT id, agent FROM recall_events ORDER BY id DESC LIMIT 1").fetchone()
        rows = conn.execute(
            "SELECT agent, rank, arm, fact_id, path, line, text FROM recall_hits WHERE event_id = %s ORDER BY rank",
            (event["id"],),
        ).fetchall()
    assert event["agent"] == "bot"
    # A line of a memory FILE never passed the write checks: where it came from is stored, not the line.
    from_file = [h for h in result.hits if h.arm == "memory" and h.data["file"].endswith("/bot.md")]
    assert from_file, result.hits
    kept = [
        f"[memory] {h.data['file']}:{h.data['line']} (a line of that file; not stored)" if h in from_file else h.text
        for h in result.hits
    ]
    assert [(r["rank"], r["arm"], r["text"]) for r in rows] == [
        (n, h.arm, text) for n, (h, text) in enumerate(zip(result.hits, kept, strict=True), 1)
    ]
    assert not any("deploy runner needs" in r["text"] for r in rows)
    assert all(r["agent"] == "bot" for r in rows)
    facts = [r for r in rows if r["arm"] == "fact"]
    assert facts[0]["fact_id"] == fid and facts[0]["path"] is None
    notebook = [r for r in rows if r["path"] == "notebook:memory"]
    assert notebook and notebook[0]["line"] is not None
    vault = [r for r in rows if r["arm"] == "vault"]
    assert vault[0]["path"] == "ops/deploy.md" and vault[0]["fact_id"] is None

    before = _counts(org)
    for viewer in ("bot", "lead", "boss"):
        client = site(viewer)
        shown = client.get(f"/api/recall/{event['id']}").json()
        assert shown["query"] == "rollback deploy vpn" and shown["agent"] == "bot" and shown["readable"]
        assert [h["text"] for h in shown["shown"]] == kept
        assert shown["missing"] is None and shown["hits"] == len(result.hits)
        page = client.get(f"/recall/{event['id']}").text
        assert "Rollback drills need the VPN profile on Thursdays." in page and f'href="/facts/{fid}"' in page
        agent_page = client.get("/agents/bot").text
        assert f'href="/recall/{event["id"]}"' in agent_page
    assert _counts(org) == before  # opening a past recall asked nothing and logged nothing


def test_a_past_recalls_hits_are_hidden_from_a_member_who_may_not_read_them(org, site):  # noqa: F811
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", "Rollback drills run on Thursdays.")
        recall(conn, "rollback drills", settings=site.settings)
    with org.admin() as conn:
        event = conn.execute("SELECT id, hits FROM recall_events").fetchone()
    assert event["hits"] > 0
    shown = site("other").get(f"/api/recall/{event['id']}").json()
    assert shown["shown"] == [] and shown["readable"] is False
    assert shown["missing"].startswith("hidden: only bot, its team lead or an owner")
    assert shown["query"] == "rollback drills"  # the question stays public, as in recall_events
    page = site("other").get(f"/recall/{event['id']}").text
    assert "Thursdays" not in page and "Hits hidden" in page
    assert site("boss").get("/api/recall/999999").status_code == 404
    assert site("boss").get("/api/recall/0").status_code == 422
    assert site("boss").get("/recall/abc").status_code == 422
    with org.as_agent("other") as conn, pytest.raises(NotFound):
        past_recall(conn, 999999)


def _login(org, agent: str) -> psycopg.Connection:
    return org.login(f"{org.name}_{agent}", f"{agent}-pw")


def test_a_member_on_its_own_login_cannot_read_forge_or_change_anothers_hits(org, site):  # noqa: F811
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", "Rollback drills run on Thursdays.")
        recall(conn, "rollback drills", settings=site.settings)
    with org.admin() as conn:
        bots = conn.execute("SELECT id FROM recall_events WHERE agent = 'bot'").fetchone()["id"]
    with _login(org, "other") as conn:
        assert conn.execute("SELECT count(*) AS n FROM recall_hits").fetchone()["n"] == 0
        conn.rollback()
        forged = "INSERT INTO recall_hits (event_id, agent, rank, arm, text) VALUES (%s, %s, 9, 'fact', 'forged')"
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # as bot: the policy refuses
            conn.execute(forged, (bots, "bot"))
        conn.rollback()
        with pytest.raises(psycopg.errors.ForeignKeyViolation):  # as itself, on bot's recall
            conn.execute(forged, (bots, "other"))
        conn.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # nobody's: admin only
            conn.execute(forged, (bots, None))
        conn.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the time is the database's
            conn.execute(
                "INSERT INTO recall_hits (event_id, agent, rank, arm, text, at)"
                " VALUES (%s, 'other', 9, 'fact', 'x', %s)",
                (bots, datetime.now(UTC) - timedelta(days=9)),
            )
        conn.rollback()
        for change in ("UPDATE recall_hits SET text = 'changed'", "DELETE FROM recall_hits", "TRUNCATE recall_hits"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(change)
            conn.rollback()
        # Its own recall's hits it stores and reads, as the library does.
        recall(conn, "rollback drills", settings=site.settings)
        mine = conn.execute("SELECT DISTINCT agent FROM recall_hits").fetchall()
        conn.rollback()
        assert mine == [{"agent": "other"}]
    with _login(org, "bot") as conn:  # bot reads its own hits, not other's
        assert {r["agent"] for r in conn.execute("SELECT agent FROM recall_hits").fetchall()} == {"bot"}
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM recall_hits WHERE text = 'forged'").fetchone()["n"] == 0


# --- a fact's recalls and quotes ----------------------------------------------------------


def _claude_line(session: str, uuid: str, block: dict, minutes_ago: float, role: str = "assistant") -> str:
    at = (datetime.now(UTC) - timedelta(minutes=minutes_ago)).isoformat().replace("+00:00", "Z")
    message = {"role": role, "id": "msg-" + uuid, "model": "m", "content": [block]}
    record = {"type": role, "sessionId": session, "uuid": uuid, "timestamp": at, "cwd": "/w/shop"}
    return json.dumps({**record, "message": message}) + "\n"


def test_a_facts_page_counts_its_recall_hits_and_quotes(org, site, tmp_path):  # noqa: F811
    from cli_org.archive.importer import import_sessions
    from cli_org.recall.answer import NOTHING

    fid = remember(org, "bot", "deploy freeze", "No deploys from December 20 to January 3.")
    never = remember(org, "bot", "cooking", "The bread dough rises overnight in the cold room.")
    answers = []
    for agent in ("bot", "bot", "lead"):
        with org.as_agent(agent) as conn:
            answers.append(recall(conn, "deploy freeze december", settings=site.settings))
    assert all(any(h.data.get("id") == fid for h in a.hits if h.arm == "fact") for a in answers)
    with org.as_agent("boss") as conn:
        counted = fact_recalls(conn, fid)
        assert (counted.hits, counted.agents, counted.judged, counted.quoted) == (3, 2, 0, 0)
        with connect(org.settings) as admin:
            last = admin.execute("SELECT max(created_at) AS t FROM recall_events").fetchone()["t"]
        assert counted.last_hit == last
        assert fact_recalls(conn, never).hits == 0
    with org.as_agent("lead") as conn:  # a lead counts its own and its bot's recalls
        assert fact_recalls(conn, fid).hits == 3
    with org.as_agent("other") as conn:  # another bot reads none of them
        assert (fact_recalls(conn, fid).hits, fact_recalls(conn, fid).agents) == (0, 0)

    # An archived session recalled it and quoted it; another recalled it and did not.
    claude = tmp_path / "claude" / "-w-shop"
    claude.mkdir(parents=True)
    for session, quote in (("S1", f"Fact #{fid} says no deploys then."), ("S2", "I will look elsewhere.")):
        call = {"type": "tool_use", "id": f"t{session}", "name": "Bash"}
        call["input"] = {"command": 'cli-org recall "deploy freeze december"'}
        result = {"type": "tool_result", "tool_use_id": f"t{session}", "content": answers[0].text}
        (claude / f"{session}.jsonl").write_text(
            _claude_line(session, f"{session}1", call, 30)
            + _claude_line(session, f"{session}2", result, 29.5, "user")
            + _claude_line(session, f"{session}3", {"type": "text", "text": quote}, 29)
        )
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "claude"})
    with org.as_agent("boss") as conn:
        counted = fact_recalls(conn, fid)
    assert (counted.judged, counted.quoted) == (2, 1)
    data = site("boss").get(f"/api/facts/{fid}").json()["recalls"]
    assert (data["hits"], data["agents"], data["judged"], data["quoted"]) == (3, 2, 2, 1)
    page = site("boss").get(f"/facts/{fid}").text
    assert "A hit in <strong>3</strong> recalls by 2 agents" in page
    assert "Quoted after <strong>1</strong> of the 2 archived-session recalls" in page
    assert "Never a recall hit" in site("boss").get(f"/facts/{never}").text
    assert answers[0].text != NOTHING


def test_a_member_opening_the_admins_recall_reads_hidden_not_an_error(org, site):  # noqa: F811
    """The admin's own recalls are logged with no agent: a member may not read their hits,
    and the page says so (a NULL from the rule once made this a 500)."""
    with org.admin() as conn:
        event = conn.execute(
            "INSERT INTO recall_events (query, arms, hits, chars, ms) VALUES ('who runs billing', '{}', 0, 0, 1)"
            " RETURNING id, agent"
        ).fetchone()
        conn.commit()
    assert event["agent"] is None
    got = site("other").get(f"/api/recall/{event['id']}")
    assert got.status_code == 200, got.text
    assert got.json()["readable"] is False and got.json()["shown"] == []
    assert site("boss").get(f"/api/recall/{event['id']}").json()["readable"] is True
