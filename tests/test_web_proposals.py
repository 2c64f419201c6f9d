"""The Proposals page (`cli-org serve`, issue 35): the lessons the import proposed, decided on
the page as the serving identity (accept, edit and accept, reject), the agent's page counting
its own, and the same as JSON; over the real database, with the team's real logins (boss the
owner, lead, bot led by lead, other), refusals tried from the wrong side."""

from __future__ import annotations

import re

import pytest

from cli_org.store import facts
from tests.helpers import SECRET
from tests.helpers import archived_session as _session
from tests.helpers import propose as _propose

pytestmark = pytest.mark.slow

CLAIM = "In this repo use pnpm, never npm."


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page has no form token"
    return found.group(1)


def _state(org, pid: int) -> dict:
    with org.admin() as conn:
        return conn.execute(
            "SELECT state, fact_id, decided_by, reason FROM memory_proposals WHERE id = %s", (pid,)
        ).fetchone()


def _fact(org, fact_id: int):
    with org.as_agent("boss") as conn:
        return facts.show_fact(conn, fact_id).fact


@pytest.fixture
def one(org):
    """bot's pending proposal from a web-project session: (proposal id, session id)."""
    return _propose(org, _session(org, "sess-7f3a", project="web"), CLAIM, project="web", key="line-12")


def test_the_page_lists_what_may_be_decided_with_its_provenance(org, web, one):
    page = web("bot").get("/proposals")
    assert page.status_code == 200
    text = page.text
    assert CLAIM in text and "package manager" in text and ">rule<" in text and "correction" in text
    assert '<a href="/sessions/sess-7f3a?harness=claude-code"><code>sess-7f3a</code></a>' in text
    assert "message <code>line-12</code>" in text and '<a href="/agents/bot">bot</a>' in text
    assert f'action="/proposals/{one}/accept"' in text and f'action="/proposals/{one}/reject"' in text
    assert '<a href="/proposals" class="here" aria-current="page">Proposals</a>' in text  # in the nav
    # Another member neither sees it nor may act on it: the page says there is nothing.
    other = web("other").get("/proposals").text
    assert CLAIM not in other and "No pending proposals" in other


def test_what_a_transcript_said_shows_as_text(org, web):
    hostile = "Template names end in .html.j2, never <script>x</script> or <b>raw</b> tags."
    _propose(org, _session(org, 'sess-"><i>'), hostile, subject="<img src=x>", key="<m>")
    text = web("boss").get("/proposals").text
    assert "<script>x" not in text and "<b>raw" not in text and "<img src=x>" not in text and "<i>" not in text
    assert "&lt;script&gt;x&lt;/script&gt;" in text and "&lt;img src=x&gt;" in text and "&lt;m&gt;" in text
    assert 'href="/sessions/sess-%22%3E%3Ci%3E?harness=claude-code"' in text


def test_another_agent_trying_to_accept_is_refused_and_nothing_changes(org, web, one):
    client = web("other")  # neither bot, nor its lead, nor an owner
    token = _csrf(client.get("/recall").text)  # its page lists none: the form token of another page
    refused = client.post(f"/proposals/{one}/accept", data={"csrf": token})
    assert refused.status_code == 403 and 'class="error"' in refused.text
    assert f"may not decide proposal {one}" in refused.text
    edited = client.post(f"/proposals/{one}/accept", data={"csrf": token, "claim": "Use npm.", "subject": "npm"})
    assert edited.status_code == 403
    assert client.post(f"/proposals/{one}/reject", data={"csrf": token, "reason": "mine now"}).status_code == 403
    api = client.post(f"/api/proposals/{one}/accept", json={})
    assert api.status_code == 403 and set(api.json()) == {"error"}
    assert _state(org, one) == {"state": "pending", "fact_id": None, "decided_by": None, "reason": None}


def test_the_agent_accepts_its_own_and_the_fact_is_its_with_the_session_as_source(org, web, one):
    client = web("bot")
    token = _csrf(client.get("/proposals").text)
    done = client.post(f"/proposals/{one}/accept", data={"csrf": token, "state": "pending", "project": "web"})
    assert done.status_code == 303 and done.headers["location"] == "/proposals?project=web"
    row = _state(org, one)
    assert (row["state"], row["decided_by"]) == ("accepted", "bot")
    fact = _fact(org, row["fact_id"])
    assert (fact.author, fact.claim, fact.project) == ("bot", CLAIM, "web")
    assert fact.source == "sessions/claude-code/sess-7f3a/line-12"
    assert CLAIM not in client.get("/proposals").text  # no longer pending
    shown = client.get("/proposals", params={"state": "accepted"}).text
    assert f'<a href="/facts/{row["fact_id"]}">fact #{row["fact_id"]}</a>' in shown


