"""Usage: adoption over time per harness and per agent, recall calls per session and agent,
characters per recall, and the hits later quoted per arm. Everything comes from
one library call, `usage_detail()` (cli_org/archive/usage.py); the rule for "quoted" lives
in cli_org/archive/quoted.py."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from ....archive.usage import DEFAULT_DAYS, MAX_DAYS, UsageDetail, usage_detail
from ...render import plain
from ..state import web_of
from ..svg import Series, line_chart
from ..view import render

router = APIRouter()

Days = Annotated[int, Query(ge=1, le=MAX_DAYS, description="the window, in days")]
Bucket = Annotated[Literal["day", "week"], Query(description="adoption over time per day or per week (UTC)")]
SESSIONS_SHOWN = 100  # rows of the per-session table on the page; the API gives them all
AGENT_SERIES = 6  # agents drawn in the chart (the most active); the table lists every one


def _detail(request: Request, days: int, by: str) -> UsageDetail:
    return web_of(request).call(lambda conn: usage_detail(conn, days, by))


def _periods(found: UsageDetail, by: str) -> list[date]:
    """Every day or week from the first one with data to the last, gaps included, so the
    chart's x axis is time and not just the periods that had sessions. It ends today: a
    transcript may claim any date, and one from year 9999 must not draw thousands of years
    (its session is still counted in the tables)."""
    today = datetime.now(UTC).date()
    seen = [p.period for p in found.over_time] + [p.period for p in found.agents_over_time]
    seen = [p for p in seen if p <= today]
    if not seen:
        return []
    step = timedelta(days=7 if by == "week" else 1)
    first, last = min(seen), max(seen)
    out = []
    while first <= last:
        out.append(first)
        first += step
    return out


def _charts(found: UsageDetail, by: str) -> tuple[Any, Any]:
    periods = _periods(found, by)
    labels = [f"{p:%m-%d}" for p in periods]
    at = {p: i for i, p in enumerate(periods)}
    series: list[Series] = []
    total: list[float | None] = [0.0] * len(periods)
    for harness in sorted({p.harness for p in found.over_time}):
        values: list[float | None] = [0.0] * len(periods)
        for p in found.over_time:
            if p.harness == harness and p.period in at:
                values[at[p.period]] = p.sessions_using
                total[at[p.period]] = (total[at[p.period]] or 0) + p.sessions
        series.append(Series(f"{harness} using", values))
    if series:
        series.insert(0, Series("sessions archived", total))
    adoption = line_chart(labels, series, title=f"Sessions per {by}: archived, and those that recalled or remembered")
    busiest = [a.agent for a in sorted(found.agents, key=lambda a: (-a.recalls, a.agent))[:AGENT_SERIES]]
    agent_series = []
    for agent in busiest:
        values = [0.0] * len(periods)
        for point in found.agents_over_time:
            if point.agent == agent and point.period in at:
                values[at[point.period]] = point.recalls
        agent_series.append(Series(agent, list(values)))
    agents = line_chart(labels, agent_series, title=f"Recalls per {by} and agent (cli-org's own log)")
    return adoption, agents


@router.get("/usage", response_class=HTMLResponse, include_in_schema=False)
def usage_page(request: Request, days: Days = DEFAULT_DAYS, by: Bucket = "day") -> str:
    found = _detail(request, days, by)
    adoption, agents = _charts(found, by)
    return render(
        "usage.html",
        request,
        u=found,
        days=days,
        by=by,
        adoption_chart=adoption,
        agents_chart=agents,
        sessions=found.sessions[:SESSIONS_SHOWN],
        more_sessions=max(0, len(found.sessions) - SESSIONS_SHOWN),
    )


# --- the same as JSON ---------------------------------------------------------------------


@router.get("/api/usage", response_model=UsageDetail, tags=["usage"])
def usage_api(request: Request, days: Days = DEFAULT_DAYS, by: Bucket = "day") -> Any:
    """Adoption per harness (archived sessions) over the window and per day or week; per
    agent from cli-org's own log (recalls, remembers, characters per recall); every session
    that recalled or remembered; and, per arm, the hits later quoted (the rule: docs/agents.md,
    "Usage over time, per agent and per session; hits later quoted")."""
    return plain(_detail(request, days, by))
