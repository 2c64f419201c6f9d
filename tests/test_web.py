"""The web page (`cli-org serve`): pages and API over a real database, acting as one agent;
the security rules (bind, token, Host, CSRF, escaping, rights) tried from the wrong side."""

from __future__ import annotations

import re

import pytest

from cli_org.errors import ConfigError
from cli_org.faces.web.guard import check_bind, csrf_token
from tests.helpers import free_port


def _remember(org, agent: str, subject: str, claim: str, **kw) -> int:
    from cli_org.store.facts import remember

    return remember(org.writer(agent), subject, claim, source=kw.pop("source", "#test-1"), **kw).id


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page has no form token"
    return found.group(1)


def _current(org, fact_id: int) -> bool:
    with org.admin() as conn:
        return conn.execute("SELECT valid_to IS NULL AS c FROM memory_facts WHERE id = %s", (fact_id,)).fetchone()["c"]


@pytest.mark.slow
def test_facts_page_lists_current_facts_and_hides_retired_ones_until_asked(org, web):
    kept = _remember(org, "bot", "deploys", "Deploys run from the main branch only.")
    gone = _remember(org, "bot", "builds", "Builds take twenty minutes.")
    from cli_org.store.facts import forget

    with org.as_agent("bot") as conn:
        forget(conn, gone, "measured again: nine minutes")
    client = web("boss")
    page = client.get("/facts").text
    assert f'href="/facts/{kept}"' in page and f'href="/facts/{gone}"' not in page
    everything = client.get("/facts", params={"all": "true"}).text
    assert f'href="/facts/{gone}"' in everything and "retired" in everything


@pytest.mark.slow
def test_facts_filters_by_text_subject_author_and_kind(org, web):
    a = _remember(org, "bot", "deploys", "Canary first, then the fleet.", kind="rule")
    b = _remember(org, "other", "billing", "Invoices are sent on the first working day.")
    client = web("boss")
    assert [f["id"] for f in client.get("/api/facts", params={"q": "CANARY"}).json()["facts"]] == [a]
    assert [f["id"] for f in client.get("/api/facts", params={"author": "other"}).json()["facts"]] == [b]
    assert [f["id"] for f in client.get("/api/facts", params={"kind": "rule"}).json()["facts"]] == [a]
    assert [f["id"] for f in client.get("/api/facts", params={"subject": "Billing"}).json()["facts"]] == [b]
    assert "No current facts match these filters" in client.get("/facts", params={"q": "nothing like it"}).text


@pytest.mark.slow
def test_facts_are_paged_newest_first(org, web):
    from cli_org.store.facts import remember

    with org.as_agent("bot") as conn:
        ids = [remember(conn, "load", f"Fact number {i} of the page test.", source="#t-1").id for i in range(105)]
    client = web("boss")
    first = client.get("/api/facts").json()
    assert first["more"] is True and len(first["facts"]) == 100
    assert first["facts"][0]["id"] == ids[-1]
    second = client.get("/api/facts", params={"page": 2}).json()
    assert second["more"] is False and [f["id"] for f in second["facts"]] == sorted(ids[:5], reverse=True)
    assert "older &rarr;" in client.get("/facts").text


@pytest.mark.slow
def test_a_fact_page_shows_its_history_the_chain_both_ways_and_its_pins(org, web):
    from cli_org.store.pins import pin

    old = _remember(org, "bot", "retention", "Logs are kept for 30 days.")
    new = _remember(org, "bot", "retention", "Logs are kept for 90 days since the audit.", supersedes=old)
    with org.as_agent("boss") as conn:
        pin(conn, new)
    client = web("boss")
    page = client.get(f"/facts/{old}").text
    assert "superseded by" in page and f'href="/facts/{new}"' in page
    assert "Supersession chain" in page and "Logs are kept for 90 days" in page
    newer = client.get(f"/facts/{new}").text
    assert "org-wide: pinned by boss" in newer and ">Unpin<" in newer
    data = client.get(f"/api/facts/{new}").json()
    assert data["chain"] == [old, new] and data["pins"][0]["pinned_by"] == "boss"
    assert [e["what"] for e in client.get(f"/api/facts/{old}").json()["events"]] == ["written", "superseded"]


