"""Rendering at the edge: Jinja2 templates with autoescaping on for every page, so any text
an agent wrote (a claim of `<script>...`) shows as text. No front-end build step."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request

from ... import __version__
from ...store.facts import age
from ...store.review import count_phrase
from ..render import standing_words

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"

PAGES = (  # the navigation, in order: (path, title); Activity answers a lead's first question
    ("/activity", "Activity"),
    ("/facts", "Facts"),
    ("/proposals", "Proposals"),  # the facts waiting to be: next to them
    ("/agents", "Agents"),
    ("/recall", "Recall"),
    ("/search", "Search"),
    ("/sessions", "Sessions"),
    ("/vault", "Vault"),
    ("/todos", "Todos"),
    ("/pins", "Pins"),
    ("/usage", "Usage"),
    ("/evaluation", "Evaluation"),
)


def _when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


ENV = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.filters["when"] = _when
ENV.filters["age"] = age
ENV.filters["standing"] = standing_words
ENV.filters["review_phrase"] = count_phrase


def render(name: str, request: Request, **context: Any) -> str:
    """The page `name` for `request`, with what every page shows (who the page acts as,
    the navigation, the form token)."""
    web = request.app.state.web
    return ENV.get_template(name).render(
        request=request,
        pages=PAGES,
        here="/" + request.url.path.strip("/").split("/")[0],
        acting_as=web.org.agent or "the login role",
        database=web.org.settings.database_name if web.org.settings.embedded else "the server's database",
        csrf=web.csrf(),
        version=__version__,
        **context,
    )
