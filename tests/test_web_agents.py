"""The web page's Agents, Recall and Search pages and their API, over a real database and a
small vault: what each shows, refusals with their status codes, escaping of hostile text,
and row-level security deciding whose notebook the page may show."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli_org.db.connect import connect
from cli_org.recall.answer import recall
from cli_org.store import facts
from cli_org.store import notebook as nb
from cli_org.vault.embed import embed_pending
from cli_org.vault.scan import scan
from tests import web_site
from tests.web_site import MEMORY, VAULT, remember  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_web_agents")]

site = web_site.site  # the fixture (tests/web_site.py)

ATTACK = "<script>alert('x')</script><img src=x onerror=alert(1)>"


def _ask(client: TestClient, fields: dict):
    """The recall box's question, posted as the page's form posts it (with its CSRF token)."""
    box = client.get("/recall").text
    csrf = box.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    return client.post("/recall", data={**fields, "csrf": csrf})


def _recall_rows(org) -> list[dict]:
    with org.admin() as conn:
        return conn.execute("SELECT agent, project, query, hits, chars FROM recall_events ORDER BY id").fetchall()


# --- Agents -------------------------------------------------------------------------------


def test_agents_lists_each_agent_with_its_counts(org, site):
    kept = remember(org, "bot", "deploys", "Deploys run from the main branch only.")
    gone = remember(org, "bot", "builds", "Builds take twenty minutes.")
    remember(org, "other", "billing", "Invoices go out on the first working day.")
    with org.as_agent("bot") as conn:
        facts.forget(conn, gone, "measured again: nine minutes")
        nb.add(conn, "memory", "The staging database is reset every Sunday.")
        recall(conn, "when do deploys run", settings=site.settings)
    client = site("boss")
    rows = {a["name"]: a for a in client.get("/api/agents").json()}
    assert set(rows) == {"boss", "lead", "bot", "other"}
    bot = rows["bot"]
    assert (bot["kind"], bot["team_lead"], bot["is_owner"]) == ("bot", "lead", False)
    assert (bot["facts_current"], bot["facts_all"]) == (1, 2)
    assert (bot["notebook_memory"], bot["notebook_user"]) == (len("The staging database is reset every Sunday."), 0)
    assert bot["recalls"] == 1 and bot["last_recall"] is not None
    assert rows["boss"]["is_owner"] is True and rows["boss"]["kind"] == "person"
    assert (rows["other"]["facts_current"], rows["other"]["recalls"], rows["other"]["last_recall"]) == (1, 0, None)
    page = client.get("/agents").text
    assert 'href="/agents/bot"' in page and 'href="/facts?author=bot"' in page and "never" in page
    assert kept


def test_agents_notebook_use_is_shown_only_where_row_level_security_lets_the_server_read(org, site):
    with org.as_agent("other") as conn:
        nb.add(conn, "memory", "Billing exports are checked by hand on Mondays.")
    rows = {a["name"]: a for a in site("bot").get("/api/agents").json()}
    assert rows["other"]["notebook_readable"] is False and rows["other"]["notebook_memory"] is None
    assert rows["bot"]["notebook_readable"] is True and rows["bot"]["notebook_memory"] == 0
    assert "not readable as bot" in site("bot").get("/agents").text
    lead = {a["name"]: a for a in site("lead").get("/api/agents").json()}
    assert lead["bot"]["notebook_readable"] is True and lead["other"]["notebook_readable"] is False


def test_an_agent_page_shows_its_facts_notebook_memory_file_and_recalls(org, site):
    fid = remember(org, "bot", "deploys", "Deploys run from the main branch only.")
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", "The staging database is reset every Sunday.")
        nb.add(conn, "user", "Prefers short answers.")
        recall(conn, "staging reset day", settings=site.settings, project="web")
    client = site("boss")
    data = client.get("/api/agents/bot").json()
    assert data["agent"]["name"] == "bot" and [f["id"] for f in data["facts"]] == [fid]
    stores = {s["target"]: s for s in data["notebook"]["stores"]}
    assert stores["memory"]["entries"][0]["body"] == "The staging database is reset every Sunday."
    assert stores["memory"]["cap"] == 2200 and stores["user"]["used"] == len("Prefers short answers.")
    assert data["notebook_refused"] is None
    assert data["memory_file"]["path"] == ".agents/org/memory/bot.md"
    assert "VPN profile" in data["memory_file"]["text"] and data["memory_file"]["cut"] is False
    [event] = data["recalls"]
    assert (event["query"], event["project"]) == ("staging reset day", "web")
    page = client.get("/agents/bot").text
    assert f'href="/facts/{fid}"' in page and 'href="/facts?author=bot"' in page
    assert "reset every Sunday" in page and "2200" in page and "VPN profile" in page and "staging reset day" in page


def test_an_agent_without_memory_file_or_facts_says_so(org, site):
    page = site("boss").get("/agents/lead").text
    assert "No memory file" in page and "has no current facts" in page and "has not called recall" in page
    assert site("boss").get("/api/agents/lead").json()["memory_file"] is None


def test_a_bot_serving_cannot_read_another_bots_notebook_on_its_page(org, site):
    with org.as_agent("other") as conn:
        nb.add(conn, "memory", "The other bot's private working note.")
    bot = site("bot")
    data = bot.get("/api/agents/other").json()
    assert data["notebook"] is None and "only other, its team lead or an owner" in data["notebook_refused"]
    page = bot.get("/agents/other").text
    assert "private working note" not in page and "Not shown" in page and "acts as bot" in page
    # Its lead reads its own bot's notebook; an owner reads everyone's; nobody else.
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", "Bot's note for its lead.")
    assert site("lead").get("/api/agents/bot").json()["notebook"] is not None
    assert site("lead").get("/api/agents/other").json()["notebook"] is None
    assert "private working note" in site("boss").get("/agents/other").text


def test_unknown_or_absurd_agent_names_are_refused(site):
    client = site("boss")
    assert client.get("/api/agents/nobody").status_code == 404
    assert client.get("/api/agents/nobody").json() == {"error": "no agent named 'nobody'"}
    assert client.get("/agents/nobody").status_code == 404
    assert client.get("/api/agents/" + "x" * 65).status_code == 422
    assert client.get("/api/agents/..%2F..%2Fetc%2Fpasswd").status_code in (404, 422)
    assert client.get("/api/agents/a%00b").status_code == 400  # a NUL is one input error, not a 500


def test_hostile_text_on_agent_pages_shows_as_text(org, site):
    fid = remember(org, "bot", "<b>subject</b>", ATTACK)
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", ATTACK)
        recall(conn, "<script>alert(1)</script> deploys", settings=site.settings)
    (site.root / ".agents/org/memory/bot.md").write_text(ATTACK + "\n")
    client = site("boss")
    for path in ("/agents", "/agents/bot"):
        page = client.get(path).text
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>subject</b>" not in page
    page = client.get("/agents/bot").text
    assert page.count("&lt;script&gt;alert(") >= 3 and f'href="/facts/{fid}"' in page


def test_a_memory_file_too_long_is_cut_and_said_so(org, site):
    from cli_org.store.agents import MEMORY_FILE_CHARS

    (site.root / ".agents/org/memory/bot.md").write_text("- a line of notes\n" * (MEMORY_FILE_CHARS // 10))
    shown = site("boss").get("/api/agents/bot").json()["memory_file"]
    assert shown["cut"] is True and len(shown["text"]) == MEMORY_FILE_CHARS and shown["chars"] > MEMORY_FILE_CHARS
    assert "showing the first" in site("boss").get("/agents/bot").text


# --- Recall -------------------------------------------------------------------------------


def test_recall_shows_labelled_hits_with_why_and_logs_the_call(org, site):
    fid = remember(org, "bot", "rollback", "A rollback must happen within fifteen minutes of a bad deploy.")
    client = site("boss")
    data = client.post("/api/recall", json={"q": "rollback deploy", "limit": 6}).json()
    arms = {h["arm"] for h in data["hits"]}
    assert arms == {"fact", "memory", "vault"}, data
    assert data["query"] == "rollback deploy" and data["limit"] == 6 and data["chars"] > 50
    assert all(h["why"] for h in data["hits"])
    fact = next(h for h in data["hits"] if h["arm"] == "fact")
    assert fact["id"] == fid and fact["why"] == "every word matched"
    vault_paths = [h["path"] for h in data["hits"] if h["arm"] == "vault"]
    assert "ops/deploy.md" in vault_paths and "CURRENT/today.md" not in vault_paths
    page = _ask(client, {"q": "rollback deploy"}).text
    assert f'href="/facts/{fid}"' in page and '<span class="arm fact">' in page
    assert '<span class="arm vault">' in page and '<span class="arm memory">' in page
    assert "ops/deploy.md" in page and "make rollback" in page and "why: every word matched" in page
    assert ".agents/org/memory/bot.md:3" in page
    logged = _recall_rows(org)
    assert [(r["agent"], r["query"]) for r in logged] == [("boss", "rollback deploy")] * 2
    assert logged[0]["hits"] == len(data["hits"]) and logged[0]["chars"] == data["chars"]


def test_recall_json_is_the_clis(org, site, cli, monkeypatch):
    import json

    remember(org, "bot", "rollback", "A rollback must happen within fifteen minutes of a bad deploy.")
    monkeypatch.setenv("ORG_ROOT", str(site.root))
    code, out, _ = cli("recall", "rollback deploy", "--arms", "fact,memory", "--json", agent="boss")
    assert code == 0
    from_cli = json.loads(out)
    web = site("boss").post("/api/recall", json={"q": "rollback deploy"}).json()
    # The CLI asked two arms; the page asks all three: the fact and memory hits agree.
    assert set(from_cli) == set(web)
    same = [h for h in web["hits"] if h["arm"] != "vault"]
    assert [(h["arm"], h.get("id"), h.get("file")) for h in same] == [
        (h["arm"], h.get("id"), h.get("file")) for h in from_cli["hits"]
    ]


def test_recall_without_a_question_shows_the_box_and_nothing_found_is_said(site, org):
    client = site("boss")
    page = client.get("/recall").text
    assert '<form class="ask"' in page and 'name="q"' in page and "hit" not in page.split("</form>")[1][:40]
    assert _ask(client, {"q": "   "}).status_code == 200
    assert _recall_rows(org) == []  # no question, no call
    nothing = _ask(client, {"q": "zzqx wwvy"}).text
    assert "Nothing found" in nothing and "nothing found" in nothing


def test_recall_refusals(site, org):
    client = site("boss")
    assert client.post("/api/recall", json={}).status_code == 422
    assert client.post("/api/recall", json={"q": ""}).status_code == 422
    assert client.post("/api/recall", json={"q": "   "}).status_code == 422
    assert client.post("/api/recall", json={"q": "x" * 1001}).status_code == 422
    too_many = client.post("/api/recall", json={"q": " ".join(["word"] * 65)})
    assert too_many.status_code == 400 and "64" in too_many.json()["error"]
    assert client.post("/api/recall", json={"q": "deploy", "limit": 0}).status_code == 422
    assert client.post("/api/recall", json={"q": "deploy", "limit": 51}).status_code == 422
    assert client.post("/api/recall", json={"q": "deploy", "project": "p" * 201}).status_code == 422
    assert client.post("/api/recall", json={"q": "dep\x00loy"}).status_code == 400
    assert _ask(client, {"q": "x" * 1001}).status_code == 422
    assert _recall_rows(org) == []  # nothing refused was logged


def test_recall_memory_arm_answers_from_the_serving_agents_own_notebook_only(org, site):
    with org.as_agent("other") as conn:
        nb.add(conn, "memory", "Quarterly invoices reconcile against the ledger export.")
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", "Quarterly invoices are the bot's own concern too.")
    seen = site("bot").post("/api/recall", json={"q": "quarterly invoices"}).json()
    texts = [h.get("text", "") for h in seen["hits"] if h["arm"] == "memory"]
    assert any("bot's own concern" in t for t in texts) and not any("ledger export" in t for t in texts)
    logged = _recall_rows(org)
    assert [r["agent"] for r in logged] == ["bot"]


def test_recall_escapes_the_question_and_every_hit(org, site):
    remember(org, "bot", "<b>subject</b>", "Rollback notes: " + ATTACK)
    (site.root / ".agents/org/memory/bot.md").write_text("- rollback " + ATTACK + "\n")
    page = _ask(site("boss"), {"q": "rollback <script>alert(1)</script>"}).text
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>subject</b>" not in page
    assert "&lt;script&gt;alert(" in page


def test_recall_without_vectors_says_so(org, site, monkeypatch):
    """A server without pgvector answers every arm by keyword, with one notice (as the CLI)."""
    import cli_org.recall.answer as answer

    monkeypatch.setattr(answer, "vectors_ready", lambda conn: False)
    data = site("boss").post("/api/recall", json={"q": "rollback deploy"}).json()
    assert data["notice"] and "keyword" in data["notice"] and data["hits"]
    assert data["notice"] in _ask(site("boss"), {"q": "rollback deploy"}).text


# --- Search -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_search_in_each_mode(site, mode):
    client = site("boss")
    data = client.get("/api/search", params={"q": "rollback deploy", "mode": mode}).json()
    assert data["mode"] == data["used"] == mode and data["notice"] is None
    assert data["hits"][0]["path"] == "ops/deploy.md"
    assert "CURRENT/today.md" not in [h["path"] for h in data["hits"]]
    if mode != "keyword":
        assert data["hits"][0]["semantic_score"] is not None
    page = client.get("/search", params={"q": "rollback deploy", "mode": mode}).text
    assert "ops/deploy.md" in page and f"<option selected>{mode}</option>" in page


def test_search_without_vectors_falls_back_to_keyword_with_its_notice(org, site):
    from cli_org.db.migrate import NO_VECTORS

    with org.admin() as conn:  # a database whose vectors were never made
        conn.execute("UPDATE vault_chunks SET embedding = NULL, embed_model = NULL")
        conn.commit()
    client = site("boss")
    data = client.get("/api/search", params={"q": "rollback", "mode": "semantic"}).json()
    assert data["used"] == "keyword" and "no embeddings yet" in data["notice"]
    assert data["hits"][0]["path"] == "ops/deploy.md"
    assert "no embeddings yet" in client.get("/search", params={"q": "rollback", "mode": "hybrid"}).text
    assert NO_VECTORS  # the notice of a server without pgvector is the library's too


def test_search_private_notes_for_owners_only(site):
    owner = site("boss").get("/api/search", params={"q": "rollback drill", "private": True}).json()
    assert "CURRENT/today.md" in [h["path"] for h in owner["hits"]]
    refused = site("bot").get("/api/search", params={"q": "rollback drill", "private": True})
    assert refused.status_code == 403 and "owners" in refused.json()["error"]
    assert site("bot").get("/search", params={"q": "rollback drill", "private": "true"}).status_code == 403


def test_search_refusals(site):
    client = site("boss")
    assert client.get("/api/search", params={"q": "deploy", "mode": "fuzzy"}).status_code == 422
    assert client.get("/search", params={"q": "deploy", "mode": "fuzzy"}).status_code == 422
    assert client.get("/api/search").status_code == 422
    assert client.get("/api/search", params={"q": " "}).status_code == 422
    assert client.get("/api/search", params={"q": "x" * 1001}).status_code == 422
    assert client.get("/api/search", params={"q": " ".join(["w"] * 65)}).status_code == 400
    assert client.get("/api/search", params={"q": "deploy", "limit": 101}).status_code == 422
    assert client.get("/api/search", params={"q": "dep\x00loy"}).status_code == 400
    assert client.get("/search").status_code == 200  # no query: the box


def test_search_escapes_the_query_and_the_notes(org, site):
    vault = site.vault
    (vault / "x.md").write_text(f"# {ATTACK}\n\nrollback {ATTACK}\n")
    with connect(org.settings) as conn:
        scan(conn, vault)
    page = site("boss").get("/search", params={"q": "rollback <script>alert(1)</script>", "mode": "keyword"}).text
    assert "<script>alert" not in page and "<img src=x" not in page and "&lt;script&gt;" in page


def test_the_pages_are_in_the_published_schema(site):
    paths = site("boss").get("/api/openapi.json").json()["paths"]
    assert {"/api/agents", "/api/agents/{name}", "/api/recall", "/api/search"} <= set(paths)
    assert not {"/agents", "/recall", "/search"} & set(paths)


# --- the real model -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_settings(tmp_path_factory):
    from cli_org.config import Settings
    from cli_org.vault.embedders import installed

    if not installed():
        pytest.skip("the model's weights are not installed (README, Set-up)")

    return Settings(data_dir=tmp_path_factory.mktemp("models"))


def test_recall_and_search_with_the_real_query_model(org, site, model_settings):
    """The page's recall and semantic search with the real model: vectors indexed by the
    indexing model, the question embedded by the ONNX query model the server opens."""
    from cli_org.vault.embedders import index_embedder, opened, query_embedder

    with index_embedder(model_settings) as indexer, connect(org.settings) as conn:
        embed_pending(conn, indexer, reset=True)
    with opened(query_embedder(model_settings)[0]) as model:
        client = site("boss", embedder=model)
        found = client.get("/api/search", params={"q": "undo a broken release quickly", "mode": "semantic"}).json()
        assert found["used"] == "semantic" and found["notice"] is None
        assert found["hits"][0]["path"] == "ops/deploy.md"
        answer = client.post("/api/recall", json={"q": "how do I roll back a bad deploy"}).json()
        assert answer["notice"] is None
        vault = [h for h in answer["hits"] if h["arm"] == "vault"]
        assert vault and vault[0]["path"] == "ops/deploy.md" and vault[0]["semantic_score"] > 0.3
