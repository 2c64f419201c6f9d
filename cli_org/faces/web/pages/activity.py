"""Activity: what changed, newest first (facts written, superseded, retired and restored,
pins, notebook edits, todos; recall and tool calls on request), by agent and by harness, as
the serving identity may see it (cli_org/store/activity.py: row-level security decides)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from ....store import activity as activity_lib
from ...render import plain
from ..state import web_of
from ..view import render

router = APIRouter()

PAGE_SIZE = activity_lib.DEFAULT_LIMIT
Short = Annotated[str | None, Query(max_length=200)]


@dataclass(frozen=True)
class ActivityQuery:
    since: str
    agent: str | None
    via: str | None
    kind: str | None
    before: str | None


def activity_query(
    since: Short = None, agent: Short = None, via: Short = None, kind: Short = None, before: Short = None
) -> ActivityQuery:
    """The query parameters the Activity page and /api/activity share (one dependency)."""
    return ActivityQuery(
        (since or "").strip() or activity_lib.DEFAULT_SINCE,
        (agent or "").strip() or None,
        (via or "").strip() or None,
        (kind or "").strip() or None,
        before or None,
    )


def _feed(request: Request, q: ActivityQuery) -> activity_lib.Activity:
    moment = activity_lib.parse_since(q.since)
    kinds = activity_lib.parse_kinds([q.kind] if q.kind else None)
    return web_of(request).call(
        lambda conn: activity_lib.feed(
            conn, since=moment, agent=q.agent, via=q.via, kinds=kinds, before=q.before, limit=PAGE_SIZE
        )
    )


@router.get("/activity", response_class=HTMLResponse, include_in_schema=False)
def activity_page(request: Request, q: Annotated[ActivityQuery, Depends(activity_query)]) -> str:
    result = _feed(request, q)
    return render(
        "activity.html",
        request,
        result=result,
        q=q,
        kinds=activity_lib.KINDS,
        groups=[g for g in activity_lib.GROUPS if g != "writes"],
    )


@router.get(
    "/api/activity",
    response_model=activity_lib.Activity,
    responses={400: {"description": "refused input (one line in `error`): a bad span, name, kind or cursor"}},
    tags=["activity"],
)
def activity_api(request: Request, q: Annotated[ActivityQuery, Depends(activity_query)]) -> Any:
    """What changed since `since` (a span, 1d by default; a date; or `all`), newest first, a
    page of 50: by `agent`, through `via` (a harness name or RUNTIME@HOST), of `kind` (a
    kind or a group; every write by default). `next` is the cursor of the next page: pass it
    as `before`. Only what the serving identity may read shows."""
    return plain(_feed(request, q))
