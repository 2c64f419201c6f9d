"""The web page's Todos, Pins, Sessions and Vault pages and an agent's notebook history, with
their API, over a real database: what each shows after real writes, paging, refusals of bad
input (ids, overlong parameters, traversal paths, NUL) with their status codes, escaping of
hostile text, and row-level security deciding whose notebook history the page may show."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from cli_org.archive.importer import import_sessions
from cli_org.db.connect import connect
from cli_org.faces.web.pages import notebook as notebook_page
from cli_org.faces.web.pages import pins as pins_page
from cli_org.faces.web.pages import sessions as sessions_page
from cli_org.faces.web.pages import todos as todos_page
from cli_org.faces.web.pages import vault as vault_page
from cli_org.store import facts, pins, todos
from cli_org.store import notebook as nb
from cli_org.vault.scan import scan
from tests import web_site
from tests.web_site import remember

pytestmark = pytest.mark.slow

site = web_site.site  # the fixture: a client of the page serving as an agent, over a small vault

# --- Todos --------------------------------------------------------------------------------


def test_todos_open_done_by_agent_and_project(org, site):
    with org.as_agent("bot") as conn:
        first = todos.add_todo(conn, "Rotate the deploy key", "web")
        todos.add_todo(conn, "Write the runbook for rollbacks")
    with org.as_agent("other") as conn:
        theirs = todos.add_todo(conn, "Check billing exports", "billing")
        todos.done_todo(conn, theirs.id)
    client = site("boss")
    open_ = client.get("/api/todos").json()
    assert [t["text"] for t in open_["todos"]] == ["Write the runbook for rollbacks", "Rotate the deploy key"]
    assert open_["more"] is False and open_["page"] == 1
    done = client.get("/api/todos", params={"state": "done"}).json()["todos"]
    assert [(t["id"], t["done_by"]) for t in done] == [(theirs.id, "other")]
    assert len(client.get("/api/todos", params={"state": "all"}).json()["todos"]) == 3
    theirs_only = client.get("/api/todos", params={"agent": "other", "state": "all"}).json()["todos"]
    assert [t["author"] for t in theirs_only] == ["other"]
    web = client.get("/api/todos", params={"project": "web"}).json()["todos"]  # its own and the org-wide ones
    assert {t["text"] for t in web} == {"Rotate the deploy key", "Write the runbook for rollbacks"}
    page = client.get("/todos", params={"state": "all"}).text
    assert "Rotate the deploy key" in page and "Check billing exports" in page and 'href="/agents/other"' in page
    assert f"#{first.id}" in page and "done" in page
    assert "No done todos match these filters" in client.get("/todos?state=done&agent=lead").text


def test_todos_page_through_and_refuse_bad_input(org, site, monkeypatch):
    monkeypatch.setattr(todos_page, "PAGE_SIZE", 2)
    with org.as_agent("bot") as conn:
        for n in range(5):
            todos.add_todo(conn, f"todo number {n}")
    client = site("boss")
    seen = []
    for page in (1, 2, 3):
        got = client.get("/api/todos", params={"page": page}).json()
        seen += [t["text"] for t in got["todos"]]
        assert got["more"] is (page < 3)
    assert seen == [f"todo number {n}" for n in (4, 3, 2, 1, 0)]
    html = client.get("/todos?page=2").text
    assert "page=1" in html and "page=3" in html and "todo number 2" in html
    assert client.get("/api/todos", params={"state": "bogus"}).status_code == 422
    assert client.get("/api/todos", params={"page": 0}).status_code == 422
    assert client.get("/api/todos", params={"agent": "x" * 65}).status_code == 422
    refused = client.get("/api/todos", params={"agent": "a\x00b"})
    assert refused.status_code == 400 and "no agent's name" in refused.json()["error"]
    assert client.get("/api/todos", params={"project": "../../etc"}).status_code == 400
    assert client.get("/todos", params={"agent": "a\x00b"}).status_code == 400


def test_hostile_todo_text_shows_as_text(org, site):
    with org.as_agent("bot") as conn:
        todos.add_todo(conn, "Fix the <b>bold</b> label & the <i>italic</i> hint on the login page")
    page = site("boss").get("/todos").text
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt; label &amp; the &lt;i&gt;italic&lt;/i&gt;" in page


# --- Pins ---------------------------------------------------------------------------------


def test_pins_in_force_and_past_link_to_their_facts(org, site, monkeypatch):
    kept = remember(org, "bot", "deploys", "Deploys run from the main branch only.")
    dropped = remember(org, "bot", "builds", "Builds take twenty minutes.")
    retired = remember(org, "bot", "ci", "CI runs on every push.")
    with org.as_agent("boss") as conn:
        for fid in (kept, dropped, retired):
            pins.pin(conn, fid)
        pins.unpin(conn, dropped)
        facts.forget(conn, retired, "CI now runs on merge requests only")
    client = site("bot")  # any member reads the pins
    assert [p["fact_id"] for p in client.get("/api/pins").json()] == [kept]
    past = client.get("/api/pins/past").json()
    assert [p["fact_id"] for p in past["pins"]] == [retired, dropped] and past["more"] is False
    assert past["pins"][0]["unpin_reason"].startswith("fact retired") and past["pins"][1]["unpinned_by"] == "boss"
    page = client.get("/pins").text
    assert all(f'href="/facts/{fid}"' in page for fid in (kept, dropped, retired))
    assert "In force" in page and "Past pins" in page and "fact retired" in page
    monkeypatch.setattr(pins_page, "PAGE_SIZE", 1)
    first, second = (client.get("/api/pins/past", params={"page": n}).json() for n in (1, 2))
    assert (first["pins"][0]["fact_id"], first["more"], second["pins"][0]["fact_id"], second["more"]) == (
        retired,
        True,
        dropped,
        False,
    )
    assert client.get("/api/pins/past", params={"page": "x"}).status_code == 422
    assert client.get("/api/pins/past", params={"project": "a\x00b"}).status_code == 400
    assert client.get("/pins", params={"project": "p" * 65}).status_code == 422


# --- Notebook history ---------------------------------------------------------------------


def _bot_edits(org) -> None:
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", "The staging database is reset every Sunday.\nBackups run nightly.")
        nb.replace(conn, "memory", "every Sunday", "The staging database is reset every Monday.\nBackups run nightly.")
        nb.add(conn, "user", "Prefers short answers.")
        nb.remove(conn, "user", "short answers")


def test_notebook_history_newest_first_with_line_diffs(org, site):
    _bot_edits(org)
    client = site("boss")
    data = client.get("/api/agents/bot/notebook").json()
    assert data["refused"] is None and data["agent"] == "bot" and data["more"] is False
    steps = [(v["store"], v["action"], v["version"]) for v in data["versions"]]
    assert steps == [("user", "removed", 2), ("user", "added", 1), ("memory", "replaced", 2), ("memory", "added", 1)]
    removed, added_user, replaced, added = data["versions"]
    assert removed["diff"] == [{"op": "-", "text": "Prefers short answers."}] and removed["delta"] == -22
    assert added["diff"] == [
        {"op": "+", "text": "The staging database is reset every Sunday."},
        {"op": "+", "text": "Backups run nightly."},
    ]
    assert replaced["diff"] == [
        {"op": "-", "text": "The staging database is reset every Sunday."},
        {"op": "+", "text": "The staging database is reset every Monday."},
        {"op": " ", "text": "Backups run nightly."},
    ]
    assert replaced["delta"] == 0 and added_user["delta"] == 22
    only_user = client.get("/api/agents/bot/notebook", params={"target": "user"}).json()["versions"]
    assert {v["store"] for v in only_user} == {"user"}
    page = client.get("/agents/bot/notebook").text
    assert "reset every Monday" in page and 'class="ddel"' in page and 'class="dadd"' in page and "removed" in page
    assert 'href="/agents/bot/notebook"' in client.get("/agents/bot").text  # reachable from the agent page


def test_notebook_history_pages(org, site, monkeypatch):
    _bot_edits(org)
    from cli_org.store.notebook import history_page

    with org.as_agent("bot") as conn:
        one, two = (history_page(conn, "bot", page=n, per_page=3) for n in (1, 2))
    assert (len(one.versions), one.more, len(two.versions), two.more) == (3, True, 1, False)
    assert two.versions[0].action == "added" and two.versions[0].store == "memory"
    assert site("boss").get("/api/agents/bot/notebook", params={"page": 2}).json()["versions"] == []
    assert notebook_page  # the module serves both routes


def test_a_member_may_not_read_another_agents_notebook_history(org, site):
    """Adversarial: `other` (a member, neither bot's lead nor an owner) serves the page."""
    _bot_edits(org)
    member = site("other")
    data = member.get("/api/agents/bot/notebook").json()
    assert data["versions"] == [] and "only bot, their team lead or an owner" in data["refused"]
    for params in ({}, {"target": "memory"}, {"target": "user"}, {"page": 2}):
        assert member.get("/api/agents/bot/notebook", params=params).json()["versions"] == []
        html = member.get("/agents/bot/notebook", params=params).text
        assert "staging database" not in html and "short answers" not in html and "Not shown" in html
    assert "acts as other" in member.get("/agents/bot/notebook").text
    # Row-level security itself, below the library's check: the versions table shows nothing.
    with connect(org.settings, "other") as conn:
        assert conn.execute("SELECT count(*) AS n FROM notebook_versions WHERE agent = 'bot'").fetchone()["n"] == 0
    # The agent itself, its lead and an owner read it.
    for reader in ("bot", "lead", "boss"):
        assert len(site(reader).get("/api/agents/bot/notebook").json()["versions"]) == 4


def test_notebook_history_bad_input(site):
    client = site("boss")
    assert client.get("/api/agents/nobody/notebook").status_code == 404
    assert client.get("/agents/nobody/notebook").status_code == 404
    assert client.get("/api/agents/bot/notebook", params={"target": "secrets"}).status_code == 422
    assert client.get("/api/agents/" + "x" * 65 + "/notebook").status_code == 422
    assert client.get("/api/agents/a%00b/notebook").status_code == 400
    assert client.get("/api/agents/..%2F..%2Fetc%2Fpasswd/notebook").status_code in (404, 422)
    assert client.get("/api/agents/bot/notebook", params={"page": 100_001}).status_code == 422


# --- Sessions -----------------------------------------------------------------------------

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
RESULT = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ERROR lock held"}]


def _record(session: str, uuid: str, kind: str, content, minute: int) -> dict:
    return {
        "type": kind,
        "sessionId": session,
        "uuid": uuid,
        "timestamp": (START + timedelta(minutes=minute)).isoformat(),
        "cwd": "/w/app",
        "message": {"role": kind, "content": content},
    }


@pytest.fixture
def archived(org, tmp_path):
    """Two archived sessions: S1 with a tool call and a long message, S2 a day later."""
    s1 = [
        _record("S1", "u1", "user", "Why does the deploy fail?", 0),
        _record(
            "S1",
            "a1",
            "assistant",
            [
                {"type": "text", "text": "Let me look at the log."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "tail -n 2 deploy.log"}},
            ],
            1,
        ),
        _record("S1", "t1", "user", RESULT, 2),
        _record("S1", "a2", "assistant", [{"type": "text", "text": "A migration lock is held. " + "x" * 9000}], 3),
        _record("S1", "u2", "user", "<script>alert(1)</script> thanks", 4),
    ]
    s2 = [_record("S2", "v1", "user", "Rotate the billing key", 60 * 24)]
    root = tmp_path / "projects" / "-w-app"
    root.mkdir(parents=True)
    (root / "S1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in s1))
    (root / "S2.jsonl").write_text("".join(json.dumps(x) + "\n" for x in s2))
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "projects"})
    return org


