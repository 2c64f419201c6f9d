"""Evaluation: the golden-set runs saved with `eval golden --save` over time (charts and a
table), one run's cases, and two runs compared (`eval compare`), with the same as JSON."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from ....evaluation import (
    Comparison,
    HistoryRow,
    SavedRun,
    Trend,
    VersusPrevious,
    compare,
    compare_with_previous,
    load_run,
    run_history,
    trends,
)
from ....evaluation.compare import format_delta, format_value
from ...render import plain
from ..state import web_of
from ..svg import Series, date_labels, line_chart
from ..view import render

router = APIRouter()

CHART_WIDTH = 552  # two charts side by side in the page's 1,180 px column, drawn at their own size
# Run names under a chart: 16 characters of 11 px text need about 100 px, and the last is
# pulled inside the frame, so four fit 552 px without touching (seen at 100 runs).
CHART_LABELS = 4
# Golden sets drawn (those with the newest runs first): two charts each; the table below
# lists every run of the page whatever its set.
TRENDS_SHOWN = 6
HISTORY_PAGE = 100  # runs per page of the history: one chart point each, one query per page
# A run is named NAME or AUTHOR/NAME: a run's name has at most 64 characters (migration
# 0005), an agent's at most 32 (migration 0001); anything longer names no run. In a path,
# AUTHOR/NAME is two segments (/runs/{author}/{name}), so the schema's paths are the routes'.
RunName = Annotated[str, Path(min_length=1, max_length=64, description="the run's name")]
Author = Annotated[str, Path(min_length=1, max_length=32, description="the agent who saved the run")]
RunParam = Annotated[str, Query(min_length=1, max_length=97, description="a run: NAME or AUTHOR/NAME")]
Page = Annotated[int, Query(ge=1, le=100_000)]
Show = Literal["all", "miss", "hit"]


def _history(request: Request, page: int) -> tuple[list[Any], bool]:
    """One page of saved runs (the newest first page), oldest first, and whether older ones exist."""
    found = web_of(request).call(
        lambda conn: run_history(conn, limit=HISTORY_PAGE + 1, offset=(page - 1) * HISTORY_PAGE)
    )
    more = len(found) > HISTORY_PAGE
    return (found[1:] if more else found), more


def _charts(trend: Trend) -> tuple[Any, Any]:
    """One golden set's two charts, a point per run, the x axis labelled with the runs' dates
    and each point's tooltip with the run's name."""
    good = [(r, r.overall) for r in trend.runs if r.overall]
    figures = [f for _, f in good]
    labels = date_labels([r.created_at for r, _ in good])
    tips = [f"{r.name}, {r.created_at:%Y-%m-%d %H:%M}" for r, _ in good]
    quality = line_chart(
        labels,
        [Series(f"hit@{trend.k}", [f.hit_rate for f in figures]), Series("MRR", [f.mrr for f in figures])],
        title=f"hit@{trend.k} and MRR per saved run of {trend.golden_file}",
        top=1.0,
        width=CHART_WIDTH,
        max_labels=CHART_LABELS,
        tips=tips,
    )
    size = line_chart(
        labels,
        [
            Series("median characters", [f.chars_median for f in figures]),
            Series("p95 characters", [f.chars_p95 for f in figures]),
        ],
        title=f"characters per answer per saved run of {trend.golden_file} at k={trend.k}",
        width=CHART_WIDTH,
        max_labels=CHART_LABELS,
        tips=tips,
    )
    return quality, size


@router.get("/evaluation", response_class=HTMLResponse, include_in_schema=False)
def evaluation_page(request: Request, page: Page = 1) -> str:
    runs, more = _history(request, page)
    sets = trends(runs)
    drawn = [(t, *_charts(t)) for t in sets[:TRENDS_SHOWN]]
    names = [r.name for r in runs]
    return render(
        "evaluation.html",
        request,
        runs=runs,
        newest=list(reversed(runs)),
        names=list(reversed(names)),
        more=more,
        page=page,
        drawn=drawn,
        undrawn=len(sets) - len(drawn),
    )


def _cases(run: Any, show: Show) -> list[tuple[int, Any]]:
    """The run's cases numbered as written; misses first (then by rank), or only one kind."""
    numbered = list(enumerate(run.cases, 1))
    if show == "miss":
        return [(i, c) for i, c in numbered if not c.position]
    if show == "hit":
        return [(i, c) for i, c in numbered if c.position]
    return sorted(numbered, key=lambda ic: (ic[1].position is not None, ic[1].position or 0, ic[0]))


