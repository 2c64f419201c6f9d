"""Issue 26 in the browser (the fixtures and helpers of tests/browsing.py: a real
`cli-org serve --as boss`, Debian's Chromium): the Evaluation page with two golden sets,
each its own trend with dates on its axis; a run compared with the previous of its set; the
Facts page's store summary; tidy's proposals applied from the page. Screenshots go where the
other browser test puts them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from cli_org.evaluation import CaseResult, GoldenRun, figures, save_run
from cli_org.store.facts import remember
from tests import browsing

browser, site, tab = browsing.browser, browsing.site, browsing.tab  # the fixtures (tests/browsing.py)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


def _save(org, name: str, golden: str, positions: list, days_ago: float) -> None:
    cases = [CaseResult(f"question {i}", f"answer {i}", "t", p, 900 + 100 * i, 8.0) for i, p in enumerate(positions)]
    with org.as_agent("boss") as conn:
        save_run(conn, name, GoldenRun(8, figures(cases), {}, cases), golden_file=golden, project=None)
    with org.admin() as conn:
        conn.execute(
            "UPDATE eval_runs SET created_at = now() - make_interval(secs => %s) WHERE name = %s",
            (days_ago * 86400, name),
        )
        conn.commit()


def test_the_evaluation_page_draws_a_dated_trend_per_golden_set(site, tab):  # noqa: F811
    _, org, _, _ = site
    for name, golden, positions, days in (
        ("faq-1", "eval/faq.txt", [1, None, 3, None], 20),
        ("ops-1", "eval/ops.txt", [2, 2, None], 14),
        ("faq-2", "eval/faq.txt", [1, 1, 2, None], 9),
        ("ops-2", "eval/ops.txt", [1, None, None], 5),
        ("faq-3", "eval/faq.txt", [1, 1, 1, 2], 2),
    ):
        _save(org, name, golden, positions, days)
    tab.open("/evaluation")
    page = tab.page
    heads = [h.strip() for h in page.locator("h3.trend").all_inner_texts()]
    # the module's own run (saved as it loaded, the newest) is a set of its own, drawn first
    faq = next(i for i, h in enumerate(heads) if h.startswith("eval/faq.txt · k=8 · 3 runs"))
    ops = next(i for i, h in enumerate(heads) if h.startswith("eval/ops.txt · k=8 · 2 runs"))
    assert faq < ops  # the set with the newer run first
    charts = page.locator("svg.chart")
    assert charts.count() == 2 * len(heads)
    faq_axis = [
        t for t in charts.nth(2 * faq).locator("text").all_text_contents() if re.fullmatch(r"\d{4}-\d\d-\d\d", t)
    ]
    expected = [(datetime.now(UTC) - timedelta(days=d)).strftime("%Y-%m-%d") for d in (20, 9, 2)]
    assert faq_axis == expected
    ops_axis = [
        t for t in charts.nth(2 * ops).locator("text").all_text_contents() if re.fullmatch(r"\d{4}-\d\d-\d\d", t)
    ]
    assert ops_axis == [(datetime.now(UTC) - timedelta(days=d)).strftime("%Y-%m-%d") for d in (14, 5)]
    tab.shoot("evalfix-evaluation")

    # the table's "vs previous" of ops-2 compares with ops-1, not with faq-2 saved between them
    row = page.locator("table.runs tr", has_text="boss/ops-2")
    with page.expect_navigation(wait_until="load"):
        row.get_by_role("link", name="vs previous").click()
    assert "boss/ops-1" in page.locator("h1").inner_text() and "boss/ops-2" in page.locator("h1").inner_text()
    tab.open("/evaluation/runs/boss/faq-3")
    text = page.locator("main").inner_text()
    assert "Compared with boss/faq-2" in text and "a clear win: hit@8 rose from 0.750 to 1.000" in text
    tab.shoot("evalfix-run-vs-previous")
    tab.clean()


def test_the_facts_page_summary_and_tidy_from_the_page(site, tab):  # noqa: F811
    _, org, _, _ = site
    with org.as_agent("bot") as conn:
        older = remember(conn, "release", "Releases are cut on Thursday mornings", source="#rel-1").id
        kept = remember(
            conn, "release", "Releases are cut on Thursday mornings.", source="#rel-2", allow_duplicate=True
        ).id
    with org.admin() as conn:
        current = conn.execute("SELECT count(*) AS n FROM memory_facts WHERE valid_to IS NULL").fetchone()["n"]
    tab.open("/facts")
    page = tab.page
    panel = page.locator('section[aria-label="store summary"]').inner_text()
    assert f"{current} current" in panel and "1 superseded" in panel and "1 near-duplicates" in panel
    assert "per author: bot" in panel
    tab.shoot("evalfix-facts-summary")

    page.get_by_role("link", name="tidy…").click()
    page.wait_for_url("**/facts/tidy")
    assert page.locator(f'input[name="fact"][value="{older}"]').is_checked()
    tab.shoot("evalfix-tidy")
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("button", name="Apply the ticked proposals").click()
    assert "change made" in page.locator("p.notice").inner_text()
    tab.shoot("evalfix-tidy-done")
    with org.admin() as conn:
        row = conn.execute("SELECT retired_by, superseded_by FROM memory_facts WHERE id = %s", (older,)).fetchone()
    assert row["retired_by"] == "boss" and row["superseded_by"] is None  # boss wrote neither: forgotten, naming #kept
    assert kept
    tab.open("/facts")
    assert "0 near-duplicates" in page.locator('section[aria-label="store summary"]').inner_text()
    tab.clean()
