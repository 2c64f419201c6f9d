"""Pins: the pins in force (`cli-org pins`, few by their caps) and the past ones (`pins
--all`), most recently unpinned first, a page at a time; each links to its fact. The same
data as /api/pins (pages/facts.py) and /api/pins/past."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from ....checks.rules import PIN_CAP_ORG, PIN_CAP_PROJECT
from ....store import pins as pins_lib
from ...render import plain
from ..state import web_of
from ..view import render

router = APIRouter()

PAGE_SIZE = 50  # past pins per page
Project = Annotated[str | None, Query(max_length=64, description="the org-wide pins and this project's")]
Page = Annotated[int, Query(ge=1, le=100_000)]


def _past(request: Request, project: str | None, page: int) -> tuple[list[Any], bool]:
    found = web_of(request).call(
        lambda conn: pins_lib.list_pins(
            conn, project=project or None, past=True, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE
        )
    )
    return found[:PAGE_SIZE], len(found) > PAGE_SIZE


@router.get("/pins", response_class=HTMLResponse, include_in_schema=False)
def pins_page(request: Request, project: Project = None, page: Page = 1) -> str:
    live = web_of(request).call(lambda conn: pins_lib.list_pins(conn, project=project or None))
    past, more = _past(request, project, page)
    return render(
        "pins.html",
        request,
        live=live,
        past=past,
        more=more,
        page=page,
        project=project or "",
        caps=(PIN_CAP_ORG, PIN_CAP_PROJECT),
    )


class PastPins(BaseModel):
    pins: list[pins_lib.Pin]
    page: int
    more: bool


@router.get("/api/pins/past", response_model=PastPins, responses={400: {"description": "refused input"}}, tags=["pins"])
def past_pins_api(request: Request, project: Project = None, page: Page = 1) -> Any:
    """Pins no longer in force (unpinned, or their fact retired), most recently unpinned
    first, 50 a page."""
    past, more = _past(request, project, page)
    return {"pins": plain(past), "page": page, "more": more}
