"""The web page's security rules, one place each (docs/web.md, "Web page"; docs/security.md).

- Token: every request carries the token, on every host, loopback included:
  127.0.0.1 is shared by every user of the machine, so "loopback" is no login. `cli-org
  serve` draws a random one at start (or takes CLI_ORG_WEB_TOKEN) and prints an address
  that carries it once (`/?token=...`): that sets an HttpOnly, SameSite=Strict cookie for
  this port and redirects to the same address without it. API clients send
  `Authorization: Bearer TOKEN`. Compared in constant time.
- Bind: a non-loopback address needs a token the user chose (CLI_ORG_WEB_TOKEN), since the
  page then travels over the network in plain HTTP.
- Host: when bound to loopback, only a Host header naming that loopback address is served,
  so a web site cannot reach the page through a name it controls (DNS rebinding).
- Other origins: a page on another port of 127.0.0.1 is the same *site* (the
  browser sends it the cookie) but another *origin*. Anything another site's or another
  port's page makes the browser ask for (`Sec-Fetch-Site: cross-site` or `same-site`) is
  refused unless it opens a whole page from a link (a top-level navigation, which only
  reads); a frame, an image, a script or a fetch is refused. Every answer also forbids
  framing (X-Frame-Options, CSP frame-ancestors).
- Writes: no GET changes anything (a recall, which is logged, is a POST). Every POST must
  come from this page itself: Sec-Fetch-Site, when sent, is `same-origin`, and Origin, when
  sent, is this exact host and port. Forms also carry a token signed with the process's
  secret; /api writes take application/json only, which another page cannot send without
  a preflight this server never answers.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from ...errors import ConfigError

if TYPE_CHECKING:
    from .state import Web

COOKIE = "cli_org_token"
CSRF_FIELD = "csrf"
_LOOPBACK_NAMES = ("localhost",)


class Refused(Exception):
    """A request the guard turns away, with its status and one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def new_secret() -> bytes:
    return secrets.token_bytes(32)


def new_token() -> str:
    """The page's token when the user set none: drawn afresh for each server's life."""
    return secrets.token_urlsafe(32)


def cookie_for(port: int) -> str:
    """The cookie's name: one per port, since a browser sends a host's cookies to all its
    ports and two servers (one per org, or a restart) must not overwrite each other's."""
    return f"{COOKIE}_{port}"


def login_url(host: str, port: int, token: str) -> str:
    """The address `cli-org serve` prints: opened once, it logs the browser in."""
    return f"http://{shown_host(host)}:{port}/?{urlencode({'token': token})}"


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """The bind rule: a non-loopback address needs a token the user chose (loopback
    gets a random one, and so does every other request, but plain HTTP over a network
    should be a decision, not a default)."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to serve on {host}, which is not a loopback address, without a token: "
            "set CLI_ORG_WEB_TOKEN (every request must then carry it), or use --host 127.0.0.1"
        )
    if token is not None and len(token) < 16:
        raise ConfigError("CLI_ORG_WEB_TOKEN is too short: use at least 16 characters (e.g. `openssl rand -hex 16`)")


def check_port(host: str, port: int) -> None:
    """A port another process listens on is one line before anything is opened (uvicorn
    would print its own error after the server said it was ready)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {shown_host(host)}:{port}: {exc.strerror or exc}; choose another with --port N"
            ) from None


def shown_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def hosts_for(host: str, port: int) -> frozenset[str]:
    """The Host headers served: for a loopback bind, the loopback names with the port (and
    without it on port 80, which browsers leave out); for any other bind (token required)
    any host, since the token already decides."""
    if not is_loopback(host):
        return frozenset()
    names = {shown_host(host), "localhost", "127.0.0.1", "[::1]"}
    return frozenset({f"{name}:{port}" for name in names} | (names if port == 80 else set()))


def csrf_token(secret: bytes) -> str:
    return hmac.new(secret, b"cli-org form", hashlib.sha256).hexdigest()


def _token_of(request: Request, cookie: str) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(cookie)


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode("utf-8", "replace"), b.encode())


def _another_origin(request: Request) -> bool:
    """A write another page caused: Sec-Fetch-Site other than same-origin, or an Origin that
    is not this exact host and port (a browser without Fetch Metadata still sends Origin)."""
    site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    if site is not None and site != "same-origin":
        return True
    if origin is None:
        return False  # not a browser (curl, a script): the token alone decides
    return origin == "null" or urlsplit(origin).netloc != request.headers.get("host", "")


# Sent with every answer: no other site may frame the page (clickjacking its forms), and
# browsers take each answer as the type it says.
HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}


def _from_another_site(request: Request) -> str | None:
    """Why a read another site's (or another port's) page caused is refused, or None."""
    if request.headers.get("sec-fetch-site") not in ("cross-site", "same-site"):
        return None
    whole_page = (
        request.headers.get("sec-fetch-mode", "navigate") == "navigate"
        and request.headers.get("sec-fetch-dest", "document") == "document"
    )
    return None if whole_page else "refused: another site's page may not fetch or frame this one"


# The whole page a visitor without the token gets: how to get in, and nothing of the org.
_VISITOR_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{status}</title></head>
<body><main><h1>{status}</h1><p>{message}</p></main></body></html>
"""


def _refusal(request: Request, status: int, message: str, *, visitor: bool = False) -> Response:
    """The refusal as JSON under /api/, else a page. A `visitor` (no token yet, or the wrong
    host) is shown nothing but the message: no navigation, no identity, no database name."""
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    if visitor:
        return HTMLResponse(_VISITOR_PAGE.format(status=status, message=html.escape(message)), status_code=status)
    from .view import render

    return HTMLResponse(render("error.html", request, status=status, message=message), status_code=status)


def middleware(web: Web) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        answer = await _checked(request, call_next)
        answer.headers.update(HEADERS)
        return answer

    async def _checked(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if web.hosts and request.headers.get("host", "") not in web.hosts:
            return _refusal(
                request, 421, "this page answers only to the loopback address it was started on", visitor=True
            )
        # The token on every request, loopback or not: another local user shares 127.0.0.1.
        # The address that carries it (tried before a cookie, which may be a stale one from
        # the last server) logs in.
        given = request.query_params.get("token") if request.method == "GET" else None
        if not _same(given or _token_of(request, web.cookie), web.token):
            return _refusal(
                request,
                401,
                "a token is required: open the address `cli-org serve` printed (it carries ?token=...), "
                "or send `Authorization: Bearer TOKEN`",
                visitor=True,
            )
        if given:
            kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            # One leading slash: "//site/" would send the browser to another site.
            address = "/" + request.url.path.lstrip("/") + ("?" + urlencode(kept) if kept else "")
            moved = RedirectResponse(address, status_code=303)
            moved.set_cookie(web.cookie, web.token, httponly=True, samesite="strict")
            return moved
        if why := _from_another_site(request):
            return _refusal(request, 403, why)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            if _another_origin(request):
                return _refusal(request, 403, "refused: this request came from another site's (or port's) page")
            kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if request.url.path.startswith("/api/"):
                if kind != "application/json":
                    return _refusal(request, 415, "send the request body as application/json")
            elif kind != "application/x-www-form-urlencoded":
                return _refusal(request, 415, "forms are posted as application/x-www-form-urlencoded")
        return await call_next(request)

    return guard


async def check_form(request: Request, web: Web) -> dict[str, str]:
    """The posted form's fields, once its CSRF token is the page's."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    if not _same(fields.get(CSRF_FIELD), web.csrf()):
        raise Refused(403, "refused: the form's CSRF token is missing or wrong; reload the page and try again")
    return fields