def test_edit_and_accept_stores_the_edited_claim_and_subject(org, web, one):
    client = web("lead")  # bot's team lead decides for it
    page = client.get("/proposals").text
    assert (
        f'<textarea name="claim" rows="3" maxlength="1000" required aria-label="claim of #{one}">{CLAIM}</textarea>'
        in page
    )
    edited = "The storefront repo uses pnpm; npm's package-lock.json breaks CI."
    done = client.post(
        f"/proposals/{one}/accept", data={"csrf": _csrf(page), "claim": f"  {edited} ", "subject": "pnpm"}
    )
    assert done.status_code == 303 and done.headers["location"] == "/proposals"
    row = _state(org, one)
    assert (row["state"], row["decided_by"]) == ("accepted", "lead")
    fact = _fact(org, row["fact_id"])
    assert (fact.author, fact.subject, fact.claim) == ("bot", "pnpm", edited)


def test_a_bad_edit_is_refused_on_the_error_page_and_the_proposal_waits(org, web, one):
    client = web("bot")
    token = _csrf(client.get("/proposals").text)
    for claim in ("", "   ", f"Use pnpm; the registry token is {SECRET}", "x" * 5000):
        refused = client.post(f"/proposals/{one}/accept", data={"csrf": token, "claim": claim, "subject": "pnpm"})
        assert refused.status_code == 400 and 'class="error"' in refused.text, claim[:20]
        assert SECRET not in refused.text
    assert (
        client.post(f"/proposals/{one}/accept", data={"csrf": token, "claim": CLAIM, "subject": ""}).status_code == 400
    )
    assert _state(org, one)["state"] == "pending"


def test_one_that_belongs_to_no_agent_is_accepted_by_an_owner_naming_its_author(org, web):
    pid = _propose(org, _session(org, "sess-n"), "Keep the v1 routes until March.", agent=None, key="m-8")
    client = web("boss")
    page = client.get("/proposals").text
    assert "none yet: an owner names the author on accepting" in page
    assert '<input name="author" maxlength="64" required placeholder="author (an agent)"' in page
    token = _csrf(page)
    unnamed = client.post(f"/proposals/{pid}/accept", data={"csrf": token, "author": " "})
    assert unnamed.status_code == 400 and "belongs to no agent yet" in unnamed.text
    assert client.post(f"/proposals/{pid}/accept", data={"csrf": token, "author": "nobody"}).status_code == 404
    assert client.post(f"/proposals/{pid}/accept", data={"csrf": token, "author": "Bad Name"}).status_code == 400
    assert client.post(f"/proposals/{pid}/accept", data={"csrf": token, "author": "other"}).status_code == 303
    row = _state(org, pid)
    assert row["decided_by"] == "boss" and _fact(org, row["fact_id"]).author == "other"
    # A lead leads nobody's session: it neither sees nor decides one.
    assert client.post(f"/proposals/{pid}/accept", data={"csrf": token}).status_code == 400  # decided now
    lead = web("lead")
    assert "Keep the v1 routes" not in lead.get("/proposals", params={"state": "all"}).text


def test_reject_removes_it_from_the_pending_list_and_keeps_the_reason(org, web, one):
    kept = _propose(org, _session(org, "sess-b"), "Run make lint before every commit.", key="m-2")
    client = web("boss")  # an owner decides anyone's
    token = _csrf(client.get("/proposals").text)
    done = client.post(f"/proposals/{one}/reject", data={"csrf": token, "reason": "a one-off, not a rule"})
    assert done.status_code == 303
    assert _state(org, one) == {
        "state": "rejected",
        "fact_id": None,
        "decided_by": "boss",
        "reason": "a one-off, not a rule",
    }
    pending = client.get("/proposals").text
    assert CLAIM not in pending and "Run make lint before every commit." in pending
    rejected = client.get("/proposals", params={"state": "rejected"}).text
    assert (
        CLAIM in rejected
        and "a one-off, not a rule" in rejected
        and f'action="/proposals/{one}/accept"' not in rejected
    )
    # Decided once: accepting it now is refused, in one line.
    again = client.post(f"/proposals/{one}/accept", data={"csrf": token})
    assert again.status_code == 400 and "already rejected" in again.text
    assert _state(org, kept)["state"] == "pending"