def test_sessions_newest_first_and_search(archived, site):
    client = site("bot")
    listed = client.get("/api/sessions").json()
    assert [s["external_id"] for s in listed["sessions"]] == ["S2", "S1"] and listed["more"] is False
    assert listed["sessions"][1]["messages"] == 6 and listed["sessions"][1]["harness"] == "claude-code"
    assert client.get("/api/sessions", params={"harness": "codex"}).json()["sessions"] == []
    hits = client.get("/api/sessions/search", params={"q": "migration lock"}).json()
    assert [h["session"] for h in hits] == ["S1"] and "«lock»" in hits[0]["snippet"]
    page = client.get("/sessions").text
    assert 'href="/sessions/S1?harness=claude-code"' in page and 'href="/sessions/S2?harness=claude-code"' in page
    found = client.get("/sessions", params={"q": "billing key"}).text
    assert "S2" in found and "1 matching message" in found and "S1?harness" not in found
    assert "No matching messages" in client.get("/sessions", params={"q": "kubernetes"}).text


def test_one_session_bounded_and_paged(archived, site, monkeypatch):
    client = site("bot")
    whole = client.get("/api/sessions/S1").json()
    assert (whole["total"], whole["first"], whole["more"], whole["tool_calls"], whole["cut"]) == (6, 0, False, 1, 1)
    [call] = [m for m in whole["messages"] if m["tool"]]
    assert call["tool"]["command"] == "tail -n 2 deploy.log" and call["tool"]["result"] == "ERROR lock held"
    long = next(m for m in whole["messages"] if m["text"] and m["text"].startswith("A migration lock"))
    assert len(long["text"]) == sessions_page.TEXT_CHARS
    page = client.get("/sessions/S1").text
    assert "tail -n 2 deploy.log" in page and "ERROR lock held" in page and "cut to 4000 characters" in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    monkeypatch.setattr(sessions_page, "MESSAGES", 2)
    one, three = (client.get("/api/sessions/S1", params={"page": n}).json() for n in (1, 3))
    assert (len(one["messages"]), one["more"], one["first"]) == (2, True, 0)
    assert (len(three["messages"]), three["more"], three["first"]) == (2, False, 4)
    html = client.get("/sessions/S1", params={"page": 2}).text
    assert "showing archived messages 3–4" in html and "page=1" in html and "page=3" in html