def _run_page(request: Request, name: str, show: Show) -> str:
    def both(conn: Any) -> tuple[SavedRun, VersusPrevious]:
        return load_run(conn, name), compare_with_previous(conn, name)

    run, versus = web_of(request).call(both)
    misses = sum(1 for c in run.cases if not c.position)
    return render(
        "eval_run.html",
        request,
        run=run,
        cases=_cases(run, show),
        show=show,
        misses=misses,
        versus=versus,
        value=format_value,
        delta=format_delta,
    )


@router.get("/evaluation/runs/{name}", response_class=HTMLResponse, include_in_schema=False)
def run_page(request: Request, name: RunName, show: Show = "all") -> str:
    return _run_page(request, name, show)


@router.get("/evaluation/runs/{author}/{name}", response_class=HTMLResponse, include_in_schema=False)
def authors_run_page(request: Request, author: Author, name: RunName, show: Show = "all") -> str:
    return _run_page(request, f"{author}/{name}", show)


def _compared(request: Request, a: str, b: str) -> Any:
    return web_of(request).call(lambda conn: compare(load_run(conn, a), load_run(conn, b)))


@router.get("/evaluation/compare", response_class=HTMLResponse, include_in_schema=False)
def compare_page(request: Request, a: RunParam, b: RunParam) -> str:
    result = _compared(request, a, b)
    return render(
        "eval_compare.html", request, result=result, value=format_value, delta=format_delta, same=result.a == result.b
    )


# --- the same as JSON ---------------------------------------------------------------------


class RunPage(BaseModel):  # a page of the history: the runs plus the page and whether more follow
    runs: list[HistoryRow]
    page: int
    more: bool


Refusals: dict[int | str, dict[str, Any]] = {
    400: {"description": "several agents saved a run of that name (name it AUTHOR/NAME), or a malformed run"},
    404: {"description": "no saved run of that name"},
}


@router.get("/api/eval/runs", response_model=RunPage, tags=["evaluation"])
def runs_api(request: Request, page: Page = 1) -> Any:
    """Saved golden-set runs, oldest first within a page; page 1 holds the newest 100."""
    runs, more = _history(request, page)
    return {"runs": plain(runs), "page": page, "more": more}


@router.get("/api/eval/runs/{name}", response_model=SavedRun, responses=Refusals, tags=["evaluation"])
def run_api(request: Request, name: RunName) -> Any:
    """One saved run with every case: yours of that name, else the only run so named."""
    return plain(web_of(request).call(lambda conn: load_run(conn, name)))


@router.get("/api/eval/runs/{author}/{name}", response_model=SavedRun, responses=Refusals, tags=["evaluation"])
def authors_run_api(request: Request, author: Author, name: RunName) -> Any:
    """One saved run with every case, named by the agent who saved it and its name."""
    return plain(web_of(request).call(lambda conn: load_run(conn, f"{author}/{name}")))


@router.get("/api/eval/previous", response_model=VersusPrevious, responses=Refusals, tags=["evaluation"])
def previous_api(request: Request, run: RunParam) -> Any:
    """A run compared with the run of the same golden file and k saved just before it:
    per-metric deltas and the cases that changed (`comparison` is null for a set's first run)."""
    return plain(web_of(request).call(lambda conn: compare_with_previous(conn, run)))


@router.get("/api/eval/compare", response_model=Comparison, responses=Refusals, tags=["evaluation"])
def compare_api(request: Request, a: RunParam, b: RunParam) -> Any:
    """Two saved runs: per-metric deltas and direction, the verdict, the cases whose rank moved."""
    return plain(_compared(request, a, b))
