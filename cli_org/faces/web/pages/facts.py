"""Facts: the list (current by default; filters; text search), one fact's whole history
with how often recalls returned it and archived sessions later quoted it, and the writes a
person makes from the page (forget, restore, pin, unpin)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, Field

from ....archive.verdicts import FactRecalls, fact_recalls
from ....checks.rules import KINDS, MAX_ID
from ....evaluation.curation import PAGE_NEWEST, CurationSummary, curation_summary
from ....store import facts as facts_lib
from ....store import pins as pins_lib
from ....store.facts import Event, Fact
from ....store.links import ShownLink
from ....store.pins import Pin
from ....store.review import Review, review
from ....store.tidy import Proposal, TidyReport, tidy, tidy_roots
from ...render import plain
from ..guard import check_form
from ..state import web_of
from ..view import render

if TYPE_CHECKING:
    from ....db import Conn

router = APIRouter()

PAGE_SIZE = 100  # facts per page: the list stays one screenful of queries at 10,000 facts
Text = Annotated[str | None, Query(max_length=200)]
FactId = Annotated[int, Path(ge=1, le=MAX_ID, description="the fact's id")]


@dataclass(frozen=True)
class FactQuery:
    """The list's query: the filters (as `list_facts` takes them), retired too, the page."""

    filters: dict[str, Any]
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


