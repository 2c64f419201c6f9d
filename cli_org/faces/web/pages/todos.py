"""Todos: open and done items, newest first, by agent and project: `cli-org todos`'s list
(store/todos.py list_todos), a page at a time."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from ....store import todos as todos_lib
from ...render import plain
from ..state import web_of
from ..view import render

router = APIRouter()

PAGE_SIZE = 50  # todos per page
State = Literal["open", "done", "all"]  # todos_lib.STATES
Name = Annotated[str | None, Query(max_length=64, description="only this agent's todos")]
Project = Annotated[str | None, Query(max_length=64, description="this project's todos and the org-wide ones")]
Page = Annotated[int, Query(ge=1, le=100_000)]


def _page(request: Request, state: str, agent: str | None, project: str | None, page: int) -> tuple[list[Any], bool]:
    found = web_of(request).call(
        lambda conn: todos_lib.list_todos(
            conn,
            state=state,
            author=agent or None,
            project=project or None,
            limit=PAGE_SIZE + 1,
            offset=(page - 1) * PAGE_SIZE,
        )
    )
    return found[:PAGE_SIZE], len(found) > PAGE_SIZE


@router.get("/todos", response_class=HTMLResponse, include_in_schema=False)
def todos_page(
    request: Request, state: State = "open", agent: Name = None, project: Project = None, page: Page = 1
) -> str:
    found, more = _page(request, state, agent, project, page)
    return render(
        "todos.html",
        request,
        todos=found,
        more=more,
        page=page,
        state=state,
        agent=agent or "",
        project=project or "",
        states=todos_lib.STATES,
    )


class TodoPage(BaseModel):
    todos: list[todos_lib.Todo]
    page: int
    more: bool


@router.get("/api/todos", response_model=TodoPage, responses={400: {"description": "refused input"}}, tags=["todos"])
def todos_api(
    request: Request, state: State = "open", agent: Name = None, project: Project = None, page: Page = 1
) -> Any:
    """Todos, newest first, 50 a page: open (default), done or all; one agent's; a project's
    and the org-wide ones."""
    found, more = _page(request, state, agent, project, page)
    return {"todos": plain(found), "page": page, "more": more}
