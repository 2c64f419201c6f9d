"""One module per page, each an APIRouter with its HTML routes and its /api routes."""

from . import agents, evaluation, facts, recall, search, usage

ROUTERS = [facts.router, agents.router, recall.router, search.router, usage.router, evaluation.router]
