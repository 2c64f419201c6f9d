"""What the web server holds for its life, and how a route reaches it: its own module, so
that the pages and the application both import it and neither imports the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from fastapi import Request

from . import guard

if TYPE_CHECKING:
    from ...db import Conn
    from ...org import Org

R = TypeVar("R")


@dataclass
class Web:
    """What the process holds for its life: the Org (who it acts as, the pools, the model:
    cli_org/org.py) and the guard's secrets."""

    org: Org
    token: str = field(default_factory=guard.new_token)  # every request carries it (guard.py)
    cookie: str = guard.COOKIE  # the cookie's name that holds it (guard.cookie_for)
    hosts: frozenset[str] = field(default_factory=frozenset)  # Host headers accepted; empty: any
    secret: bytes = field(default_factory=guard.new_secret)  # signs the CSRF tokens of forms

    @property
    def via(self) -> str:
        """What the page's writes record as their harness: ORG_VIA, else web@HOST."""
        from ...setup import via

        return self.org.settings.via or via("web")

    def read(self, fn: Callable[[Conn], R]) -> R:
        """fn(conn) on a connection for reads (the replica's when there is one)."""
        return self.org.run(fn, read=True)

    def write(self, fn: Callable[[Conn], R]) -> R:
        """fn(conn) on the primary's connection."""
        return self.org.run(fn)

    def csrf(self) -> str:
        return guard.csrf_token(self.secret)


def web_of(request: Request) -> Web:
    return request.app.state.web