def test_sessions_bad_input(archived, site):
    client = site("bot")
    assert client.get("/api/sessions/nope").status_code == 404
    assert client.get("/sessions/nope").status_code == 404
    assert client.get("/api/sessions/S1%00").status_code == 400
    assert client.get("/api/sessions/" + "s" * 501).status_code == 422
    assert client.get("/api/sessions/..%2F..%2Fetc%2Fpasswd").status_code == 404
    assert client.get("/api/sessions", params={"harness": "vim"}).status_code == 422
    assert client.get("/api/sessions", params={"page": 0}).status_code == 422
    assert client.get("/api/sessions/search", params={"q": "x" * 5000}).status_code == 422
    assert client.get("/api/sessions/search", params={"q": "-only"}).status_code == 400
    assert client.get("/sessions", params={"q": "the a of"}).status_code == 400  # only stop words: one line
    assert client.get("/api/sessions", params={"project": "a\x00b"}).status_code == 400


# --- Vault --------------------------------------------------------------------------------


@pytest.fixture
def linked(org, site):
    """The site's vault with a note that links to another and carries tags."""
    (site.vault / "ops/links.md").write_text(
        "---\ntags: [runbook]\n---\n# Links\n\nSee [[deploy]] and [the squash note](../dev/squash.md). #ops\n\n"
        "## Later\n\nMore text under a second heading.\n"
    )
    with connect(org.settings) as conn:
        scan(conn, site.vault)
    return site


