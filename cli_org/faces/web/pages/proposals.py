"""Proposals (issue 35): the lessons the archive's import found in agents' sessions, waiting to
be accepted as facts. The list is `cli-org proposals` (store/proposals.py list_proposals: only
those the serving identity may decide: its own, its team's as a lead, all as an owner), each
with where it came from (the session, linked to its page, and the message); a form accepts
one as proposed, another accepts it with its claim and subject edited, a third rejects it
with an optional reason. The database decides who may (org_proposal_accept and _reject)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, Field

from ....checks.rules import MAX_CLAIM, MAX_ID, MAX_SUBJECT
from ....store import proposals as proposals_lib
from ...render import plain
from ..guard import check_form
from ..state import web_of
from ..view import render

if TYPE_CHECKING:
    from ....db import Conn

router = APIRouter()

PAGE_SIZE = 100  # proposals listed: the list's own default (list_proposals), one screenful to triage
State = Literal["pending", "accepted", "rejected", "all"]  # proposals_lib.STATES
Name = Annotated[str | None, Query(max_length=64, description="only the proposals from this agent's sessions")]
Project = Annotated[str | None, Query(max_length=64, description="this project's proposals and the org-wide ones")]
ProposalId = Annotated[int, Path(ge=1, le=MAX_ID, description="the proposal's id")]
# What the forms carry back so that the list comes back as it was filtered: bounded as the
# query parameters are.
_FILTERS = {"state": 16, "agent": 64, "project": 64}


def _list(request: Request, state: str, agent: str | None, project: str | None) -> list[proposals_lib.Proposal]:
    return web_of(request).call(
        lambda conn: proposals_lib.list_proposals(
            conn, state=state, agent=agent or None, project=project or None, limit=PAGE_SIZE
        )
    )


@router.get("/proposals", response_class=HTMLResponse, include_in_schema=False)
def proposals_page(request: Request, state: State = "pending", agent: Name = None, project: Project = None) -> str:
    found = _list(request, state, agent, project)
    return render(
        "proposals.html",
        request,
        proposals=found,
        state=state,
        agent=agent or "",
        project=project or "",
        states=proposals_lib.STATES,
        most=PAGE_SIZE,
        max_claim=MAX_CLAIM,
        max_subject=MAX_SUBJECT,
    )


def _back(fields: dict[str, str]) -> str:
    """The list as the form's page showed it (its filters, carried in hidden fields)."""
    kept = {k: fields.get(k, "").strip()[:most] for k, most in _FILTERS.items()}
    query = urlencode({k: v for k, v in kept.items() if v and (k, v) != ("state", "pending")})  # the default
    return "/proposals" + (f"?{query}" if query else "")


async def _form_then(request: Request, act: Callable[[Conn, dict[str, str], str], object]) -> RedirectResponse:
    """Check the form's CSRF token, decide as the serving identity (act(conn, fields, via)),
    go back to the list; a refusal is the error page every form shows."""
    from starlette.concurrency import run_in_threadpool

    web = web_of(request)
    fields = await check_form(request, web)
    await run_in_threadpool(web.call, lambda conn: act(conn, fields, web.via))
    return RedirectResponse(_back(fields), status_code=303)


def _edited(fields: dict[str, str], name: str) -> str | None:
    """An edited field as typed (the library checks it: an emptied claim is refused), or None
    when the form has no such field (the plain Accept button)."""
    return fields[name].strip() if name in fields else None


@router.post("/proposals/{proposal_id}/accept", include_in_schema=False)
async def accept_form(request: Request, proposal_id: ProposalId) -> RedirectResponse:
    embedder = request.app.state.web.org.embedder

    def act(conn: Conn, fields: dict[str, str], via: str) -> object:
        return proposals_lib.accept(
            conn,
            proposal_id,
            claim=_edited(fields, "claim"),
            subject=_edited(fields, "subject"),
            agent=(fields.get("author") or "").strip() or None,
            via=via,
            embedder=embedder,
        )

    return await _form_then(request, act)


@router.post("/proposals/{proposal_id}/reject", include_in_schema=False)
async def reject_form(request: Request, proposal_id: ProposalId) -> RedirectResponse:
    return await _form_then(
        request,
        lambda conn, fields, via: proposals_lib.reject(conn, proposal_id, reason=fields.get("reason") or None, via=via),
    )


# --- the same as JSON ---------------------------------------------------------------------


class AcceptIn(BaseModel):
    claim: str | None = Field(default=None, max_length=MAX_CLAIM, description="the claim as edited (none: as proposed)")
    subject: str | None = Field(default=None, max_length=MAX_SUBJECT, description="the subject as edited")
    agent: str | None = Field(
        default=None, max_length=64, description="the author of a proposal that belongs to no agent (an owner's choice)"
    )


class RejectIn(BaseModel):
    reason: str | None = Field(default=None, max_length=1000, description="why (optional)")


Refusals: dict[int | str, dict[str, Any]] = {
    400: {"description": "refused input (one line in `error`)"},
    403: {"description": "the serving identity may not decide this proposal"},
    404: {"description": "no such proposal"},
    415: {"description": "the request is not `Content-Type: application/json`"},
}


@router.get(
    "/api/proposals",
    response_model=list[proposals_lib.Proposal],
    responses={400: Refusals[400]},
    tags=["proposals"],
)
def proposals_api(request: Request, state: State = "pending", agent: Name = None, project: Project = None) -> Any:
    """The proposals the serving identity may decide, newest first (at most 100): pending by
    default, or accepted, rejected or all; one agent's; a project's and the org-wide ones."""
    return plain(_list(request, state, agent, project))


@router.post(
    "/api/proposals/{proposal_id}/accept", response_model=proposals_lib.Proposal, responses=Refusals, tags=["proposals"]
)
def accept_api(request: Request, proposal_id: ProposalId, body: Annotated[AcceptIn | None, Body()] = None) -> Any:
    """Make a proposal a fact (its session's agent is the author), as proposed or with its
    claim and subject edited: the agent, its team lead or an owner may."""
    web = web_of(request)
    given = body or AcceptIn()
    return plain(
        web.call(
            lambda conn: proposals_lib.accept(
                conn,
                proposal_id,
                claim=given.claim,
                subject=given.subject,
                agent=given.agent,
                via=web.via,
                embedder=web.org.embedder,
            )
        )
    )


@router.post(
    "/api/proposals/{proposal_id}/reject", response_model=proposals_lib.Proposal, responses=Refusals, tags=["proposals"]
)
def reject_api(request: Request, proposal_id: ProposalId, body: Annotated[RejectIn | None, Body()] = None) -> Any:
    """Reject a proposal: it is kept, rejected, and its claim is never proposed again."""
    web = web_of(request)
    reason = body.reason if body else None
    return plain(web.call(lambda conn: proposals_lib.reject(conn, proposal_id, reason=reason, via=web.via)))
