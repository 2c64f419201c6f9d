"""The one object every face opens and asks: `Org`.

It owns what the CLI, the MCP server, the web page and the warm helper each used to hold
their own way: the settings and the acting agent, the connections and which server each
call goes to (the primary, or the read replica of CLI_ORG_READ_URL for a read), the query
model, the bounds of a call (limits.py) and the call log. Every operation a face offers is registered
once in registry.py with its effect, its rights and its route; the Org routes a call by it
(`serving`, `call`). A face opens one, asks it, and renders what comes back:

    with Org.open(Settings.from_env(), "mara", face="cli", embed=True) as org:
        print(org.recall("why did the payments job fail?").result.text)

How connections are had depends on the face's life (the long-lived-process rule,
docs/design.md):
- `pool=None` (a command): a connection opened per call and closed after it, or the one the
  warm helper lends while it runs the command (`lender`);
- `pool=N` (a server): a pool of N to the primary, and one of N to the replica when there
  is one, kept until the Org is closed. Calls wait for a free connection.

One rule lives here and nowhere else: a read served by the replica has its side writes (the
recall log line, the lazy fact vectors) and the call's log line made on the primary after
the answer, and a primary out of reach costs a notice, never the answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import psycopg

from ..config import Settings
from ..errors import OrgError
from ..limits import RECALL_HITS
from . import registry
from .registry import Route

if TYPE_CHECKING:
    from ..db import Conn
    from ..db.pool import Pool
    from ..recall.answer import RecallResult
    from ..session.context import Context
    from ..vault.embedders import Embedder

R = TypeVar("R")


class Lender(Protocol):
    """What the warm helper lends a command it runs: its model and its open connection."""

    def embedder(self, settings: Settings) -> Embedder | None: ...

    def connection(self, settings: Settings, agent: str | None) -> AbstractContextManager[Conn]: ...


def _stderr(message: str) -> None:
    import sys

    print(message, file=sys.stderr)


@dataclass
class Recalled:
    """A recall's answer, and why its log line could not be written, when it could not."""

    result: RecallResult
    unlogged: str | None = None


