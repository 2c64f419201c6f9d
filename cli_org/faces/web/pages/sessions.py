"""Archived sessions: the newest first, a search over their messages (`cli-org sessions
search`), and one session (`cli-org sessions show`), a page of messages at a time with long
texts cut (archive/sessions.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from ....archive import sessions as sessions_lib
from ....archive.records import HARNESSES
from ....limits import MAX_QUERY_CHARS
from ...render import plain
from ..state import web_of
from ..view import render

router = APIRouter()

PAGE_SIZE = 50  # sessions per page, and search hits (sessions_lib.MAX_LIMIT)
MESSAGES = 200  # archived messages per page of one session
TEXT_CHARS = 4_000  # of one message's text on the page; the rest is cut, and the page says so
Harness = Literal["claude-code", "hermes", "codex"]  # archive.records.HARNESSES
Words = Annotated[str | None, Query(max_length=MAX_QUERY_CHARS, description="words the messages hold")]
Project = Annotated[str | None, Query(max_length=500)]
Page = Annotated[int, Query(ge=1, le=100_000)]
SessionId = Annotated[str, Path(min_length=1, max_length=500, description="the session's id")]


def _list(request: Request, harness: str | None, project: str | None, page: int) -> tuple[list[Any], bool]:
    found = web_of(request).call(
        lambda conn: sessions_lib.list_sessions(
            conn, harness=harness, project=project or None, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE
        )
    )
    return found[:PAGE_SIZE], len(found) > PAGE_SIZE


def _search(request: Request, q: str, harness: str | None) -> list[sessions_lib.MessageHit]:
    return web_of(request).call(
        lambda conn: sessions_lib.search_messages(conn, q, limit=sessions_lib.MAX_LIMIT, harness=harness)
    )


def _show(request: Request, session_id: str, harness: str | None, page: int) -> sessions_lib.Session:
    return web_of(request).call(
        lambda conn: sessions_lib.show_session(
            conn, session_id, harness=harness, offset=(page - 1) * MESSAGES, limit=MESSAGES, text_chars=TEXT_CHARS
        )
    )


@router.get("/sessions", response_class=HTMLResponse, include_in_schema=False)
def sessions_page(
    request: Request, q: Words = None, harness: Harness | None = None, project: Project = None, page: Page = 1
) -> str:
    words = (q or "").strip()
    hits = _search(request, words, harness) if words else None
    listed, more = ([], False) if words else _list(request, harness, project, page)
    return render(
        "sessions.html",
        request,
        q=words,
        hits=hits,
        sessions=listed,
        more=more,
        page=page,
        harness=harness or "",
        harnesses=HARNESSES,
        project=project or "",
        max_chars=MAX_QUERY_CHARS,
        most=sessions_lib.MAX_LIMIT,
    )


@router.get("/sessions/{session_id}", response_class=HTMLResponse, include_in_schema=False)
def session_page(request: Request, session_id: SessionId, harness: Harness | None = None, page: Page = 1) -> str:
    found = _show(request, session_id, harness, page)
    return render(
        "session.html",
        request,
        s=found,
        page=page,
        more=found.more,
        text_chars=TEXT_CHARS,
        harness=harness or "",
    )


# --- the same as JSON ---------------------------------------------------------------------


class SessionPage(BaseModel):
    sessions: list[sessions_lib.SessionRow]
    page: int
    more: bool


Refusals: dict[int | str, dict[str, Any]] = {400: {"description": "refused input (one line in `error`)"}}


@router.get("/api/sessions", response_model=SessionPage, responses=Refusals, tags=["sessions"])
def sessions_api(request: Request, harness: Harness | None = None, project: Project = None, page: Page = 1) -> Any:
    """Archived sessions, newest first, 50 a page, each with its message count."""
    listed, more = _list(request, harness, project, page)
    return {"sessions": plain(listed), "page": page, "more": more}


@router.get("/api/sessions/search", response_model=list[sessions_lib.MessageHit], responses=Refusals, tags=["sessions"])
def sessions_search_api(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="words the messages hold")],
    harness: Harness | None = None,
) -> Any:
    """Archived messages matching every word (web-search syntax), newest first, at most 50."""
    return plain(_search(request, q, harness))


@router.get(
    "/api/sessions/{session_id}",
    response_model=sessions_lib.Session,
    responses={**Refusals, 404: {"description": "no such archived session"}},
    tags=["sessions"],
)
def session_api(request: Request, session_id: SessionId, harness: Harness | None = None, page: Page = 1) -> Any:
    """One archived session: 200 messages a page (`first`, `total`, `more`), each text cut to
    4,000 characters (`cut` counts them), tool calls with their results."""
    return plain(_show(request, session_id, harness, page))