@pytest.mark.slow
def test_user_text_is_escaped_everywhere_it_shows(org, web):
    attack = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    fid = _remember(org, "bot", "<b>subject</b>", f"Claim {attack}")
    client = web("boss")
    for path in ("/facts", f"/facts/{fid}", "/facts?q=%3Cscript%3E"):
        page = client.get(path).text
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>subject</b>" not in page
        assert "&lt;script&gt;alert(" in page
    error = client.get("/facts/999999999").text  # the refusal line is escaped too
    assert "no fact with id 999999999" in error


@pytest.mark.slow
def test_forms_write_as_the_serving_identity_with_a_csrf_token(org, web):
    fid = _remember(org, "bot", "cache", "The cache holds an hour of results.")
    client = web("lead")  # bot's team lead may retire bot's facts
    token = _csrf(client.get(f"/facts/{fid}").text)
    moved = client.post(f"/facts/{fid}/forget", data={"why": "cache removed", "csrf": token})
    assert moved.status_code == 303 and moved.headers["location"] == f"/facts/{fid}"
    assert not _current(org, fid)
    page = client.get(f"/facts/{fid}").text
    assert 'retired</strong> by <a href="/agents/lead">lead</a>' in page and "cache removed" in page
    assert client.post(f"/facts/{fid}/restore", data={"why": "back again", "csrf": token}).status_code == 303
    assert _current(org, fid)
    assert client.post(f"/facts/{fid}/pin", data={"project": "", "csrf": token}).status_code == 303
    assert client.post(f"/facts/{fid}/unpin", data={"csrf": token}).status_code == 303
    with org.admin() as conn:
        pins = conn.execute("SELECT pinned_by, unpinned_by FROM memory_pins WHERE fact_id = %s", (fid,)).fetchall()
    assert pins == [{"pinned_by": "lead", "unpinned_by": "lead"}]


@pytest.mark.slow
def test_a_form_without_the_token_or_from_another_site_changes_nothing(org, web):
    fid = _remember(org, "bot", "cache", "The cache holds an hour of results.")
    client = web("boss")
    assert client.post(f"/facts/{fid}/forget", data={"why": "forged"}).status_code == 403
    assert client.post(f"/facts/{fid}/forget", data={"why": "forged", "csrf": "0" * 64}).status_code == 403
    assert (
        client.post(f"/facts/{fid}/forget", data={"why": "forged", "csrf": csrf_token(b"another secret")}).status_code
        == 403
    )
    good = _csrf(client.get(f"/facts/{fid}").text)
    cross = client.post(
        f"/facts/{fid}/forget", data={"why": "forged", "csrf": good}, headers={"Origin": "https://evil.example"}
    )
    assert cross.status_code == 403 and "another site" in cross.text
    assert client.post(f"/facts/{fid}/forget", content=b"{}", headers={"Content-Type": "text/plain"}).status_code == 415
    assert _current(org, fid)


@pytest.mark.slow
def test_rights_hold_on_the_page_and_the_api(org, web):
    fid = _remember(org, "bot", "cache", "The cache holds an hour of results.")
    client = web("other")  # neither bot's author, nor its lead, nor an owner
    token = _csrf(client.get(f"/facts/{fid}").text)
    refused = client.post(f"/facts/{fid}/forget", data={"why": "not mine", "csrf": token})
    assert refused.status_code == 403 and 'class="error"' in refused.text
    api = client.post(f"/api/facts/{fid}/forget", json={"why": "not mine"})
    assert api.status_code == 403 and set(api.json()) == {"error"}
    assert _current(org, fid)


