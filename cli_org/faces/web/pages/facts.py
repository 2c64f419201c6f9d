"""Facts: the list (current by default; filters; text search), one fact's whole history
with how often recalls returned it and archived sessions later quoted it, and the writes a
person makes from the page (forget, restore, pin, unpin)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, Field

from ....checks.rules import KINDS, MAX_ID
from ....recall.past import FactRecalls, fact_recalls
from ....store import facts as facts_lib
from ....store import pins as pins_lib
from ....store.facts import Event, Fact
from ....store.pins import Pin
from ...render import plain
from ..guard import check_form
from ..state import web_of
from ..view import render

router = APIRouter()

PAGE_SIZE = 100  # facts per page: the list stays one screenful of queries at 10,000 facts
Text = Annotated[str | None, Query(max_length=200)]
FactId = Annotated[int, Path(ge=1, le=MAX_ID, description="the fact's id")]


@dataclass(frozen=True)
class FactQuery:
    """The list's query: the filters (as `list_facts` takes them), retired too, the page."""

    filters: dict
    all: bool
    page: int


def fact_query(
    subject: Text = None,
    project: Text = None,
    author: Text = None,
    kind: Text = None,
    q: Text = None,
    all: bool = False,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> FactQuery:
    """The query parameters the Facts page and /api/facts share (one dependency)."""
    filters = {"subject": subject, "project": project, "author": author, "kind": kind, "text": q}
    return FactQuery({k: v or None for k, v in filters.items()}, all, page)


def _page_of(request: Request, query: FactQuery) -> tuple[list, bool]:
    """One page of facts, newest first, and whether another page follows."""
    found = web_of(request).read(
        lambda conn: facts_lib.list_facts(
            conn,
            include_retired=query.all,
            newest_first=True,
            limit=PAGE_SIZE + 1,
            offset=(query.page - 1) * PAGE_SIZE,
            **query.filters,
        )
    )
    return found[:PAGE_SIZE], len(found) > PAGE_SIZE


def _pins_by_fact(request: Request) -> dict[int, list]:
    pinned: dict[int, list] = {}
    for p in web_of(request).read(lambda conn: pins_lib.list_pins(conn, include_unpinned=True)):
        pinned.setdefault(p.fact_id, []).append(p)
    return pinned


@router.get("/facts", response_class=HTMLResponse, include_in_schema=False)
def facts_page(request: Request, query: Annotated[FactQuery, Depends(fact_query)]) -> str:
    found, more = _page_of(request, query)
    pinned = {fid for fid, ps in _pins_by_fact(request).items() if any(p.unpinned_at is None for p in ps)}
    filters, all, page = query.filters, query.all, query.page
    return render(
        "facts.html", request, facts=found, more=more, page=page, filters=filters, all=all, kinds=KINDS, pinned=pinned
    )


def _record(request: Request, fact_id: int) -> tuple[facts_lib.FactRecord, FactRecalls]:
    """The fact's history and its recall counts, on one connection (two library calls)."""
    return web_of(request).read(lambda conn: (facts_lib.show_fact(conn, fact_id), fact_recalls(conn, fact_id)))


@router.get("/facts/{fact_id}", response_class=HTMLResponse, include_in_schema=False)
def fact_page(request: Request, fact_id: FactId) -> str:
    record, recalls = _record(request, fact_id)
    pins = _pins_by_fact(request).get(fact_id, [])
    return render("fact.html", request, record=record, fact=record.fact, pins=pins, recalls=recalls)


async def _form_then(request: Request, fact_id: FactId, act) -> RedirectResponse:
    """Check the form's CSRF token, run the write as the serving identity, go back to the fact."""
    from starlette.concurrency import run_in_threadpool

    web = web_of(request)
    fields = await check_form(request, web)
    await run_in_threadpool(web.write, lambda conn: act(conn, fields))
    return RedirectResponse(f"/facts/{fact_id}", status_code=303)


def _why(fields: dict[str, str]) -> str:
    return fields.get("why", "").strip()


@router.post("/facts/{fact_id}/forget", include_in_schema=False)
async def forget_form(request: Request, fact_id: FactId) -> RedirectResponse:
    return await _form_then(request, fact_id, lambda conn, f: facts_lib.forget(conn, fact_id, _why(f)))


@router.post("/facts/{fact_id}/restore", include_in_schema=False)
async def restore_form(request: Request, fact_id: FactId) -> RedirectResponse:
    return await _form_then(request, fact_id, lambda conn, f: facts_lib.restore(conn, fact_id, _why(f)))


@router.post("/facts/{fact_id}/pin", include_in_schema=False)
async def pin_form(request: Request, fact_id: FactId) -> RedirectResponse:
    return await _form_then(
        request, fact_id, lambda conn, f: pins_lib.pin(conn, fact_id, f.get("project", "").strip() or None)
    )


@router.post("/facts/{fact_id}/unpin", include_in_schema=False)
async def unpin_form(request: Request, fact_id: FactId) -> RedirectResponse:
    return await _form_then(request, fact_id, lambda conn, f: pins_lib.unpin(conn, fact_id))


# --- the same as JSON ---------------------------------------------------------------------


class FactPage(BaseModel):
    facts: list[Fact]
    page: int
    more: bool


class FactHistory(BaseModel):
    fact: Fact
    events: list[Event]
    older: list[Fact]
    newer: list[Fact]
    chain: list[int]
    pins: list[Pin]
    recalls: FactRecalls


class Why(BaseModel):
    why: str = Field(max_length=1000, description="why it is retired or restored (required)")


class PinIn(BaseModel):
    project: str | None = Field(default=None, max_length=200, description="pin within this project; none: org-wide")


Refusals: dict[int | str, dict[str, Any]] = {
    400: {"description": "refused input (one line in `error`)"},
    403: {"description": "the serving identity may not do this"},
    404: {"description": "no such fact"},
}
# A write also refuses a body that is not JSON (guard.py: a cross-site form cannot send JSON),
# including none at all: send `Content-Type: application/json` (an empty body is fine).
WriteRefusals: dict[int | str, dict[str, Any]] = {
    **Refusals,
    415: {"description": "the request is not `Content-Type: application/json`"},
}


@router.get("/api/facts", response_model=FactPage, responses={400: Refusals[400]}, tags=["facts"])
def facts_api(request: Request, query: Annotated[FactQuery, Depends(fact_query)]) -> Any:
    """Facts, newest first, a page of 100 at a time: current ones unless `all`."""
    found, more = _page_of(request, query)
    return {"facts": plain(found), "page": query.page, "more": more}


@router.get("/api/facts/{fact_id}", response_model=FactHistory, responses=Refusals, tags=["facts"])
def fact_api(request: Request, fact_id: FactId) -> Any:
    """One fact, what happened to it, its supersession chain both ways, its pins, and
    `recalls`: how often it was a recall hit (in the recalls the serving identity may read),
    to how many agents, the last time, and of the archived sessions' recalls that returned it
    and were judged, how many later quoted it."""
    record, recalls = _record(request, fact_id)
    return {**plain(record), "pins": plain(_pins_by_fact(request).get(fact_id, [])), "recalls": plain(recalls)}


@router.post("/api/facts/{fact_id}/forget", responses=WriteRefusals, tags=["facts"])
def forget_api(request: Request, fact_id: FactId, body: Why) -> dict:
    """Retire a fact (its author, the author's team lead or an owner may)."""
    web_of(request).write(lambda conn: facts_lib.forget(conn, fact_id, body.why))
    return {"forgotten": fact_id}


@router.post("/api/facts/{fact_id}/restore", response_model=Fact, responses=WriteRefusals, tags=["facts"])
def restore_api(request: Request, fact_id: FactId, body: Why) -> Any:
    """Make a retired fact current again."""
    return plain(web_of(request).write(lambda conn: facts_lib.restore(conn, fact_id, body.why)))


@router.post("/api/facts/{fact_id}/pin", response_model=Pin, responses=WriteRefusals, tags=["pins"])
def pin_api(request: Request, fact_id: FactId, body: Annotated[PinIn | None, Body()] = None) -> Any:
    """Pin a fact org-wide or within a project (caps: 10 org-wide, 5 per project)."""
    project = body.project if body else None
    return plain(web_of(request).write(lambda conn: pins_lib.pin(conn, fact_id, project or None)))


@router.post("/api/facts/{fact_id}/unpin", response_model=Pin, responses=WriteRefusals, tags=["pins"])
def unpin_api(request: Request, fact_id: FactId) -> Any:
    """Unpin a fact."""
    return plain(web_of(request).write(lambda conn: pins_lib.unpin(conn, fact_id)))


@router.get("/api/pins", response_model=list[Pin], responses={400: Refusals[400]}, tags=["pins"])
def pins_api(request: Request, project: Text = None, all: bool = False) -> Any:
    """Pins in force (or every pin ever, with `all`)."""
    return plain(web_of(request).read(lambda conn: pins_lib.list_pins(conn, project=project, include_unpinned=all)))