def test_vault_lists_notes_with_tags_and_filters(linked):
    client = linked("bot")
    data = client.get("/api/vault").json()
    paths = [n["path"] for n in data["notes"]]
    assert paths == sorted(paths) and "ops/deploy.md" in paths and "CURRENT/today.md" not in paths
    [links] = [n for n in data["notes"] if n["path"] == "ops/links.md"]
    assert links["tags"] == ["ops", "runbook"] and links["title"] == "Links"
    assert [n["path"] for n in client.get("/api/vault", params={"q": "SQUASH"}).json()["notes"]] == ["dev/squash.md"]
    assert [n["path"] for n in client.get("/api/vault", params={"tag": "#runbook"}).json()["notes"]] == ["ops/links.md"]
    assert client.get("/api/vault", params={"q": "%"}).json()["notes"] == []  # a wildcard is a character here
    page = client.get("/vault").text
    assert 'href="/vault/ops/deploy.md"' in page and 'href="/vault?tag=runbook"' in page


def test_vault_paging(linked, monkeypatch):
    monkeypatch.setattr(vault_page, "PAGE_SIZE", 2)
    client = linked("boss")
    seen, page = [], 1
    while True:
        got = client.get("/api/vault", params={"page": page}).json()
        seen += [n["path"] for n in got["notes"]]
        if not got["more"]:
            break
        page += 1
    assert seen == sorted(seen) and len(seen) == 4 and page == 2


