"""What agent X sees, in a real browser (issue 26): an agent's page shows its session-start
block, its recent recall links to what that recall returned (shown from the stored hits,
never asked again), and a fact's page counts its recall hits and quotes. The server, the data
and the browser are tests/browsing.py's (its fixtures, imported); screenshots go to
the same folder."""

from __future__ import annotations

import pytest

from tests import browsing
from tests.browsing import ANSWER, QUESTION

browser, site, tab = browsing.browser, browsing.site, browsing.tab  # the fixtures (tests/browsing.py)


pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


def _recall_rows(org) -> int:
    with org.admin() as conn:
        return conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"]


def test_an_agents_page_shows_its_block_and_a_past_recalls_hits(site, tab):  # noqa: F811
    _, org, ids, _ = site
    page = tab.page
    tab.open("/agents/bot")
    block = page.locator("pre.context-block")
    assert block.count() == 1
    text = block.inner_text()
    assert text.startswith("== Org context for bot ==") and f"#{ids['freeze']} deploy freeze" in text
    assert "Logs are kept for 90 days" in text and "Logs are kept for 30 days" not in text  # current only
    assert page.get_by_role("heading", name="Session-start block").count() == 1
    tab.shoot("agent-block")

    before = _recall_rows(org)
    link = page.locator("table.recalls a", has_text=QUESTION).first
    with page.expect_navigation(wait_until="load"):
        link.click()
    assert "/recall/" in page.url and page.locator("h1").inner_text() == QUESTION
    hits = page.locator("ol.hits li.hit")
    assert hits.count() >= 1 and ANSWER in hits.first.inner_text()
    assert page.locator(f'ol.hits a[href="/facts/{ids["freeze"]}"]').count() == 1
    assert "nothing is asked again" in page.locator("main").inner_text()
    tab.shoot("past-recall")
    assert _recall_rows(org) == before  # opening it asked nothing, logged nothing

    page.locator(f'ol.hits a[href="/facts/{ids["freeze"]}"]').click()
    page.wait_for_url(f"**/facts/{ids['freeze']}")
    recalled = page.locator("p.recalled").inner_text()
    assert "A hit in 1 recall by 1 agent" in recalled and "Quoted after 1 of the 1" in recalled
    tab.shoot("fact-recalled")
    tab.clean()
