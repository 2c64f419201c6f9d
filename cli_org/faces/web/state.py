"""What the web server holds for its life, and how a route reaches it: its own module, so
that the pages and the application both import it and neither imports the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
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
    cli_org/org) and the guard's secrets."""

    org: Org
    token: str = field(default_factory=guard.new_token)  # every request carries it (guard.py)
    cookie: str = guard.COOKIE  # the cookie's name that holds it (guard.cookie_for)
    hosts: frozenset[str] = field(default_factory=frozenset)  # Host headers accepted; empty: any
    secret: bytes = field(default_factory=guard.new_secret)  # signs the CSRF tokens of forms
    operation: str | None = None  # the registered operation of the request served (web_of)

    @property
    def via(self) -> str:
        """What the page's writes record as their harness: ORG_VIA, else web@HOST."""
        from ...setup import via

        return self.org.settings.via or via("web")

    def call(self, fn: Callable[[Conn], R]) -> R:
        """fn(conn) on the connection the request's registered operation runs on (the
        replica's for a read that may be stale, when there is one: org/registry.py)."""
        if self.operation is None:
            raise LookupError("no operation: reach the Web of a request through web_of(request)")
        return self.org.call(self.operation, fn)

    def csrf(self) -> str:
        return guard.csrf_token(self.secret)


def operation_of(request: Request) -> str:
    """The registered operation of the route that serves `request` (org/registry.py WEB)."""
    from ...org.registry import WEB, only

    route = request.scope.get("route")
    return only(WEB, f"{request.method} {getattr(route, 'path', request.url.path)}").name


def web_of(request: Request) -> Web:
    """The server's Web, bound to the operation of the route serving `request`."""
    web: Web = request.app.state.web
    return replace(web, operation=operation_of(request))