def _page_of(request: Request, query: FactQuery) -> tuple[list[Any], bool]:
    """One page of facts, newest first, and whether another page follows."""
    found = web_of(request).call(
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


def _pins_by_fact(request: Request) -> dict[int, list[Pin]]:
    pinned: dict[int, list[Pin]] = {}
    for p in web_of(request).call(lambda conn: pins_lib.list_pins(conn, include_unpinned=True)):
        pinned.setdefault(p.fact_id, []).append(p)
    return pinned


def _summary(request: Request) -> CurationSummary:
    """The store's summary without the stale-source count, which stats every fact's source
    file (`eval stale`): over the 300 ms a page may take at 100k facts with path sources, so
    the panel names the command instead; near-duplicates among the newest PAGE_NEWEST facts
    (the measurement is in evaluation/curation.py)."""
    return web_of(request).call(lambda conn: curation_summary(conn, duplicates_newest=PAGE_NEWEST))


@router.get("/facts", response_class=HTMLResponse, include_in_schema=False)
def facts_page(request: Request, query: Annotated[FactQuery, Depends(fact_query)]) -> str:
    found, more = _page_of(request, query)
    pinned = {fid for fid, ps in _pins_by_fact(request).items() if any(p.unpinned_at is None for p in ps)}
    filters, all, page = query.filters, query.all, query.page
    return render(
        "facts.html",
        request,
        facts=found,
        more=more,
        page=page,
        filters=filters,
        all=all,
        kinds=KINDS,
        pinned=pinned,
        summary=_summary(request) if page == 1 else None,  # the panel heads the first page only
        review=_review(request) if page == 1 else None,
    )


# --- the review list (issue 36): what waits for the serving identity to settle ----------------


def _review(request: Request) -> Review:
    return web_of(request).call(review)


@router.get("/facts/review", response_class=HTMLResponse, include_in_schema=False)
def review_page(request: Request) -> str:
    return render("review.html", request, review=_review(request))


@router.get("/api/facts/review", response_model=Review, tags=["facts"])
def review_api(request: Request) -> Any:
    """What waits for the serving identity to settle (`cli-org review`): contradictions between
    current facts, near-duplicates tidy would merge, proposals waiting, stale sources; each
    with the facts it names and the command that settles it."""
    return plain(_review(request))


# --- tidy from the page: the proposals of `cli-org tidy`, applied as the serving identity ----

TIDY_SHOWN = 100  # proposals listed (and applied) per page; the rest wait for the next round
# The page proposes over this many newest current facts (`cli-org tidy` judges them all);
# each round applied moves the window on to older facts.
TIDY_NEWEST = 2_000


def _tidy(request: Request, only: set[int] | None = None, force: set[int] | None = None) -> TidyReport:
    """The page's proposals; with `only`, those applied (`force`: the ones among them that
    need a person, ticked under their own name)."""
    web = web_of(request)
    roots = tidy_roots(web.org.settings.root, web.org.settings.vault)
    if only is None:
        return web.call(lambda conn: tidy(conn, roots=roots, newest=TIDY_NEWEST))
    forced = force or set()
    return web.call(
        lambda conn: tidy(conn, roots=roots, apply=True, only=only, newest=TIDY_NEWEST, force=forced, via=web.via)
    )


def _ids(raw: list[str]) -> set[int]:
    from ....errors import InputError

    try:
        ids = {int(v) for v in raw}
    except ValueError:
        raise InputError("tidy: the facts to tidy are given by their ids (whole numbers)") from None
    if not ids or len(ids) > TIDY_SHOWN or not all(1 <= i <= MAX_ID for i in ids):
        raise InputError(f"tidy: choose from 1 to {TIDY_SHOWN} of the proposals shown")
    return ids


@router.get("/facts/tidy", response_class=HTMLResponse, include_in_schema=False)
def tidy_page(request: Request) -> str:
    report = _tidy(request)
    shown = report.proposals[:TIDY_SHOWN]
    return render("tidy.html", request, report=report, shown=shown, done=None, newest=TIDY_NEWEST)


@router.post("/facts/tidy", response_class=HTMLResponse, include_in_schema=False)
async def tidy_form(request: Request) -> str:
    """Apply the proposals ticked on the page (CSRF-checked form), as the serving identity."""
    from starlette.concurrency import run_in_threadpool

    web = web_of(request)
    await check_form(request, web)
    form = await request.form()
    forced = [v for v in form.getlist("force") if isinstance(v, str)]
    ids = _ids([v for v in form.getlist("fact") if isinstance(v, str)] + forced)
    report = await run_in_threadpool(_tidy, request, ids, _ids(forced) if forced else None)
    return render("tidy.html", request, report=report, shown=report.proposals, done=report, newest=TIDY_NEWEST)


def _record(request: Request, fact_id: int) -> tuple[facts_lib.FactRecord, FactRecalls]:
    """The fact's history and its recall counts, on one connection (two library calls)."""
    return web_of(request).call(lambda conn: (facts_lib.show_fact(conn, fact_id), fact_recalls(conn, fact_id)))


@router.get("/facts/{fact_id}", response_class=HTMLResponse, include_in_schema=False)
def fact_page(request: Request, fact_id: FactId) -> str:
    record, recalls = _record(request, fact_id)
    pins = _pins_by_fact(request).get(fact_id, [])
    return render("fact.html", request, record=record, fact=record.fact, pins=pins, recalls=recalls)


async def _form_then(request: Request, fact_id: FactId, act: Callable[[Conn, Any, str], object]) -> RedirectResponse:
    """Check the form's CSRF token, run the write as the serving identity (act(conn, fields,
    via)), go back to the fact."""
    from starlette.concurrency import run_in_threadpool

    web = web_of(request)
    fields = await check_form(request, web)
    await run_in_threadpool(web.call, lambda conn: act(conn, fields, web.via))
    return RedirectResponse(f"/facts/{fact_id}", status_code=303)


def _why(fields: dict[str, str]) -> str:
    return fields.get("why", "").strip()


def _project(fields: dict[str, str]) -> str | None:
    return fields.get("project", "").strip() or None


@router.post("/facts/{fact_id}/forget", include_in_schema=False)
async def forget_form(request: Request, fact_id: FactId) -> RedirectResponse:
    return await _form_then(request, fact_id, lambda conn, f, via: facts_lib.forget(conn, fact_id, _why(f), via=via))


@router.post("/facts/{fact_id}/restore", include_in_schema=False)
async def restore_form(request: Request, fact_id: FactId) -> RedirectResponse:
    return await _form_then(request, fact_id, lambda conn, f, via: facts_lib.restore(conn, fact_id, _why(f), via=via))


@router.post("/facts/{fact_id}/pin", include_in_schema=False)
async def pin_form(request: Request, fact_id: FactId) -> RedirectResponse:
    return await _form_then(request, fact_id, lambda conn, f, via: pins_lib.pin(conn, fact_id, _project(f), via=via))


@router.post("/facts/{fact_id}/unpin", include_in_schema=False)
async def unpin_form(request: Request, fact_id: FactId) -> RedirectResponse:
    return await _form_then(request, fact_id, lambda conn, f, via: pins_lib.unpin(conn, fact_id, via=via))


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
    links: list[ShownLink]  # its live typed links, both ways (`cli-org link`)
    confirmed_by: list[str]
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


class TidyIn(BaseModel):
    facts: list[int] = Field(min_length=1, max_length=TIDY_SHOWN, description="the fact ids of the proposals to apply")
    force: list[int] = Field(
        default_factory=list,
        max_length=TIDY_SHOWN,
        description="of those, the merges that need a person (`needs_person`) to apply all the same",
    )


@router.get("/api/facts/summary", response_model=CurationSummary, tags=["facts"])
def summary_api(request: Request) -> Any:
    """The store's health: current, retired and superseded facts; confirmed against inferred;
    per author and kind; the share with a project; claim length; near-duplicates waiting for
    tidy. (The stale-source count is `cli-org facts summary`'s: it reads the files.)"""
    return plain(_summary(request))


class TidyProposals(BaseModel):  # what the page lists: the first proposals, and how many there are
    proposals: list[Proposal]
    total: int
    newest: int  # judged among this many newest current facts
    roots: list[str]
    threshold: float


@router.get("/api/facts/tidy", response_model=TidyProposals, tags=["facts"])
def tidy_api(request: Request) -> Any:
    """The first 100 proposals of `cli-org tidy` (near-duplicates to merge, missing sources,
    changed sources to review: applying leaves those), with evidence, over the newest 2,000
    current facts as the page; `total` counts them all."""
    report = _tidy(request)
    return {
        "proposals": plain(report.proposals[:TIDY_SHOWN]),
        "total": len(report.proposals),
        "newest": TIDY_NEWEST,
        "roots": report.roots,
        "threshold": report.threshold,
    }


@router.post("/api/facts/tidy", response_model=TidyReport, responses=WriteRefusals, tags=["facts"])
def tidy_apply_api(request: Request, body: TidyIn) -> Any:
    """Apply the proposals for these facts (proposed afresh) with the serving identity's
    rights; each change is logged and restorable. A merge that needs a person is skipped
    unless its fact is in `force` too. 403 when every one tried is refused."""
    forced = _ids([str(i) for i in body.force]) if body.force else None
    return plain(_tidy(request, _ids([str(i) for i in body.facts + body.force]), forced))


@router.get("/api/facts/{fact_id}", response_model=FactHistory, responses=Refusals, tags=["facts"])
def fact_api(request: Request, fact_id: FactId) -> Any:
    """One fact, what happened to it, its supersession chain both ways, its live links both
    ways (with who confirmed it), its pins, and
    `recalls`: how often it was a recall hit (in the recalls the serving identity may read),
    to how many agents, the last time, and of the archived sessions' recalls that returned it
    and were judged, how many later quoted it."""
    record, recalls = _record(request, fact_id)
    return {**plain(record), "pins": plain(_pins_by_fact(request).get(fact_id, [])), "recalls": plain(recalls)}


@router.post("/api/facts/{fact_id}/forget", responses=WriteRefusals, tags=["facts"])
def forget_api(request: Request, fact_id: FactId, body: Why) -> dict[str, Any]:
    """Retire a fact (its author, the author's team lead or an owner may)."""
    web_of(request).call(lambda conn: facts_lib.forget(conn, fact_id, body.why, via=web_of(request).via))
    return {"forgotten": fact_id}


@router.post("/api/facts/{fact_id}/restore", response_model=Fact, responses=WriteRefusals, tags=["facts"])
def restore_api(request: Request, fact_id: FactId, body: Why) -> Any:
    """Make a retired fact current again."""
    web = web_of(request)
    return plain(web.call(lambda conn: facts_lib.restore(conn, fact_id, body.why, via=web.via)))


@router.post("/api/facts/{fact_id}/pin", response_model=Pin, responses=WriteRefusals, tags=["pins"])
def pin_api(request: Request, fact_id: FactId, body: Annotated[PinIn | None, Body()] = None) -> Any:
    """Pin a fact org-wide or within a project (caps: 10 org-wide, 5 per project)."""
    project = body.project if body else None
    web = web_of(request)
    return plain(web.call(lambda conn: pins_lib.pin(conn, fact_id, project or None, via=web.via)))


@router.post("/api/facts/{fact_id}/unpin", response_model=Pin, responses=WriteRefusals, tags=["pins"])
def unpin_api(request: Request, fact_id: FactId) -> Any:
    """Unpin a fact."""
    return plain(web_of(request).call(lambda conn: pins_lib.unpin(conn, fact_id, via=web_of(request).via)))


@router.get("/api/pins", response_model=list[Pin], responses={400: Refusals[400]}, tags=["pins"])
def pins_api(request: Request, project: Text = None, all: bool = False) -> Any:
    """Pins in force (or every pin ever, with `all`)."""
    return plain(web_of(request).call(lambda conn: pins_lib.list_pins(conn, project=project, include_unpinned=all)))