def test_a_form_without_its_token_or_from_another_site_decides_nothing(org, web, one):
    client = web("boss")
    assert client.post(f"/proposals/{one}/accept", data={"claim": CLAIM}).status_code == 403
    assert client.post(f"/proposals/{one}/reject", data={"csrf": "0" * 64}).status_code == 403
    good = _csrf(client.get("/proposals").text)
    cross = client.post(f"/proposals/{one}/accept", data={"csrf": good}, headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403 and "another site" in cross.text
    assert _state(org, one)["state"] == "pending"


def test_unknown_and_malformed_ids_and_filters(org, web, one):
    client = web("boss")
    token = _csrf(client.get("/proposals").text)
    missing = client.post("/proposals/987654321/accept", data={"csrf": token})
    assert missing.status_code == 404 and "no proposal with id 987654321" in missing.text
    assert client.post("/proposals/0/accept", data={"csrf": token}).status_code == 422
    assert client.post("/proposals/abc/reject", data={"csrf": token}).status_code == 422
    assert client.get("/proposals", params={"state": "maybe"}).status_code == 422
    assert client.get("/proposals", params={"agent": "x" * 65}).status_code == 422
    bad = client.get("/proposals", params={"agent": "Not An Agent"})
    assert bad.status_code == 400 and 'class="error"' in bad.text
    assert client.get("/api/proposals", params={"state": "maybe"}).status_code == 422
    # A filter in the form's hidden fields only shapes where it goes back to, bounded and encoded.
    back = client.post(
        f"/proposals/{one}/reject", data={"csrf": token, "agent": "bot&state=all", "project": "w" * 500}
    ).headers["location"]
    assert back.startswith("/proposals?agent=bot%26state%3Dall&project=") and len(back) < 200


def test_filters_by_agent_and_project(org, web, one):
    theirs = _propose(
        org,
        _session(org, "sess-o", project="api"),
        "The api deploys at 02:00 UTC.",
        agent="other",
        project="api",
        key="m-5",
    )
    client = web("boss")
    everything = client.get("/proposals").text
    assert CLAIM in everything and "The api deploys at 02:00 UTC." in everything
    only_other = client.get("/proposals", params={"agent": "other"}).text
    assert CLAIM not in only_other and "The api deploys at 02:00 UTC." in only_other
    only_web = client.get("/proposals", params={"project": "web"}).text
    assert CLAIM in only_web and "The api deploys at 02:00 UTC." not in only_web
    assert theirs != one


def test_the_agent_page_counts_its_pending_proposals_and_links_to_them(org, web, one):
    _propose(org, _session(org, "sess-c"), "Keep the v1 routes until March.", key="m-3")
    page = web("lead").get("/agents/bot").text
    assert re.search(r'proposals waiting</div><div class="stat"><a href="/proposals\?agent=bot">2</a>', page)
    # A member who may not decide them sees none counted.
    assert re.search(r'<a href="/proposals\?agent=bot">0</a>', web("other").get("/agents/bot").text)
    assert web("lead").get("/api/agents/bot").json()["proposals_pending"] == 2


def test_the_api_lists_accepts_with_an_edit_and_rejects(org, web, one):
    second = _propose(org, _session(org, "sess-d"), "The test database is on 5433, not 5432.", key="m-4")
    client = web("bot")
    listed = client.get("/api/proposals").json()
    assert [p["id"] for p in listed] == [second, one] and listed[1]["session"] == "sess-7f3a"
    done = client.post(f"/api/proposals/{one}/accept", json={"claim": "Use pnpm in this repo, never npm."})
    assert done.status_code == 200 and done.json()["state"] == "accepted"
    assert _fact(org, done.json()["fact_id"]).claim == "Use pnpm in this repo, never npm."
    assert client.post(f"/api/proposals/{second}/reject", data={"reason": "form"}).status_code == 415
    gone = client.post(f"/api/proposals/{second}/reject", json={"reason": "said once"})
    assert gone.status_code == 200 and (gone.json()["state"], gone.json()["reason"]) == ("rejected", "said once")
    assert client.get("/api/proposals").json() == []
    assert client.post(f"/api/proposals/{second}/accept", json={"claim": "x" * 1001}).status_code == 422
