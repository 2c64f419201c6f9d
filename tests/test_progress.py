"""The progress line of long work: counts, and the time left once it means something."""

import pytest

from cli_org.faces.cli.common import ESTIMATE_AFTER_SECONDS, PLAIN_EVERY_SECONDS, Progress, remaining


@pytest.mark.parametrize(
    ("done", "total", "elapsed", "expected"),
    [
        (100, 1000, 10.0, ", about 1 min 30 s left"),  # 10 chunks/s, 900 to go
        (500, 1000, 20.0, ", about 20 s left"),
        (1, 10_000, 4.0, ", about 11 h 6 min left"),
        (999, 1000, 999.0, ", about 1 s left"),
        (10, 1000, ESTIMATE_AFTER_SECONDS - 0.1, ""),  # too early: loading dominates the rate
        (0, 1000, 60.0, ""),  # nothing done yet: no rate
        (1000, 1000, 60.0, ""),  # finished
        (1200, 1000, 60.0, ""),  # more than announced (chunks added meanwhile): no negative time
        (5, 0, 60.0, ""),
    ],
)
def test_time_left(done, total, elapsed, expected):
    assert remaining(done, total, elapsed) == expected


def test_progress_line_shows_the_time_left(capsys):
    progress = Progress("embed")
    progress.terminal = True
    progress.started -= 30  # 30 s in
    progress(300, 1200, "chunks")
    line = capsys.readouterr().err
    assert line.endswith("embed: 300/1200 chunks, about 1 min 30 s left")
    progress.done()
    assert capsys.readouterr().err.startswith("\r")  # click drops the erase code off a terminal


def test_short_work_prints_nothing_off_a_terminal(capsys):
    progress = Progress("embed")
    progress.terminal = False
    progress(1, 2, "chunks")
    progress(2, 2, "chunks")
    progress.done()
    assert capsys.readouterr().err == ""


def test_long_work_prints_plain_lines_off_a_terminal(capsys):
    """In a log or a pipe, work that runs for minutes says how far it got every
    PLAIN_EVERY_SECONDS, in plain lines (no carriage return, no erase code)."""
    progress = Progress("embed")
    progress.terminal = False
    progress.started -= 30  # 30 s in, nothing printed yet
    progress(300, 1200, "chunks")
    progress(301, 1200, "chunks")  # within the interval: nothing more
    progress.last -= PLAIN_EVERY_SECONDS
    progress(600, 1200, "")
    progress.done()
    assert capsys.readouterr().err.splitlines(keepends=True) == [
        "embed: 300/1200 chunks, about 1 min 30 s left\n",
        "embed: 600/1200, about 30 s left\n",
    ]
