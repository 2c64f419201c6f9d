"""The Activity page in a real browser (headless Chromium, as tests/browsing.py runs
it, with its server, data and watched tabs): the events show, linked to their facts and
agents, a filter narrows them, hostile text stays text; a screenshot is saved."""

from __future__ import annotations

import pytest

from cli_org.store import notebook as nb
from cli_org.store import todos
from tests import browsing
from tests.browsing import HOSTILE

browser, site, tab = browsing.browser, browsing.site, browsing.tab  # the fixtures (tests/browsing.py)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

VIA = "claude-code@box1"


def test_the_activity_page_shows_what_changed_by_agent_and_harness(site, tab):  # noqa: F811
    _, org, ids, _ = site
    with org.as_agent("bot") as conn:
        nb.add(conn, "memory", "The lead reads the activity page every morning.", via=VIA)
        todo = todos.add_todo(conn, "Review the deploy freeze dates", via=VIA).id
        todos.done_todo(conn, todo, via=VIA)
    page = tab.page
    tab.open("/activity")
    rows = page.locator("table.activity tbody tr")
    assert rows.count() >= 8  # the facts the site loaded, the supersede, the notebook edit, the todo
    main = page.locator("main").inner_text()
    for seen in ("todo done", "todo added", "notebook bot/memory", "superseded", "deploy freeze", "claude-code"):
        assert seen in main, seen
    assert HOSTILE in main and page.locator("main img, main script").count() == 0
    assert page.locator(f'main a[href="/facts/{ids["freeze"]}"]').count() >= 1
    assert page.locator('main a[href="/agents/other"]').count() >= 1
    tab.shoot("activity")

    page.locator("table.activity").get_by_role("link", name="claude-code").first.click()
    page.wait_for_url("**/activity?*via=claude-code*")
    kinds = page.locator("table.activity tbody tr td:nth-child(2)").all_inner_texts()
    assert kinds == ["todo done", "todo added", "notebook"], kinds
    tab.shoot("activity-claude-code")

    page.get_by_label("since").fill("banana")
    page.get_by_role("button", name="Filter").click()
    assert "is not a span" in page.locator("main").inner_text()
    tab.clean()