@pytest.mark.slow
def test_api_refusals_have_the_right_status(org, web):
    fid = _remember(org, "bot", "cache", "The cache holds an hour of results.")
    client = web("bot")
    assert client.get("/api/facts/987654321").status_code == 404
    assert client.get("/api/facts/0").status_code == 422
    assert client.get("/api/facts/99999999999999999999999").status_code == 422
    assert client.get("/api/facts", params={"page": 0}).status_code == 422
    assert client.post(f"/api/facts/{fid}/forget", json={"why": "  "}).status_code == 400
    assert client.post(f"/api/facts/{fid}/forget", json={}).status_code == 422
    assert client.post(f"/api/facts/{fid}/forget", data={"why": "form"}).status_code == 415
    assert client.post(f"/api/facts/{fid}/unpin", json={}).status_code in (400, 404)
    ok = client.post(f"/api/facts/{fid}/forget", json={"why": "obsolete"})
    assert ok.status_code == 200 and ok.json() == {"forgotten": fid}
    assert client.post(f"/api/facts/{fid}/restore", json={"why": "holds"}).json()["valid_to"] is None


@pytest.mark.slow
def test_the_openapi_schema_is_published_and_names_every_api_route(web):
    schema = web("boss").get("/api/openapi.json").json()
    routes = set(schema["paths"])
    assert {"/api/facts", "/api/facts/{fact_id}", "/api/facts/{fact_id}/forget", "/api/pins"} <= routes
    assert all(path.startswith("/api/") for path in routes)


@pytest.mark.slow
def test_a_token_guards_every_request(org, web):
    secret = "s3cret-token-for-the-test"
    client = web("boss", token=secret, login=False)
    assert client.get("/facts").status_code == 401
    assert client.get("/api/facts").json() == {"error": client.get("/api/facts").json()["error"]}
    assert client.get("/api/facts", headers={"Authorization": "Bearer wrong-token-of-some-length"}).status_code == 401
    assert client.get("/api/facts", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    moved = client.get("/facts", params={"token": secret, "q": "x"})
    assert moved.status_code == 303 and moved.headers["location"] == "/facts?q=x"
    assert "httponly" in moved.headers["set-cookie"].lower()
    assert client.get("/facts").status_code == 200  # the cookie it set


@pytest.mark.slow
def test_only_the_loopback_host_it_serves_is_answered(web):
    client = web("boss")
    assert client.get("/facts").status_code == 200
    assert client.get("/facts", headers={"Host": "localhost:8765"}).status_code == 200
    assert client.get("/facts", headers={"Host": "attacker.example:8765"}).status_code == 421


@pytest.mark.slow
def test_a_non_loopback_bind_needs_a_token(cli):
    with pytest.raises(ConfigError, match="not a loopback address"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ConfigError, match="too short"):
        check_bind("0.0.0.0", "short")
    check_bind("0.0.0.0", "a-long-enough-token")
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    code, out, err = cli("serve", "--host", "0.0.0.0", "--as", "boss")
    assert code == 1 and "not a loopback address" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_port_in_use_is_one_line_before_anything_starts(cli):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli("serve", "--as", "boss", "--port", str(port))
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"cli-org: cannot listen on 127.0.0.1:{port}: Address already in use; choose another with --port N"
    ]


@pytest.mark.slow
def test_the_embedded_server_needs_someone_to_act_as(cli):
    # a port the OS picked: the default 8765 may be the user's own `cli-org serve`
    code, _, err = cli("serve", "--port", str(free_port()))
    assert code == 1 and "--as NAME" in err


@pytest.mark.slow
def test_a_page_with_a_bad_parameter_is_a_page_and_the_api_says_it_in_json(web):
    client = web("boss")
    page = client.get("/facts", params={"page": "zero"})
    assert page.status_code == 422 and "text/html" in page.headers["content-type"]
    assert "page:" in page.text and 'class="error"' in page.text
    api = client.get("/api/facts", params={"page": "zero"})
    # the one shape of a refusal (docs/web.md; issue 33): {"error": ...} naming the parameter
    assert api.status_code == 422 and set(api.json()) == {"error"} and api.json()["error"].startswith("page:")


