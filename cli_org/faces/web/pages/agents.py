"""Agents: every agent with its kind, lead, facts written, notebook use and last recall; one
agent's page with its session-start block as the agent gets it (`cli-org context --of NAME`:
every part read as the serving identity, so a part it may not read is named hidden, never
shown), its newest facts, its notebook (read-only, only where row-level security lets the
serving identity read it), its bot memory file (read-only), its recent recalls, each a link
to what that recall returned (/recall/ID: shown, not asked again), and how many proposals
from its sessions wait for a decision (a link to them on the Proposals page)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse

from ....checks.rules import NOTEBOOK_CAPS
from ....local.project import project_root
from ....session.context import Context, build_context
from ....store import agents as agents_lib
from ....store import proposals as proposals_lib
from ...render import plain
from ..state import web_of
from ..view import render

if TYPE_CHECKING:
    from ....db import Conn

router = APIRouter()

# An agent's name as the path gives it: bounded, so no request reaches the database with a
# name longer than any agent's (AGENT_NAME allows 32 characters).
AgentName = Annotated[str, Path(min_length=1, max_length=64, description="the agent's name")]
Project = Annotated[str | None, Query(max_length=200, description="the block for this project (none: org-wide)")]


def _overview(request: Request) -> list[agents_lib.AgentSummary]:
    return web_of(request).call(agents_lib.agents_overview)


@dataclass
class AgentView(agents_lib.AgentDetail):
    """One agent for its page, and its session-start block as it gets it, read with the
    serving identity's rights (a part it may not read is in context.hidden, not in the text):
    what `cli-org context --of NAME` prints."""

    context: Context | None = None
    # The pending proposals from its sessions that the serving identity may decide (the
    # Proposals page, filtered to it): 0 also when they are not the serving identity's to see.
    proposals_pending: int = 0


def _detail(request: Request, name: str, project: str | None) -> AgentView:
    web = web_of(request)
    settings = web.org.settings
    root = project_root(settings.root)  # where the [memory] arm reads the bots' files

    def both(conn: Conn) -> AgentView:  # three library calls on one connection
        detail = agents_lib.agent_detail(conn, name, root=root)
        block = build_context(conn, settings=settings, project=project or None, agent=name)
        pending = proposals_lib.count_pending(conn, agent=name)
        return AgentView(**vars(detail), context=block, proposals_pending=pending)

    return web.call(both)


Refusals: dict[int | str, dict[str, Any]] = {
    404: {"description": "no such agent"},
}


@router.get("/agents", response_class=HTMLResponse, include_in_schema=False)
def agents_page(request: Request) -> str:
    return render("agents.html", request, agents=_overview(request), caps=NOTEBOOK_CAPS)


@router.get("/agents/{name}", response_class=HTMLResponse, include_in_schema=False)
def agent_page(request: Request, name: AgentName, project: Project = None) -> str:
    detail = _detail(request, name, project)
    return render("agent.html", request, d=detail, a=detail.agent, project=project or "")


# --- the same as JSON ---------------------------------------------------------------------


@router.get("/api/agents", response_model=list[agents_lib.AgentSummary], tags=["agents"])
def agents_api(request: Request) -> Any:
    """Every agent: kind, lead, owner flag, facts written (current and all), notebook use
    per store (null where the serving identity may not read it), recall calls and the last."""
    return plain(_overview(request))


@router.get("/api/agents/{name}", response_model=AgentView, responses=Refusals, tags=["agents"])
def agent_api(request: Request, name: AgentName, project: Project = None) -> Any:
    """One agent: its counts, newest current facts, notebook (or why it is not shown), bot
    memory file, latest recall calls, and `context`: its session-start block as `cli-org
    context --of NAME` gives it (what the serving identity may not read is in `hidden`)."""
    return plain(_detail(request, name, project))
