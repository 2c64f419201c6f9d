"""One module per page, each an APIRouter with its HTML routes and its /api routes."""

from . import (
    activity,
    agents,
    evaluation,
    facts,
    notebook,
    past_recall,
    pins,
    proposals,
    recall,
    search,
    sessions,
    todos,
    usage,
    vault,
)

ROUTERS = [
    activity.router,
    facts.router,
    agents.router,
    notebook.router,
    recall.router,
    past_recall.router,
    search.router,
    sessions.router,
    vault.router,
    todos.router,
    pins.router,
    proposals.router,
    usage.router,
    evaluation.router,
]
