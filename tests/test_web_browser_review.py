"""The review list in a real browser (headless Chromium, as tests/browsing.py runs it, with its
server, data and watched tabs): the Facts summary links it, the page lists a contradiction and
a near-duplicate with what settles each, hostile text stays text; a screenshot is saved."""

from __future__ import annotations

import pytest

from cli_org.evaluation.review import refresh
from cli_org.store import facts, links
from tests import browsing
from tests.browsing import HOSTILE

browser, site, tab = browsing.browser, browsing.site, browsing.tab  # the fixtures (tests/browsing.py)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


def test_the_facts_summary_links_the_review_list(site, tab):  # noqa: F811
    _, org, ids, _ = site
    with org.as_agent("bot") as conn:
        copy = facts.remember(
            conn, "<b>hostile</b>", f"A claim that tries {HOSTILE} again", source="#sec-2", allow_duplicate=True
        ).id
        window = facts.remember(conn, "deploy window", "Deploys happen between 10:00 and 15:00", source="#ops-3").id
        links.link(conn, window, "contradicts", ids["freeze"], reason="another time")
    with org.as_agent("boss") as conn, org.as_agent("boss") as lock:
        assert refresh(conn, lock).near_duplicates >= 1
    page = tab.page
    tab.open("/facts")
    summary = page.locator("section.summary").inner_text()
    assert "wait for review" in summary and "contradiction" in summary
    page.locator("section.summary").screenshot(path=str(browsing.screens_dir() / "facts-summary-review.png"))
    page.locator("section.summary").get_by_role("link", name="review…").click()
    page.wait_for_url("**/facts/review")
    main = page.locator("main").inner_text()
    assert "Contradictions (1)" in main and "Near-duplicates" in main
    assert "cli-org unlink" in main and "cli-org tidy --apply" in main
    assert page.locator(f'main a[href="/facts/{copy}"]').count() >= 1
    assert HOSTILE in main and page.locator("main img, main script").count() == 0
    tab.shoot("facts-review")
    tab.clean()
