"""One module per page, each an APIRouter with its HTML routes and its /api routes."""

from . import activity, agents, evaluation, facts, recall, search, usage

ROUTERS = [activity.router, facts.router, agents.router, recall.router, search.router, usage.router, evaluation.router]
