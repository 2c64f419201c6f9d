"""The Todos, Pins, Sessions, Vault and Proposals pages and an agent's notebook history in a real browser:
headless Chromium against `cli-org serve` (tests/browsing.py's server, data and
helpers), each page opened, checked and screenshotted under test-output/screens/; and a
second server acting as a member (`other`), whose page must not show another agent's
notebook history."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from cli_org.store import notebook as nb
from cli_org.store import pins, todos
from tests import browsing
from tests.browsing import HOSTILE, ROOT, Watched, _free_port, _wait_until_up
from tests.helpers import insert_proposal

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

# browsing.py's fixtures: its `cli-org serve --as boss` over a database with data on
# every page, the browser, and a logged-in tab.
site, browser, tab = browsing.site, browsing.browser, browsing.tab

NOTE = "The staging database is reset every Sunday."
LESSON = "In this repo use pnpm, never npm."


@pytest.fixture(scope="module")
def kept(site):
    """What agents keep, written as they write it: todos, a pin in force and a past one, and
    bot's notebook edited three times."""
    _, org, ids, _ = site
    with org.as_agent("bot") as conn:
        todos.add_todo(conn, "Rotate the deploy key", "shop")
        todos.add_todo(conn, f"Escape this: {HOSTILE}")
        nb.add(conn, "memory", NOTE + "\nBackups run nightly.")
        nb.replace(conn, "memory", "every Sunday", NOTE.replace("Sunday", "Monday") + "\nBackups run nightly.")
        nb.add(conn, "user", "Prefers short answers.")
    with org.as_agent("other") as conn:
        done = todos.add_todo(conn, "Check the billing exports")
        todos.done_todo(conn, done.id)
    with org.as_agent("boss") as conn:
        pins.pin(conn, ids["hostile"])
        pins.unpin(conn, ids["hostile"])
        pins.pin(conn, ids["freeze"])
    # Two lessons the import proposed from S1, bot's archived session (as the import writes them).
    with org.admin() as conn:
        (session,) = conn.execute("SELECT id FROM archive_sessions WHERE external_id = 'S1'").fetchone().values()
        for n, (claim, subject) in enumerate(((LESSON, "package manager"), (f"Say {HOSTILE} to no one.", "escaping"))):
            insert_proposal(conn, session, claim, key=f"u{n + 1}", project="shop" if n == 0 else None, subject=subject)
        conn.commit()
    yield ids
    with org.as_agent("boss") as conn:  # leave the module's database as the pin test expects
        pins.unpin(conn, ids["freeze"])


@contextmanager
def serving(org, tmp, agent: str) -> Iterator[tuple[str, str]]:
    """A second `cli-org serve --as AGENT` over the same database: (base URL, login address)."""
    port = _free_port()
    env = {**os.environ, **org.env, "ORG_ROOT": str(tmp)}
    env.pop("ORG_AGENT", None)
    log = tmp / f"serve-{agent}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli_org", "serve", "--port", str(port), "--as", agent],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        yield base, _wait_until_up(proc, base + "/facts", log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("path", "shown", "name"),
    [
        ("/todos?state=all", ["Rotate the deploy key", "Check the billing exports", HOSTILE], "todos"),
        ("/pins", ["In force", "Past pins", "deploy freeze", "unpinned"], "pins"),
        ("/sessions", ["S1", "claude-code"], "sessions"),
        ("/sessions?q=deploy+freeze", ["matching message", "S1"], "sessions-search"),
        ("/sessions/S1?harness=claude-code", ["tool call", "cli-org recall"], "session"),
        ("/vault", ["ops/freeze.md", "ops/oncall.md"], "vault"),
        ("/vault/ops/oncall.md", ["On call", "rota changes on Mondays"], "vault-note"),
        ("/agents/bot/notebook", ["reset every Monday", "replaced", "Prefers short answers."], "notebook-history"),
        ("/proposals", [LESSON, "package manager", "claude-code session S1", HOSTILE, "Edit and accept"], "proposals"),
    ],
)
def test_each_new_page_shows_what_agents_keep(tab, kept, path, shown, name):
    tab.open(path)
    text = tab.page.locator("main").inner_text()
    for words in shown:
        assert words in text, f"{path}: {words!r} not shown"
    assert "Traceback" not in tab.page.content()
    assert tab.page.locator("main script, main img").count() == 0  # hostile text stays text
    tab.shoot(f"people-{name}")
    tab.clean()


def test_links_between_the_new_pages(tab, kept):
    page = tab.page
    tab.open("/agents/bot")
    page.get_by_role("link", name="Every version of bot's notebook").click()
    page.wait_for_url("**/agents/bot/notebook")
    assert page.locator("li.version").count() == 3  # added, replaced; added
    assert page.locator("pre.diff .ddel").first.inner_text().startswith("- The staging database")
    tab.open("/pins")
    page.locator(f'a[href="/facts/{kept["freeze"]}"]').first.click()
    page.wait_for_url(f"**/facts/{kept['freeze']}")
    tab.open("/sessions")
    page.locator('a[href^="/sessions/S1"]').first.click()
    page.wait_for_url("**/sessions/S1*")
    assert "Fact #" in page.locator("main").inner_text()
    tab.clean()


def test_a_proposal_edited_and_accepted_in_the_browser_becomes_bots_fact(site, tab, kept):
    _, org, _, _ = site
    page = tab.page
    tab.open("/agents/bot")
    page.get_by_role("link", name="2", exact=True).click()  # the pending proposals' count
    page.wait_for_url("**/proposals?agent=bot")
    card = page.locator("li.proposal", has_text=LESSON)
    card.locator("summary", has_text="Edit and accept").click()
    card.get_by_label("claim of", exact=False).fill("The shop repo uses pnpm; npm is never used there.")
    tab.shoot("proposals-edit")
    card.get_by_role("button", name="Accept as edited").click()
    page.wait_for_url("**/proposals?agent=bot")
    assert LESSON not in page.locator("main").inner_text()
    tab.open("/proposals?state=accepted")
    accepted = page.locator("li.proposal.accepted")
    assert accepted.count() == 1 and "accepted\nas fact #" in accepted.inner_text()  # the proposal as it was
    accepted.get_by_role("link", name="fact #", exact=False).click()
    page.wait_for_url("**/facts/*")
    text = page.locator("main").inner_text()
    assert "The shop repo uses pnpm; npm is never used there." in text and "sessions/claude-code/S1/u1" in text
    tab.shoot("proposals-accepted-fact")
    tab.clean()


def test_a_member_does_not_see_another_agents_notebook_history(site, browser, kept, tmp_path):
    """Adversarial: the page served as `other`, a member who is neither bot's lead nor an owner."""
    _, org, _, _ = site
    with serving(org, tmp_path, "other") as (base, login):
        member = Watched(browser, base)
        try:
            member.login(login)
            member.open("/agents/bot/notebook")
            text = member.page.locator("main").inner_text()
            assert "Not shown" in text and "acts as other" in text
            assert "staging database" not in member.page.content() and "short answers" not in member.page.content()
            assert member.page.locator("li.version").count() == 0
            member.shoot("people-notebook-history-member")
            api = member.page.request.get(base + "/api/agents/bot/notebook").json()
            assert api["versions"] == [] and api["refused"]
            member.open("/agents/other/notebook")  # its own history it does see (empty: no edits)
            assert "Not shown" not in member.page.locator("main").inner_text()
            member.open("/todos?state=all")  # todos and pins are the org's: a member reads them
            assert "Rotate the deploy key" in member.page.locator("main").inner_text()
            member.clean()
        finally:
            member.close()
