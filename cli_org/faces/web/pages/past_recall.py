"""One past recall as it was answered: its question, time, arms and the hits it returned,
read from what the recall stored (recall_hits, migration 0032). Nothing is asked again and
nothing is logged: a GET that only reads. The hits show only where row-level security lets
the serving identity read them (the recalling agent, its team lead, an owner); otherwise
the page says they are hidden. Linked from each agent's recent recalls."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse

from ....checks.rules import MAX_ID
from ....recall.past import PastRecall, past_recall
from ...render import plain
from ..state import web_of
from ..view import render

router = APIRouter()

EventId = Annotated[int, Path(ge=1, le=MAX_ID, description="the recall's id (recall_events)")]


def _read(request: Request, event_id: int) -> PastRecall:
    return web_of(request).call(lambda conn: past_recall(conn, event_id))


@router.get("/recall/{event_id}", response_class=HTMLResponse, include_in_schema=False)
def past_recall_page(request: Request, event_id: EventId) -> str:
    return render("past_recall.html", request, r=_read(request, event_id))


@router.get(
    "/api/recall/{event_id}",
    response_model=PastRecall,
    responses={404: {"description": "no such recall"}},
    tags=["recall"],
)
def past_recall_api(request: Request, event_id: EventId) -> Any:
    """A past recall as it was answered: question, time, agent, arms, counts and `shown`,
    its hits in order (arm, fact id, path, line, the line shown), or in `missing` why they
    are not (hidden from the serving identity, or logged before hits were kept). Reads
    only: nothing is asked again, nothing is logged."""
    return plain(_read(request, event_id))
