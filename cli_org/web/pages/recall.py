"""Recall: a question box over the same call as `cli-org recall` (the three labelled arms,
why each hit qualified, the notice, characters and time), logged in recall_events as the
serving identity, as the CLI logs it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from ...db.connect import on_replica
from ...errors import OrgError
from ...limits import MAX_QUERY_CHARS
from ...recall.answer import RecallResult, record_recall
from ...recall.answer import recall as run_recall
from ...render import recall_data
from ..app import web_of
from ..view import render

router = APIRouter()

# The bounds of `cli-org recall`: a question is a sentence (limits.py), --limit 1..50.
Question = Annotated[
    str,
    Query(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S", description="one question, in plain words"),
]
MaybeQuestion = Annotated[str | None, Query(max_length=MAX_QUERY_CHARS)]
Project = Annotated[str | None, Query(max_length=200, description="that project's facts plus facts with no project")]
Limit = Annotated[int, Query(ge=1, le=50, description="hits in all, across the three arms")]


@dataclass
class Asked:
    result: RecallResult
    logged: str | None  # why the call could not be logged, when it could not


def ask(request: Request, question: str, project: str | None, limit: int) -> Asked:
    """Recall as the serving identity, on the read connection; a recall read from the
    replica is logged on the primary afterwards (record_recall), as the CLI and the MCP
    server do. The answer stands without its log line if the primary is out of reach."""
    web = web_of(request)

    def body(conn) -> tuple[RecallResult, bool]:
        result = run_recall(conn, question, settings=web.settings, project=project, limit=limit, embedder=web.embedder)
        return result, on_replica(conn)

    result, replica = web.read(body)
    logged = None
    if replica:
        try:
            web.write(lambda conn: record_recall(conn, result, settings=web.settings, embedder=web.embedder))
        except OrgError as exc:
            logged = f"answered from the read replica; not logged on the primary ({exc})"
    return Asked(result, logged)


@router.get("/recall", response_class=HTMLResponse, include_in_schema=False)
def recall_page(request: Request, q: MaybeQuestion = None, project: Project = None, limit: Limit = 8) -> str:
    question = (q or "").strip()
    asked = ask(request, question, project or None, limit) if question else None
    return render(
        "recall.html", request, q=question, project=project or "", limit=limit, asked=asked, max_chars=MAX_QUERY_CHARS
    )


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
}


@router.get("/api/recall", response_model=RecallOut, responses=Refusals, tags=["recall"])
def recall_api(request: Request, q: Question, project: Project = None, limit: Limit = 8) -> Any:
    """Ask the org's memory one question: labelled hits from shared facts ([fact]), bot
    memory files and notebooks ([memory]) and the vault ([vault]), each with why it
    qualified; the same JSON as `cli-org recall --json`. The call is logged as the serving
    identity."""
    return recall_data(ask(request, q, project or None, limit).result)
