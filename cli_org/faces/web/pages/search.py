"""Search: the vault search of `cli-org search`, in its three modes (keyword, semantic,
hybrid), with the notice when it falls back to keyword (no vectors, no query model)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from ....limits import MAX_QUERY_CHARS
from ....vault.search import MODES, SearchResult
from ....vault.search import search as run_search
from ...render import plain
from ..state import web_of
from ..view import render

router = APIRouter()

Mode = Literal["keyword", "semantic", "hybrid"]  # vault/search.py MODES
Words = Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S", description="what to look for")]
MaybeWords = Annotated[str | None, Query(max_length=MAX_QUERY_CHARS)]
Limit = Annotated[int, Query(ge=1, le=100, description="notes to return")]  # one page; the CLI allows 1000


def find(request: Request, query: str, mode: str, limit: int, private: bool) -> SearchResult:
    web = web_of(request)
    return web.call(
        lambda conn: run_search(conn, query, mode=mode, limit=limit, embedder=web.org.embedder, private=private)
    )


@router.get("/search", response_class=HTMLResponse, include_in_schema=False)
def search_page(
    request: Request, q: MaybeWords = None, mode: Mode = "hybrid", limit: Limit = 10, private: bool = False
) -> str:
    words = (q or "").strip()
    found = find(request, words, mode, limit, private) if words else None
    return render(
        "search.html",
        request,
        q=words,
        mode=mode,
        modes=MODES,
        limit=limit,
        private=private,
        found=found,
        max_chars=MAX_QUERY_CHARS,
    )


Refusals: dict[int | str, dict[str, Any]] = {
    400: {"description": "refused input (one line in `error`): e.g. a query of more than 64 words"},
    403: {"description": "`private` asked for by an agent that is no owner"},
}


@router.get("/api/search", response_model=SearchResult, responses=Refusals, tags=["search"])
def search_api(request: Request, q: Words, mode: Mode = "hybrid", limit: Limit = 10, private: bool = False) -> Any:
    """Search the vault: one hit per note (its best chunk) with per-mode scores. `used` is
    the mode that answered: semantic and hybrid fall back to keyword, with `notice`, when
    there are no vectors or no query model. Private notes only with `private`, for owners."""
    return plain(find(request, q, mode, limit, private))
