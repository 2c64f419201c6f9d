"""Recall: a question box over the same call as `cli-org recall` (the three labelled arms,
why each hit qualified, the notice, characters and time), logged in recall_events as the
serving identity, as the CLI logs it. Because it is logged, a question is asked by a POST
only (no GET changes anything): a link to /recall?q=... fills the box, and the
person presses Ask."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from ....limits import MAX_QUERY_CHARS, RECALL_HITS
from ....recall.answer import RecallResult
from ...render import recall_data
from ..guard import check_form
from ..state import web_of
from ..view import render

router = APIRouter()

MaybeQuestion = Annotated[str | None, Query(max_length=MAX_QUERY_CHARS)]
MaybeProject = Annotated[str | None, Query(max_length=200)]
MaybeLimit = Annotated[int, Query(ge=RECALL_HITS.low, le=RECALL_HITS.high)]


class Question(BaseModel):
    """One recall, with the bounds of `cli-org recall`: a question is a sentence (limits.py),
    --limit 1..50."""

    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S", description="one question, in plain words")
    project: str | None = Field(None, max_length=200, description="that project's facts plus facts with no project")
    limit: int = Field(
        RECALL_HITS.default, ge=RECALL_HITS.low, le=RECALL_HITS.high, description="hits in all, across the three arms"
    )


@dataclass
class Asked:
    result: RecallResult
    logged: str | None  # why the call could not be logged, when it could not


def ask(request: Request, question: str, project: str | None, limit: int) -> Asked:
    """Recall as the serving identity, on the read connection; a recall read from the
    replica is logged on the primary afterwards (record_recall), as the CLI and the MCP
    server do. The answer stands without its log line if the primary is out of reach."""
    recalled = web_of(request).org.recall(question, project=project, limit=limit)
    return Asked(recalled.result, recalled.unlogged)


@router.get("/recall", response_class=HTMLResponse, include_in_schema=False)
def recall_page(
    request: Request, q: MaybeQuestion = None, project: MaybeProject = None, limit: MaybeLimit = RECALL_HITS.default
) -> str:
    """The box, filled from the address if it names a question; nothing is asked."""
    return _page(request, (q or "").strip(), project or "", limit, None)


@router.post("/recall", response_class=HTMLResponse, include_in_schema=False)
async def recall_form(request: Request) -> str:
    """The box's question, asked (the form's CSRF token checked first); a blank one is not."""
    fields = await check_form(request, web_of(request))
    if not fields.get("q", "").strip():
        return _page(request, "", fields.get("project", ""), RECALL_HITS.default, None)
    try:
        asking = Question.model_validate({k: v for k, v in fields.items() if k in Question.model_fields and v != ""})
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from None
    question = asking.q.strip()
    asked = await run_in_threadpool(ask, request, question, asking.project, asking.limit)
    return _page(request, question, asking.project or "", asking.limit, asked)


def _page(request: Request, q: str, project: str, limit: int, asked: Asked | None) -> str:
    return render("recall.html", request, q=q, project=project, limit=limit, asked=asked, max_chars=MAX_QUERY_CHARS)


class RecallOut(BaseModel):
    """What `cli-org recall --json` prints (render.recall_data): no dataclass has its shape."""

    query: str
    project: str | None
    limit: int
    arms: list[str]
    chars: int
    ms: float
    notice: str | None
    hits: list[dict[str, Any]]


Refusals: dict[int | str, dict[str, Any]] = {
    400: {"description": "refused input (one line in `error`): e.g. a question of more than 64 words"},
    415: {"description": "the request is not `Content-Type: application/json`"},
}


@router.post("/api/recall", response_model=RecallOut, responses=Refusals, tags=["recall"])
def recall_api(request: Request, body: Question) -> Any:
    """Ask the org's memory one question: labelled hits from shared facts ([fact]), bot
    memory files and notebooks ([memory]) and the vault ([vault]), each with why it
    qualified; the same JSON as `cli-org recall --json`. The call is logged as the serving
    identity, so it is a POST (`{"q": "...", "project": null, "limit": 8}`)."""
    return recall_data(ask(request, body.q, body.project or None, body.limit).result)