def test_one_note_as_indexed_with_links_and_backlinks(linked):
    client = linked("bot")
    note = client.get("/api/vault/ops/links.md").json()
    assert note["path"] == "ops/links.md" and note["tags"] == ["ops", "runbook"]
    assert [s["heading"] for s in note["sections"]][-1].endswith("Later") and note["sections_total"] >= 2
    assert {link["target_path"] for link in note["links"]} == {"ops/deploy.md", "dev/squash.md"}
    assert client.get("/api/vault/ops/deploy.md").json()["linked_from"] == ["ops/links.md"]
    by_id = client.get(f"/api/vault/{note['id']}").json()
    assert by_id["path"] == "ops/links.md"
    page = client.get("/vault/ops/links.md").text
    assert "More text under a second heading." in page and 'href="/vault/ops/deploy.md"' in page
    assert 'href="/vault/ops/links.md"' in client.get("/vault/dev/squash.md").text  # linked from


@pytest.mark.parametrize(
    "path",
    [
        "../../etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "%2Fetc%2Fpasswd",
        "ops/../../../etc/passwd",
        "ops%2F..%2Fdeploy.md",
        "%2e%2e/%2e%2e/etc/passwd",
    ],
)
def test_vault_traversal_paths_read_no_file(linked, path):
    client = linked("boss")
    for base in ("/api/vault/", "/vault/"):
        answer = client.get(base + path)
        assert answer.status_code == 404, (base + path, answer.text)
        assert "root:" not in answer.text


def test_vault_bad_names_and_private_notes(linked):
    owner, member = linked("boss"), linked("bot")
    assert owner.get("/api/vault/ops/deploy.md%00.txt").status_code == 400
    assert owner.get("/api/vault/" + "a" * 1001).status_code == 422
    assert owner.get("/api/vault/99999999999999999999").status_code == 404
    assert owner.get("/api/vault", params={"q": "q" * 201}).status_code == 422
    # A private note: hidden from a member by row-level security, for an owner only when asked.
    assert member.get("/api/vault/CURRENT/today.md").status_code == 404
    assert member.get("/api/vault/CURRENT/today.md", params={"private": True}).status_code == 403
    assert member.get("/api/vault", params={"private": True}).status_code == 403
    assert owner.get("/api/vault/CURRENT/today.md").status_code == 403
    shown = owner.get("/api/vault/CURRENT/today.md", params={"private": True}).json()
    assert shown["private"] is True and "Rollback drill" in shown["sections"][0]["content"]
    assert "CURRENT/today.md" in [n["path"] for n in owner.get("/api/vault", params={"private": True}).json()["notes"]]
    assert "private scratch" not in member.get("/vault").text


def test_new_pages_are_in_the_navigation(site):
    page = site("boss").get("/todos").text
    for path in ("/sessions", "/vault", "/todos", "/pins"):
        assert f'href="{path}"' in page
    nav = page.split("<nav>", 1)[1].split("</nav>", 1)[0]
    order = [nav.index(f'href="{p}"') for p in ("/search", "/sessions", "/vault", "/todos", "/pins")]
    assert order == sorted(order)
