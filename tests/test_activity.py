"""The activity feed (cli_org/store/activity.py): what changed, by agent and by harness,
after real writes by two agents; its filters, pages and bad input; the harness recorded for
every write (migration 0032), from an MCP client's own name too; and, adversarially, what a
member may not see or forge."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from mcp import ClientSession, stdio_client
from mcp.types import Implementation
from psycopg import errors as pgerr

from cli_org.errors import InputError
from cli_org.store import facts, pins, todos
from cli_org.store import notebook as nb
from cli_org.store.activity import feed, parse_kinds, parse_since
from tests.helpers import params

CLAUDE = "claude-code@box1"
CODEX = "codex@box2"


def _story(org) -> dict[str, int]:
    """Two agents at work: bot through one harness, other through another."""
    bot, other = org.writer("bot"), org.writer("other")
    old = facts.remember(bot, "deploy", "The deploy runs at night from main.", source="docs/deploy.md", via=CLAUDE).id
    new = facts.remember(
        bot, "deploy", "The deploy runs at noon from the release branch.", source="docs/deploy.md",
        supersedes=old, via=CLAUDE,
    ).id  # fmt: skip
    gone = facts.remember(other, "cache", "The cache holds a day of builds.", source="docs/cache.md", via=CODEX).id
    facts.forget(other, gone, "the cache was removed", via=CODEX)
    facts.restore(other, gone, "it is back", via=CODEX)
    pins.pin(bot, new, via=CLAUDE)
    pins.unpin(bot, new, via=CLAUDE)
    nb.add(bot, "memory", "The lead prefers short answers.", via=CLAUDE)
    todo = todos.add_todo(bot, "Check the night deploy logs", via=CLAUDE).id
    todos.done_todo(bot, todo, via=CLAUDE)
    return {"old": old, "new": new, "gone": gone, "todo": todo}


def _kinds(result) -> list[tuple[str, str | None, str | None]]:
    return [(e.kind, e.who, e.via) for e in result.events]


@pytest.mark.slow
def test_the_feed_says_what_two_agents_did_newest_first_with_their_harness(org):
    ids = _story(org)
    with org.as_agent("boss") as conn:
        result = feed(conn)
    assert _kinds(result) == [
        ("todo_done", "bot", CLAUDE),
        ("todo_added", "bot", CLAUDE),
        ("notebook", "bot", CLAUDE),
        ("unpinned", "bot", CLAUDE),
        ("pinned", "bot", CLAUDE),
        ("restored", "other", CODEX),
        ("retired", "other", CODEX),
        ("written", "other", CODEX),
        ("superseded", "bot", CLAUDE),
        ("written", "bot", CLAUDE),
        ("written", "bot", CLAUDE),
    ]
    by_kind = {e.kind: e for e in result.events}
    assert by_kind["superseded"].fact_id == ids["old"] and by_kind["superseded"].other == ids["new"]
    assert by_kind["restored"].fact_id == ids["gone"] and by_kind["restored"].detail == "it is back"
    assert by_kind["retired"].detail == "the cache was removed"  # kept by the restore (memory_restores)
    assert by_kind["pinned"].fact_id == ids["new"] and by_kind["pinned"].subject == "deploy"
    assert by_kind["notebook"].subject == "bot/memory" and by_kind["notebook"].detail.startswith("added: ")
    assert by_kind["todo_done"].ref == ids["todo"]
    assert result.next is None and result.kinds == list(parse_kinds(None))


@pytest.mark.slow
def test_filters_by_agent_harness_kind_and_time(org):
    _story(org)
    with org.as_agent("boss") as conn:
        assert {e.who for e in feed(conn, agent="other").events} == {"other"}
        assert [e.kind for e in feed(conn, via="codex").events] == ["restored", "retired", "written"]
        assert len(feed(conn, via=CODEX).events) == 3
        assert feed(conn, via="codex@elsewhere").events == []
        assert [e.kind for e in feed(conn, kinds=["pins"]).events] == ["unpinned", "pinned"]
        assert [e.kind for e in feed(conn, kinds=["todo_done,notebook"]).events] == ["todo_done", "notebook"]
        assert feed(conn, since=datetime.now(UTC) + timedelta(minutes=1)).events == []
        assert len(feed(conn, since=parse_since("1h")).events) == 11


@pytest.mark.slow
def test_reads_show_only_when_asked_for(org, cli):
    _story(org)
    assert cli("recall", "when does the deploy run", agent="bot")[0] == 0
    with org.as_agent("boss") as conn:
        assert "recall" not in {e.kind for e in feed(conn).events}
        reads = feed(conn, kinds=["reads"]).events
    assert [(e.kind, e.who, e.detail) for e in reads] == [("recall", "bot", "when does the deploy run")]


@pytest.mark.slow
def test_pages_follow_the_cursor_without_gaps_or_repeats(org):
    _story(org)
    with org.as_agent("boss") as conn:
        whole = [(e.kind, e.ref, e.at) for e in feed(conn).events]
        seen, before = [], None
        while True:
            page = feed(conn, limit=3, before=before)
            assert len(page.events) <= 3
            seen += [(e.kind, e.ref, e.at) for e in page.events]
            if page.next is None:
                break
            before = page.next
    assert seen == whole and len(whole) == 11


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: parse_since("banana"), "is not a span"),
        (lambda: parse_since("3x"), "is not a span"),
        (lambda: parse_kinds(["facts", "gossip"]), "kind 'gossip' is not one of"),
    ],
)
def test_bad_input_is_one_clear_line(call, message):
    with pytest.raises(InputError, match=message):
        call()


@pytest.mark.slow
def test_bad_input_reaches_no_database(org):
    with org.as_agent("boss") as conn:
        for kwargs, message in (
            ({"limit": 0}, "limit is 1 to 200"),
            ({"agent": "Robert'); DROP"}, "is not an agent's name"),
            ({"via": "a b"}, "must be a harness"),
            ({"before": "yesterday"}, "is not a cursor"),
        ):
            with pytest.raises(InputError, match=message):
                feed(conn, **kwargs)


@pytest.mark.slow
def test_the_cli_prints_the_feed_and_refuses_bad_input(org, cli):
    _story(org)
    code, out, _ = cli("activity", "--via", "codex", agent="boss")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3 and lines[0].split()[2:5] == ["restored", "other", "via"] and CODEX in lines[0]
    code, out, _ = cli("activity", "--kind", "todos", "--json", agent="boss")
    assert code == 0 and [e["kind"] for e in json.loads(out)["events"]] == ["todo_done", "todo_added"]
    code, _, err = cli("activity", "--since", "banana", agent="boss")
    assert code == 1 and err.startswith("cli-org: since 'banana' is not a span") and len(err.splitlines()) == 1
    code, _, err = cli("activity", "--kind", "gossip", agent="boss")
    assert code == 1 and "kind 'gossip'" in err
    code, out, _ = cli("activity", "--limit", "2", agent="boss")
    assert out.splitlines()[-1].startswith("more: --before ")


# --- what a member may not see or forge --------------------------------------------------


@pytest.mark.slow
@pytest.mark.attack("activity")
def test_a_member_never_sees_a_notebook_it_may_not_read(org):
    _story(org)  # bot's notebook: bot, its lead (lead) and the owner (boss) may read it
    for reader, sees in (("bot", True), ("lead", True), ("boss", True), ("other", False)):
        with org.as_agent(reader) as conn:
            kinds = [e.kind for e in feed(conn).events]
            assert ("notebook" in kinds) is sees, reader
            assert ("notebook" in [e.kind for e in feed(conn, kinds=["notebook"], agent="bot").events]) is sees
    # the same through other's own login: no SET ROLE, the server knows who it is
    with org.login(f"{org.name}_other", "other-pw") as other:
        with pytest.raises(pgerr.InsufficientPrivilege):
            other.execute(f'SET ROLE "{org.name}_bot"')
        other.rollback()
        assert feed(other, kinds=["notebook"]).events == []
        assert other.execute("SELECT count(*) AS n FROM notebook_versions").fetchone()["n"] == 0


@pytest.mark.slow
@pytest.mark.attack("activity")
def test_a_member_cannot_forge_the_harness_or_author_of_a_write(org):
    _story(org)
    open_todo = todos.add_todo(org.writer("bot"), "Rotate the deploy keys", via=CLAUDE).id
    with org.login(f"{org.name}_other", "other-pw") as other:
        for statement in (
            "UPDATE org_todos SET via = 'forged@x', done_via = 'forged@x'",
            "UPDATE memory_pins SET pinned_via = 'forged@x'",
            "UPDATE notebook_versions SET via = 'forged@x'",
            "UPDATE memory_facts SET retired_via = 'forged@x'",
            "UPDATE memory_restores SET restored_via = 'forged@x'",
            "INSERT INTO org_todos (text, via) VALUES ('mine', 'claude-code@box1')",
            "INSERT INTO notebook_versions (entry_id, version, agent, store, action, body, via)"
            " VALUES (1, 9, 'bot', 'memory', 'added', 'x', 'forged@x')",
        ):
            with pytest.raises(pgerr.InsufficientPrivilege):
                other.execute(statement)
            other.rollback()
        with pytest.raises(pgerr.InsufficientPrivilege):  # another's name as author
            other.execute("INSERT INTO org_todos (text, author) VALUES ('as bot', 'bot')")
        other.rollback()
        # what a member may say is its own write's harness, in the shape of a via
        other.execute("SELECT set_config('cli_org.via', 'not a harness', true)")
        with pytest.raises(pgerr.CheckViolation, match="must look like runtime@host"):
            other.execute("INSERT INTO org_todos (text) VALUES ('a todo')")
        other.rollback()
        other.execute("SELECT set_config('cli_org.via', 'hermes@box3', true)")
        other.execute("INSERT INTO org_todos (text) VALUES ('a todo')")
        other.commit()
        # marking bot's todo done is refused (the author, their lead or an owner may)
        with pytest.raises(pgerr.InsufficientPrivilege):
            other.execute("SELECT org_todo_done(%s)", (open_todo,))
        other.rollback()
    with org.as_agent("boss") as conn:
        mine = feed(conn, agent="other", kinds=["todos"]).events
        assert [(e.kind, e.who, e.via, e.detail) for e in mine] == [("todo_added", "other", "hermes@box3", "a todo")]
        # and bot's rows still say what bot's own writes said
        assert {e.via for e in feed(conn, agent="bot").events} == {CLAUDE}


@pytest.mark.slow
def test_an_import_keeps_the_via_it_carries_but_a_member_insert_is_stamped(org):
    with org.admin() as admin:  # as an import writes rows (store/transfer.py): forced security lifted inside
        admin.execute("ALTER TABLE org_todos NO FORCE ROW LEVEL SECURITY")  # a team server's admin is no superuser
        admin.execute("INSERT INTO org_todos (text, author, via) VALUES ('imported', 'bot', 'codex@old')")
        admin.execute("ALTER TABLE org_todos FORCE ROW LEVEL SECURITY")
        admin.commit()
    with org.as_agent("boss") as conn:
        assert [e.via for e in feed(conn, kinds=["todo_added"]).events] == ["codex@old"]


# --- the harness an MCP client names itself ----------------------------------------------


def _mcp_writes(org, client: Implementation | None, **env: str) -> None:
    async def main():
        with open(os.devnull, "w") as quiet:
            kwargs = {"client_info": client} if client else {}
            async with (
                stdio_client(params(org, "bot", **env), errlog=quiet) as (read, write),
                ClientSession(read, write, **kwargs) as session,
            ):
                await session.initialize()
                said = await session.call_tool(
                    "org_remember",
                    {"subject": "ci", "claim": "CI runs on every push to main.", "source": "docs/ci.md"},
                )
                assert not said.is_error, said
                noted = await session.call_tool(
                    "org_notebook_edit", {"action": "add", "text": "CI is flaky on Mondays."}
                )
                assert not noted.is_error, noted

    anyio.run(main)


def _host() -> str:
    from cli_org.setup import via

    return via("x").split("@", 1)[1]


@pytest.mark.slow
def test_the_mcp_server_records_the_harness_the_client_names_itself(org):
    _mcp_writes(org, Implementation(name="Test Harness/2", version="2.0"))
    expected = f"Test-Harness-2@{_host()}"
    with org.as_agent("boss") as conn:
        assert {(e.kind, e.via) for e in feed(conn).events} == {("written", expected), ("notebook", expected)}


@pytest.mark.slow
def test_the_sdk_clients_default_name_is_recorded_as_it_is(org):
    _mcp_writes(org, None)  # ClientSession's default clientInfo: name "mcp"
    with org.as_agent("boss") as conn:
        assert {e.via for e in feed(conn).events} == {f"mcp@{_host()}"}


@pytest.mark.slow
def test_org_via_set_by_setup_wins_over_the_clients_name(org):
    _mcp_writes(org, Implementation(name="claude-code", version="1"), ORG_VIA="hermes@box3")
    with org.as_agent("boss") as conn:
        assert {e.via for e in feed(conn).events} == {"hermes@box3"}


# --- the page and the API ----------------------------------------------------------------


@pytest.mark.slow
def test_the_page_and_the_api_show_the_same_feed_with_links_and_filters(org, web):
    ids = _story(org)
    client = web("boss")
    api = client.get("/api/activity").json()
    assert [e["kind"] for e in api["events"]][:3] == ["todo_done", "todo_added", "notebook"]
    assert api["next"] is None and api["kinds"][0] == "written"
    page = client.get("/activity").text
    assert f'href="/facts/{ids["new"]}"' in page and 'href="/agents/other"' in page
    assert page.count('<tr class="kind-') == len(api["events"])
    assert "claude-code" in page and "codex" in page
    assert client.get("/activity", params={"via": "codex"}).text.count('<tr class="kind-') == 3
    filtered = client.get("/api/activity", params={"agent": "other", "kind": "facts"}).json()["events"]
    assert [e["kind"] for e in filtered] == ["restored", "retired", "written"]
    first = client.get("/api/activity", params={"since": "all"}).json()
    assert len(first["events"]) == 11
    # the navigation leads with it
    assert re.findall(r'<a href="(/[a-z]+)"', page)[:2] == ["/activity", "/facts"]


@pytest.mark.slow
def test_the_page_refuses_bad_input_in_one_line(org, web):
    client = web("boss")
    refused = client.get("/activity", params={"since": "banana"})
    assert refused.status_code == 400 and "since &#39;banana&#39; is not a span" in refused.text
    api = client.get("/api/activity", params={"kind": "gossip"})
    assert api.status_code == 400 and api.json()["error"].startswith("kind 'gossip' is not one of")
    assert client.get("/api/activity", params={"before": "x"}).status_code == 400


@pytest.mark.slow
@pytest.mark.attack("activity")
def test_the_page_served_as_a_member_hides_the_notebook_it_may_not_read(org, web):
    _story(org)
    assert "bot/memory" not in web("other").get("/activity").text
    assert "notebook" not in [e["kind"] for e in web("other").get("/api/activity").json()["events"]]
    assert "bot/memory" in web("lead").get("/activity").text


@pytest.mark.slow
def test_a_client_without_a_handshake_is_named_by_each_requests_envelope(org):
    """The 2026-07-28 protocol has no initialize: each request names its client in `_meta`
    (tests/test_mcp_front.py holds what Claude Code 2.1.332 sends); the write records it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "envelope-client", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    arguments = {"subject": "ci", "claim": "CI runs on every push to main.", "source": "docs/ci.md"}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "org_remember", "arguments": arguments, "_meta": meta},
    }
    server = params(org, "bot")
    with subprocess.Popen(
        [server.command, *server.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server.env,
        cwd=server.cwd,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())  # the call's answer, then the end of input
        proc.stdin.close()
        proc.wait(timeout=60)
    assert answer["id"] == 1 and not answer["result"].get("isError"), answer
    with org.as_agent("boss") as conn:
        assert [e.via for e in feed(conn).events] == [f"envelope-client@{_host()}"]


@pytest.mark.slow
def test_the_pages_own_writes_record_it_as_their_harness(org, web):
    """A pin, unpin, forget and restore made from the page are a person's, through the page:
    `web@HOST` unless the server was started with ORG_VIA."""
    with org.as_agent("bot") as conn:
        fid = facts.remember(conn, "page writes", "The page records its own harness.", source="docs/p.md").id
    client = web("boss")
    for action, body in (("pin", {}), ("unpin", {}), ("forget", {"why": "wrong"}), ("restore", {"why": "right"})):
        assert client.post(f"/api/facts/{fid}/{action}", json=body).status_code == 200, action
    events = client.get("/api/activity", params={"kind": "pins,facts"}).json()["events"]
    mine = {e["kind"]: e["via"] for e in events if e["fact_id"] == fid and e["who"] == "boss"}
    assert set(mine) == {"pinned", "unpinned", "retired", "restored"}, mine
    assert {via.split("@")[0] for via in mine.values()} == {"web"}, mine
