"""benchmarks/RESULTS.md stays one page of current figures, each traceable to a command and a
date, and the journal beside it keeps its links whole."""

import re
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
RESULTS = BENCHMARKS / "RESULTS.md"
JOURNAL = BENCHMARKS / "JOURNAL.md"
MAX_LINES = 500  # one page: the history goes to the journal

# A command as the page writes it: inline or fenced code that runs something.
COMMAND = re.compile(r"`(?:[A-Z_]+=\S+ )*(?:python|cli-org|bash|pytest)\b[^`]*`|```")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _sections(text: str) -> dict[str, str]:
    """Each `## ` section's heading and its text, subsections included."""
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return {p.split("\n", 1)[0]: p for p in parts}


def test_results_is_one_page():
    lines = RESULTS.read_text().count("\n")
    assert lines <= MAX_LINES, f"RESULTS.md has {lines} lines; move history to JOURNAL.md"


def test_every_figure_section_has_a_command_and_a_date():
    sections = _sections(RESULTS.read_text())
    assert len(sections) >= 10
    for heading, text in sections.items():
        assert COMMAND.search(text), f"section {heading!r} names no command"
        assert DATE.search(text), f"section {heading!r} gives no date (YYYY-MM-DD)"


def test_journal_entries_are_dated_and_in_order():
    headings = re.findall(r"^## (.*)$", JOURNAL.read_text(), flags=re.M)
    dates = [DATE.match(h) for h in headings]
    assert headings and all(dates), [h for h, d in zip(headings, dates, strict=True) if not d]
    found = [d.group() for d in dates if d]
    assert found == sorted(found)


@pytest.mark.parametrize("page", [RESULTS, JOURNAL], ids=lambda p: p.name)
def test_relative_links_resolve(page: Path):
    targets = [t.split("#", 1)[0] for t in LINK.findall(page.read_text())]
    local = [t for t in targets if t and not re.match(r"[a-z]+:", t)]
    assert local, f"{page.name} links to nothing here"
    missing = [t for t in local if not (page.parent / t).exists()]
    assert not missing, f"{page.name} links to missing files: {missing}"