@pytest.mark.slow
def test_another_sites_page_cannot_fetch_from_this_one_but_a_link_from_it_opens(web):
    client = web("boss")
    embedded = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
    assert client.get("/recall", params={"q": "deploy window"}, headers=embedded).status_code == 403
    fetched = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}
    assert client.get("/api/facts", headers=fetched).status_code == 403
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    assert client.get("/facts", headers=link).status_code == 200
    assert client.get("/facts", headers={"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}).status_code == 200


@pytest.mark.slow
def test_another_site_can_neither_frame_the_page_nor_ask_through_a_link(org, web):
    """A frame is a navigation too (Sec-Fetch-Dest: iframe): refused, and every answer
    forbids framing, so another site cannot overlay the pin and forget buttons. A link that
    carries a question only fills the box: a recall is logged, so only a POST asks."""
    client = web("boss")
    framed = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
    assert client.get("/facts", headers=framed).status_code == 403
    for answer in (client.get("/facts"), client.get("/api/facts"), client.get("/facts", headers=framed)):
        assert answer.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    with org.admin() as conn:
        logged = conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"]
    filled = client.get("/recall", params={"q": "deploy window"}, headers=link)
    assert filled.status_code == 200 and 'value="deploy window"' in filled.text
    assert client.get("/api/recall", params={"q": "deploy window"}, headers=link).status_code == 405
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"] == logged
    asked = client.post("/recall", data={"q": "deploy window", "csrf": _csrf(filled.text)})  # asked on the page
    assert asked.status_code == 200
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"] == logged + 1


@pytest.mark.slow
def test_the_token_redirect_stays_on_this_site(web):
    client = web("boss", token="t" * 32)
    moved = client.get("http://127.0.0.1:8765//evil.example/facts?token=" + "t" * 32)
    assert moved.status_code == 303 and moved.headers["location"] == "/evil.example/facts"


@pytest.mark.slow
def test_a_database_behind_the_code_is_refused_before_serving(org, web, monkeypatch):
    """A newer cli-org (one more migration than the database has) refuses to serve until
    `cli-org init` has run; one waiting for a missing extension does not hold it up."""
    from cli_org.db import migrate

    shipped = migrate.available()
    newer = migrate.Migration(9999, "newer_column", "SELECT 1;")
    monkeypatch.setattr(migrate, "available", lambda: [*shipped, newer])
    with pytest.raises(ConfigError, match=r"1 migration\(s\) behind cli-org \(9999_newer_column\): run `cli-org init`"):
        web("boss")
    waiting = migrate.Migration(9999, "needs_an_extension", "SELECT 1;", ("some_extension",))
    monkeypatch.setattr(migrate, "available", lambda: [*shipped, waiting])
    assert web("boss").get("/facts").status_code == 200


@pytest.mark.slow
def test_a_pool_with_no_free_connection_answers_503_in_one_line(web):
    client = web("boss")
    pool = client.app.state.web.org.pool
    held = [pool.getconn() for _ in range(pool.max_size)]
    try:
        pool.timeout = 0.5
        page, api = client.get("/facts"), client.get("/api/facts")
    finally:
        for conn in held:
            pool.putconn(conn)
    busy = f"all {pool.max_size} database connections stayed busy for 0.5 s; try again in a moment"
    assert page.status_code == 503 and busy in page.text and "text/html" in page.headers["content-type"]
    assert api.status_code == 503 and api.json() == {"error": busy}
    assert client.get("/api/facts").status_code == 200  # and it serves again once one is free


def test_on_port_80_a_browser_host_without_the_port_is_served():
    from cli_org.faces.web.guard import hosts_for

    assert {"127.0.0.1", "localhost:80", "[::1]"} <= hosts_for("127.0.0.1", 80)
    assert "127.0.0.1" not in hosts_for("127.0.0.1", 8765) and "evil.example" not in hosts_for("127.0.0.1", 80)
