"""The web page in a real browser: headless Chromium (Debian's, driven by Playwright) against
a real `cli-org serve` process on a test database with data on every page.

It opens every page of the navigation (cli_org/faces/web/view.py PAGES), asks a question in the
recall box, follows a fact to its history, pins and unpins from the page (then reads the
database), and saves a screenshot of each page under test-output/screens/ (or
$CLI_ORG_SCREENS). A page named in PAGES but not yet served by any router in
cli_org/faces/web/pages is skipped, saying so; every served page is tested.

No browser is downloaded: the test launches /usr/bin/chromium (or $CLI_ORG_CHROMIUM). Without
it the test is skipped, saying why, except under CI=true, where a missing browser fails.
"""

from __future__ import annotations

import pytest

from cli_org.faces.web.view import PAGES
from tests import browsing
from tests.browsing import (  # noqa: F401
    ANSWER,
    CHROMIUM,
    CHROMIUM_FLAGS,
    HOSTILE,
    QUESTION,
    ROOT,
    Watched,
    _browser_or_skip,
    _claude_line,
    _free_port,
    _load,
    _needs_a_page,
    _shot_name,
    _wait_until_up,
    screens_dir,
    served_paths,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

browser, site, tab = browsing.browser, browsing.site, browsing.tab  # the fixtures (tests/browsing.py)


# --- the data: facts, a small vault, a saved evaluation run, an archived session ----------


# --- a real server ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", [path for path, _ in PAGES], ids=[_shot_name(p) for p, _ in PAGES])
def test_every_page_opens_with_its_data_and_is_screenshotted(tab, path):
    _needs_a_page(path)
    tab.open(path)
    title = dict(PAGES)[path]
    page = tab.page
    assert title in page.title()
    # The navigation names every page, and marks this one.
    nav = page.locator("nav").first
    for _, name in PAGES:
        assert nav.get_by_text(name, exact=True).count() >= 1, f"{path}: the navigation lacks {name}"
    assert nav.locator('[aria-current="page"]').inner_text().strip() == title
    assert "Traceback" not in page.content() and "Internal Server Error" not in page.content()
    assert page.locator("main").inner_text().strip(), f"{path}: an empty page"
    tab.shoot(_shot_name(path))
    tab.clean()


def test_the_facts_page_shows_hostile_text_as_text(site, tab):
    _, _, ids, _ = site
    tab.open("/facts")
    row = tab.page.locator(f'a[href="/facts/{ids["hostile"]}"]').first
    assert row.count() == 1
    assert HOSTILE in tab.page.locator("main").inner_text()  # shown, as the characters it is
    tab.open(f"/facts/{ids['hostile']}")
    assert HOSTILE in tab.page.locator("blockquote").inner_text()
    assert tab.page.locator("main img, main script").count() == 0
    tab.clean()


def test_follow_a_fact_to_its_history_then_pin_and_unpin_it(site, tab):
    _, org, ids, _ = site
    fid = ids["freeze"]
    page = tab.page
    tab.open("/facts")
    page.locator(f'a[href="/facts/{fid}"]').first.click()
    page.wait_for_url(f"**/facts/{fid}")
    assert page.get_by_role("heading", name="History").count() == 1
    assert "written" in page.locator("ol.events").inner_text()
    tab.shoot("fact")

    page.get_by_role("button", name="Pin", exact=True).click()
    page.wait_for_url(f"**/facts/{fid}")
    assert "org-wide: pinned by boss" in page.locator("ul.pins").inner_text()
    with org.admin() as conn:
        rows = conn.execute("SELECT pinned_by, unpinned_by FROM memory_pins WHERE fact_id = %s", (fid,)).fetchall()
    assert rows == [{"pinned_by": "boss", "unpinned_by": None}]
    tab.shoot("fact-pinned")

    page.get_by_role("button", name="Unpin", exact=True).click()
    page.wait_for_url(f"**/facts/{fid}")
    assert "unpinned by boss" in page.locator("ul.pins").inner_text()
    with org.admin() as conn:
        rows = conn.execute("SELECT pinned_by, unpinned_by FROM memory_pins WHERE fact_id = %s", (fid,)).fetchall()
    assert rows == [{"pinned_by": "boss", "unpinned_by": "boss"}]
    assert page.get_by_role("button", name="Pin", exact=True).count() == 1
    tab.clean()


def test_ask_a_question_in_the_recall_box(tab):
    _needs_a_page("/recall")
    page = tab.page
    tab.open("/recall")
    # The question box: the page's first visible text field outside a write form.
    box = page.locator(
        'main form.ask input:not([type="hidden"]):not([type="checkbox"]):not([type="radio"]), main form.ask textarea'
    ).first
    box.fill(QUESTION)
    with page.expect_navigation(wait_until="load"):
        box.press("Enter")
    assert ANSWER in page.locator("main").inner_text()
    tab.shoot("recall-answered")
    tab.clean()


def test_the_printed_address_logs_in_and_only_it(site, browser):
    """Issue 21: the page needs the token on loopback too. A browser without it is refused;
    the address `cli-org serve` printed logs it in and lands on a clean address."""
    base, _, _, login = site
    stranger = Watched(browser, base)
    try:
        refused = stranger.page.goto("/facts", wait_until="load")
        assert refused is not None and refused.status == 401
        assert "cli-org serve" in stranger.page.locator("main").inner_text()
        stranger.login(login)
        cookies = stranger.context.cookies(base)
        assert [(c["httpOnly"], c["sameSite"]) for c in cookies] == [(True, "Strict")]
        assert "token" not in stranger.page.url
        stranger.shoot("login-landing")
        stranger.clean()
    finally:
        stranger.close()
