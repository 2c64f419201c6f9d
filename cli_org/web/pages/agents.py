"""Agents: every agent with its kind, lead, facts written, notebook use and last recall; one
agent's page with its newest facts, its notebook (read-only, only where row-level security
lets the serving identity read it), its bot memory file (read-only) and its recent recalls."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from ... import agents as agents_lib
from ...facts import Fact
from ...project import project_root
from ...render import plain
from ...rules import NOTEBOOK_CAPS
from ..app import web_of
from ..view import render

router = APIRouter()

# An agent's name as the path gives it: bounded, so no request reaches the database with a
# name longer than any agent's (AGENT_NAME allows 32 characters).
AgentName = Annotated[str, Path(min_length=1, max_length=64, description="the agent's name")]


def _overview(request: Request) -> list[agents_lib.AgentSummary]:
    return web_of(request).read(agents_lib.agents_overview)


def _detail(request: Request, name: str) -> agents_lib.AgentDetail:
    web = web_of(request)
    root = project_root(web.settings.root)  # where the [memory] arm reads the bots' files
    return web.read(lambda conn: agents_lib.agent_detail(conn, name, root=root))


Refusals: dict[int | str, dict[str, Any]] = {
    404: {"description": "no such agent"},
}


@router.get("/agents", response_class=HTMLResponse, include_in_schema=False)
def agents_page(request: Request) -> str:
    return render("agents.html", request, agents=_overview(request), caps=NOTEBOOK_CAPS)


@router.get("/agents/{name}", response_class=HTMLResponse, include_in_schema=False)
def agent_page(request: Request, name: AgentName) -> str:
    detail = _detail(request, name)
    return render("agent.html", request, d=detail, a=detail.agent)


# --- the same as JSON ---------------------------------------------------------------------


class AgentOut(BaseModel):
    name: str
    kind: str
    team_lead: str | None
    is_owner: bool
    created_at: str
    facts_current: int
    facts_all: int
    notebook_readable: bool
    notebook_memory: int | None
    notebook_user: int | None
    recalls: int
    last_recall: str | None


class EntryOut(BaseModel):
    id: int
    agent: str
    store: str
    body: str
    version: int
    created_at: str
    changed_at: str
    changed_by: str | None


class StoreOut(BaseModel):
    agent: str
    target: str
    cap: int
    used: int
    percent: int
    entries: list[EntryOut]


class NotebookOut(BaseModel):
    agent: str
    stores: list[StoreOut]


class MemoryFileOut(BaseModel):
    path: str
    chars: int
    text: str
    cut: bool
    modified_at: str


class RecallEventOut(BaseModel):
    id: int
    created_at: str
    project: str | None
    query: str
    arms: list[str]
    hits: int
    chars: int
    ms: int


class AgentDetailOut(BaseModel):
    agent: AgentOut
    facts: list[Fact]
    notebook: NotebookOut | None
    notebook_refused: str | None
    memory_file: MemoryFileOut | None
    recalls: list[RecallEventOut]


@router.get("/api/agents", response_model=list[AgentOut], tags=["agents"])
def agents_api(request: Request) -> Any:
    """Every agent: kind, lead, owner flag, facts written (current and all), notebook use
    per store (null where the serving identity may not read it), recall calls and the last."""
    return plain(_overview(request))


@router.get("/api/agents/{name}", response_model=AgentDetailOut, responses=Refusals, tags=["agents"])
def agent_api(request: Request, name: AgentName) -> Any:
    """One agent: its counts, newest current facts, notebook (or why it is not shown), bot
    memory file and latest recall calls."""
    return plain(_detail(request, name))