@dataclass
class Org:
    """Open it with `Org.open(...)`, which closes what it opened; see the module's doc."""

    settings: Settings
    agent: str | None  # None: the login role
    face: str  # cli, mcp or web; the faces that log their calls name themselves in tool_calls (mcp)
    embedder: Embedder | None = None
    notify: Callable[[str], None] = _stderr  # where a notice goes (an answer that stands without its log line)
    pool: Pool | None = None  # a server's connections to the primary
    reads: Pool | None = None  # and to the replica, when there is one
    lender: Lender | None = field(default=None, repr=False)  # the warm helper's, while it runs a command

    @classmethod
    @contextmanager
    def open(
        cls,
        settings: Settings,
        agent: str | None,
        *,
        face: str,
        embed: bool = False,
        pool: int | None = None,
        notify: Callable[[str], None] = _stderr,
        lender: Lender | None = None,
        lazy: bool = False,
    ) -> Iterator[Org]:
        """The Org of one command (`pool=None`) or of a server's life (`pool=N`): the query
        model when `embed` (it starts loading now, beside the first connection, or with
        `lazy` at the first call that embeds; None when no model has been exported yet), and
        connections acting as `agent`; with `lender` (the warm helper running a command),
        its model and connection instead."""
        from ..vault.embedders import opened, query_embedder

        with ExitStack() as stack:
            if pool is None and lender is not None:
                model = lender.embedder(settings) if embed else None
                yield cls(settings, agent, face, model, notify, lender=lender)
                return
            model = stack.enter_context(opened(query_embedder(settings, start=not lazy)[0] if embed else None))
            primary = reads = None
            if pool is not None:
                from ..db.pool import open_pool

                primary = stack.enter_context(open_pool(settings, agent, max_size=pool))
                if settings.read_url:
                    reads = stack.enter_context(open_pool(settings, agent, max_size=pool, read=True))
            yield cls(settings, agent, face, model, notify, primary, reads)

    # --- connections and where each call goes -------------------------------------------

    @contextmanager
    def connection(self, *, read: bool = False, bounded: bool = True) -> Iterator[Conn]:
        """A connection acting as the agent: the replica's for a `read` when there is one,
        else the primary's. `bounded=False`: long admin work, no statement timeout (a
        command's own connection; a pool's are bounded)."""
        replica = read and bool(self.settings.read_url)
        if self.pool is not None:
            with (self.reads if replica and self.reads is not None else self.pool).connection() as conn:
                yield conn
        elif self.lender is not None and not replica and bounded:
            with self.lender.connection(self.settings, self.agent) as conn:
                yield conn
        else:
            from ..db.connect import connect

            with connect(self.settings, self.agent, read=read, bounded=bounded) as conn:
                yield conn

    @contextmanager
    def serving(self, operation: str) -> Iterator[Conn]:
        """The connection registered `operation` runs on (registry.py's route): the replica's
        for a read that may be stale when there is one, the primary's otherwise, unbounded
        for long admin work."""
        route = registry.operation(operation).route
        if route is Route.NONE:
            raise ValueError(f"{operation} runs on no connection of the Org's")
        with self.connection(read=route is Route.REPLICA, bounded=route is not Route.LONG) as conn:
            yield conn

    def call(self, operation: str, fn: Callable[[Conn], R]) -> R:
        """fn(conn) on the connection registered `operation` runs on (see `serving`)."""
        with self.serving(operation) as conn:
            return fn(conn)

    def run(self, fn: Callable[[Conn], R]) -> R:
        """fn(conn) on one connection of the primary (see `connection`)."""
        with self.connection() as conn:
            return fn(conn)

    def on_primary(self, fn: Callable[[Conn], object]) -> str | None:
        """The side writes of a read the replica served, on the primary, after the answer:
        None when written, else the notice that says what was not (and also sent to
        `notify`). The answer stands either way."""
        try:
            self.run(fn)
            return None
        except (OrgError, psycopg.Error) as exc:  # a pool's timeout is a psycopg error too
            notice = f"answered from the read replica; not logged on the primary ({exc})"
            self.notify(notice)
            return notice

    # --- the questions every face asks ----------------------------------------------------

    def recall(
        self,
        question: str,
        *,
        project: str | None = None,
        limit: int = RECALL_HITS.default,
        arms: tuple[str, ...] | None = None,
        shown: Callable[[RecallResult], object] | None = None,
    ) -> Recalled:
        """Recall on a read connection; a recall the replica served is recorded on the
        primary after `shown` (a face's printing) has the answer, so a slow primary never
        delays it."""
        from ..db.connect import on_replica
        from ..recall import ARMS
        from ..recall.answer import recall

        def ask(conn: Conn) -> tuple[RecallResult, bool]:
            found = recall(
                conn,
                question,
                settings=self.settings,
                project=project,
                limit=limit,
                arms=arms or ARMS,
                embedder=self.embedder,
            )
            return found, on_replica(conn)

        result, replica = self.call("recall", ask)
        if shown is not None:
            shown(result)
        return Recalled(result, self._record(result) if replica else None)

    def context(self, **kwargs: Any) -> Context:
        """The session context block (session/context.py build_context's arguments). With
        `session` it records what it delivered, a write, so it runs on the primary; a block
        with `for_text` read from the replica has its recall recorded on the primary."""
        from ..db.connect import on_replica
        from ..session.context import build_context

        recalled: list[RecallResult] = []

        def build(conn: Conn) -> tuple[Context, bool]:
            block = build_context(
                conn, settings=self.settings, embedder=self.embedder, recalled=recalled.append, **kwargs
            )
            return block, on_replica(conn)

        if kwargs.get("session") is None:
            block, replica = self.call("context", build)
        else:  # it records what it delivered to the session: a write, on the primary
            block, replica = self.run(build)
        if replica:
            for result in recalled:
                self._record(result)
        return block

    def _record(self, result: RecallResult) -> str | None:
        from ..recall.answer import record_recall

        return self.on_primary(lambda conn: record_recall(conn, result))

    # --- the call log ---------------------------------------------------------------------

    def log_call(self, tool: str, ok: bool, started: float, conn: Conn | None = None) -> None:
        """One line in tool_calls for a call this face served (on `conn` when it is the
        primary's and still open, else on a primary connection of its own). A log line that
        cannot be written costs a notice; the call's answer stands."""
        from ..archive.usage import log_call
        from ..db.connect import on_replica

        def write(c: Conn) -> None:
            log_call(c, face=self.face, tool=tool, ok=ok, ms=(time.perf_counter() - started) * 1000)

        try:
            if conn is not None and not on_replica(conn):
                write(conn)
            else:
                self.run(write)
        except Exception as exc:  # the call's answer matters more than its log line
            self.notify(f"could not log a call to {tool}: {exc}")
