"""An agent's notebook history: every stored version of its two stores (notebook_versions,
migration 0013), newest first, each with its line diff from the version before, a page at a
time; `cli-org notebook history` over the same library (store/notebook.py history_page).
Only where the serving identity may read that notebook (the agent, its team lead, an owner:
the rule row-level security applies); otherwise the page says it is not shown."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from ....store import notebook as nb
from ...render import plain
from ..state import web_of
from ..view import render
from .agents import AgentName

router = APIRouter()

Target = Literal["memory", "user"]  # checks.rules.NOTEBOOK_STORES
Page = Annotated[int, Query(ge=1, le=100_000)]


def _history(request: Request, name: str, target: str | None, page: int) -> nb.NotebookHistory:
    return web_of(request).call(lambda conn: nb.history_page(conn, name, target, page=page))


@router.get("/agents/{name}/notebook", response_class=HTMLResponse, include_in_schema=False)
def notebook_page(request: Request, name: AgentName, target: Target | None = None, page: Page = 1) -> str:
    found = _history(request, name, target, page)
    return render("notebook.html", request, h=found, agent=name, target=target, page=page, more=found.more)


@router.get(
    "/api/agents/{name}/notebook",
    response_model=nb.NotebookHistory,
    responses={400: {"description": "refused input (one line in `error`)"}, 404: {"description": "no such agent"}},
    tags=["agents"],
)
def notebook_api(request: Request, name: AgentName, target: Target | None = None, page: Page = 1) -> Any:
    """Every stored version of the agent's notebook (one store with `target`), newest first,
    50 a page, each with `diff` from the entry's version before; `refused` (and no versions)
    where the serving identity may not read this notebook."""
    return plain(_history(request, name, target, page))
