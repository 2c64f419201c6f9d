"""The web page: one ASGI application for the people who run the agents.

A face like the CLI and the MCP server: each route parses its input, calls the library
function the matching command calls, and renders the result (HTML from a template, or the
same data as JSON under /api/...). It never imports click and holds no rule of its own.

- Identity: the agent (usually a person) named by --as / ORG_AGENT on the embedded server,
  or the login role of CLI_ORG_DATABASE_URL, fixed when the server starts. Every query runs
  on a connection acting as it, so row-level security applies to every page and every write.
- Connections: the process's Org (cli_org/org) holds a pool of four for its life (the
  long-lived-process rule, docs/design.md), a second for reads when CLI_ORG_READ_URL is
  set, and the query model, closed on exit. Routes are plain functions, served in worker
  threads, each asking the Org, or taking one of its connections for one library call.
- Security (one place each, in guard.py): a token on every request, loopback included
  (another local user shares 127.0.0.1); a non-loopback address only with a token the user
  chose; the Host header checked against the address served; writes only from the page's
  own origin, forms with their CSRF token, /api writes as JSON.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from ... import __version__
from ...errors import AccessDenied, ConfigError, DatabaseError, InputError, NotFound, OrgError
from . import guard
from .state import Web
from .view import ENV, STATIC_DIR, render

if TYPE_CHECKING:
    from ...config import Settings

R = TypeVar("R")


def status_for(exc: OrgError) -> int:
    """The HTTP status of each kind of expected failure (the CLI's exit 1 with one line)."""
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, AccessDenied):
        return 403
    if isinstance(exc, InputError):
        return 400
    if isinstance(exc, DatabaseError):
        return 503
    return 500


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def create_app(web: Web) -> FastAPI:
    """The application over `web`; whoever made `web` opens and closes its pools."""
    app = FastAPI(
        title="cli-org",
        version=__version__,
        description="The org memory's facts, agents, recall, usage and evaluation, as JSON.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.web = web
    app.middleware("http")(guard.middleware(web))

    @app.exception_handler(OrgError)
    async def refused(request: Request, exc: OrgError) -> Response:
        status = status_for(exc)
        if wants_json(request):
            return JSONResponse({"error": str(exc)}, status_code=status)
        return HTMLResponse(render("error.html", request, status=status, message=str(exc)), status_code=status)

    @app.exception_handler(psycopg.OperationalError)
    async def unreachable(request: Request, exc: psycopg.OperationalError) -> Response:
        # What the library does not translate: a connection lost outside a library call. The
        # page says so, as a 503; the pool replaces the connection for the next request.
        return await refused(request, DatabaseError("lost the connection to the database; try again in a moment"))

    @app.exception_handler(guard.Refused)
    async def guarded(request: Request, exc: guard.Refused) -> Response:
        if wants_json(request):
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        return HTMLResponse(
            render("error.html", request, status=exc.status, message=exc.message), status_code=exc.status
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(_problem(e) for e in exc.errors()[:3])
        if wants_json(request):  # the one shape of every refusal (docs/web.md): {"error": ...}
            return JSONResponse({"error": problems}, status_code=422)
        return HTMLResponse(render("error.html", request, status=422, message=problems), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_refused(request: Request, exc: StarletteHTTPException) -> Response:
        # FastAPI's and Starlette's own refusals (a body that is not JSON: 400; no such
        # route: 404; 405) answered {"detail": ...}: the same shape as every other refusal.
        message = exc.detail if isinstance(exc.detail, str) else "refused"
        if wants_json(request):
            return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)
        page = render("error.html", request, status=exc.status_code, message=message)
        return HTMLResponse(page, status_code=exc.status_code, headers=exc.headers)

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/facts", status_code=303)

    from .pages import ROUTERS

    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _resolve_routes(app)
    for name in ENV.list_templates():  # compiled once a process, kept by ENV
        ENV.get_template(name)  # (the first page of a kind paid 20-30 ms of CPU, 90-170 ms loaded)
    return app


# A path no route matches: matching it walks every route (_resolve_routes).
_UNROUTED = {"type": "http", "method": "GET", "path": "/\x00", "root_path": "", "headers": [], "query_string": b""}


def _resolve_routes(app: FastAPI) -> None:
    """Have FastAPI build every route's validators now. It builds those of an included
    router's routes (a TypeAdapter per parameter and response model) on the first request
    that is matched against them, so the first request for a page late in the list paid
    for all the routes before it: 450 ms of the Usage page's first request of 650 ms
    (benchmarks/usage_scale.py --before). Matching a path no route takes walks them all."""
    for route in app.router.routes:
        route.matches(_UNROUTED)


def _problem(error: dict[str, Any]) -> str:
    """One line for one invalid parameter: `q: Field required`."""
    where = ".".join(str(part) for part in error.get("loc", ())[1:]) or "request"
    return f"{where}: {error.get('msg', 'invalid')}"


@contextmanager
def opened(
    settings: Settings, agent: str | None, *, token: str, hosts: frozenset[str], cookie: str = guard.COOKIE
) -> Iterator[Web]:
    """The pools and the query model for a server's life; closed on exit. The model loads at
    the first page that embeds (recall, search, a fact's write): loaded at the start, it
    took the CPU from the first page of every other kind (the Usage page's first request:
    benchmarks/usage_scale.py)."""
    from ...org import Org

    if settings.embedded and not agent:
        raise ConfigError("say who the page acts as: --as NAME or ORG_AGENT (a person, usually)")
    _check_schema(settings)
    with Org.open(settings, agent, face="web", embed=True, pool=4, lazy=True) as org:
        yield Web(org, token=token, cookie=cookie, hosts=hosts)


def _check_schema(settings: Settings) -> None:
    """Refuse to serve a database behind the code (a page would fail on a column an upgrade
    added). Read as the admin on the embedded server; a login that may not read the
    migration log (an agent's own, on a team server) is not checked."""
    import psycopg

    from ...db.connect import connect
    from ...db.migrate import behind

    try:
        with connect(settings) as conn:
            todo = behind(conn)
    except psycopg.errors.InsufficientPrivilege:
        return
    if todo is None:
        raise ConfigError("this database was never initialised: run `cli-org init` first")
    if todo:
        raise ConfigError(
            f"this database is {len(todo)} migration(s) behind cli-org ({', '.join(todo)}): run `cli-org init` first"
        )


def serve(settings: Settings, agent: str | None, host: str, port: int, *, log: Callable[[str], None]) -> None:
    """Check the address, open everything, serve until interrupted, close everything."""
    import uvicorn

    guard.check_bind(host, settings.web_token)
    guard.check_port(host, port)
    token = settings.web_token or guard.new_token()  # a token on loopback too: another local user shares 127.0.0.1
    started = time.perf_counter()
    cookie = guard.cookie_for(port)
    with opened(settings, agent, token=token, hosts=guard.hosts_for(host, port), cookie=cookie) as web:
        app = create_app(web)

        @asynccontextmanager
        async def announce(_app: FastAPI) -> AsyncIterator[None]:
            who = agent or "the login role"
            ready = time.perf_counter() - started
            # The address logs the browser in once; a token the user set is not printed.
            address = (
                f"http://{guard.shown_host(host)}:{port}/ (token: CLI_ORG_WEB_TOKEN)"
                if settings.web_token
                else guard.login_url(host, port, token)
            )
            log(f"cli-org serve: {address} as {who} (ready in {ready:.1f} s; Ctrl-C stops)")
            yield

        app.router.lifespan_context = announce
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
