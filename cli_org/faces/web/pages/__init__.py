"""One module per page, each an APIRouter with its HTML routes and its /api routes."""

from . import agents, evaluation, facts, past_recall, recall, search, usage

ROUTERS = [
    facts.router,
    agents.router,
    recall.router,
    past_recall.router,
    search.router,
    usage.router,
    evaluation.router,
]
