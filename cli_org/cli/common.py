"""Options and rendering shared by the commands."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from ..config import Settings
from ..rules import AGENT_NAME, MAX_ID

if TYPE_CHECKING:
    from ..db import Conn
    from ..vault.embedders import Embedder
    from ..warm.resident import Resident

# Usage errors (exit 2) for values a parameter's type cannot hold, found by the fuzz of every
# command (issue 21, finding 12): each rule's source is named where it is read.


class AgentName(click.ParamType):
    """An agent's name (rules.AGENT_NAME), checked while the command line is parsed."""

    name = "name"

    def convert(self, value, param, ctx):
        if not AGENT_NAME.match(value):
            rule = "lowercase letters, digits, '_' or '-', starting with a letter"
            self.fail(f"{value[:40]!r} is not an agent name: {rule}", param, ctx)
        return value


class Finite(click.FloatRange):
    """A FloatRange that also refuses nan, which passes every comparison of a range."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail("nan is not a number", param, ctx)
        return number


class OsPath(click.Path):
    """A click.Path the operating system can take: not empty, no NUL, no name longer than
    NAME_MAX bytes, not longer than PATH_MAX (a 10 KB name was an OSError traceback)."""

    def convert(self, value, param, ctx):
        raw = os.fsencode(value)
        if not raw:
            self.fail("is empty; name a file or folder", param, ctx)
        if b"\0" in raw:
            self.fail("contains a NUL character", param, ctx)
        if len(raw) >= PATH_MAX or any(len(part) > NAME_MAX for part in raw.split(b"/")):
            self.fail(f"is too long for a path ({len(raw)} bytes)", param, ctx)
        return super().convert(value, param, ctx)


# Linux's limits (limits.h): one name, and a whole path with its final NUL.
NAME_MAX = 255
PATH_MAX = 4096
AGENT = AgentName()
ID = click.IntRange(1, MAX_ID)  # a fact's, todo's or pin's id: a bigint (rules.MAX_ID)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
as_option = click.option(
    "--as", "agent", type=AGENT, metavar="NAME", envvar="ORG_AGENT", help="Act as this agent (default: $ORG_AGENT)."
)


def usage_error(check):
    """A click callback that runs a library check (raising InputError) on an option's value
    and turns its refusal into a usage error: the rule stays in the library, in one place."""

    def callback(ctx, param, value):
        from ..errors import InputError

        try:
            return check(value)
        except InputError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None

    return callback


def query_argument(name: str):
    """A required text argument that may not be empty or only whitespace: a usage error
    (exit 2) before anything starts, the same for recall, search and sessions search."""

    def refuse_empty(ctx, param, value):
        if value is not None and not value.strip():
            raise click.BadParameter("is empty; say what to look for", ctx=ctx, param=param)
        return value

    return click.argument(name, callback=refuse_empty)


def settings() -> Settings:
    return Settings.from_env()


# The warm helper's open model and connection while `warm serve` runs a command; None in a
# cold process.
_resident: Resident | None = None


@contextmanager
def resident(held: Resident) -> Iterator[None]:
    """Commands run inside this use `held` instead of opening their own model and connection."""
    global _resident
    _resident = held
    try:
        yield
    finally:
        _resident = None


@contextmanager
def agent_session(
    cfg: Settings, agent: str | None, *, embed: bool, read: bool = False
) -> Iterator[tuple[Embedder | None, Conn]]:
    """The query model (when `embed`) and a connection acting as `agent`, for one command:
    opened here and closed after, or lent by the warm helper that runs the command. `read`:
    the command only reads, so with CLI_ORG_READ_URL set the connection goes to the replica
    (the warm helper's resident connection is the primary's, so such a command opens its own)."""
    if _resident is not None and not (read and cfg.read_url):
        with _resident.session(cfg, agent, embed=embed) as pair:
            yield pair
        return
    from ..db.connect import connect
    from ..vault.embedders import opened, query_embedder

    if _resident is not None:  # a read sent to the replica, inside the helper: its model, our connection
        with connect(cfg, agent, read=read) as conn:
            yield _resident.embedder(cfg) if embed else None, conn
        return
    # The model starts loading now, beside the connection.
    with opened(query_embedder(cfg)[0] if embed else None) as embedder, connect(cfg, agent, read=read) as conn:
        yield embedder, conn


def record_on_primary(cfg: Settings, agent: str | None, result, embedder: Embedder | None) -> None:
    """After a recall read from the replica: its log line and lazy fact vectors, written on
    the primary. The answer is out already, so a primary that cannot be reached costs a
    notice on stderr, not the answer (docs/operations.md, "Read replicas")."""
    from ..db.connect import connect
    from ..errors import OrgError
    from ..recall.answer import record_recall

    try:
        with connect(cfg, agent) as conn:
            record_recall(conn, result, settings=cfg, embedder=embedder)
    except OrgError as exc:
        click.echo(f"notice: answered from the read replica; not logged on the primary ({exc})", err=True)


def in_helper() -> bool:
    """Whether this command runs inside the warm helper (which must never exit for it)."""
    return _resident is not None


def warm_up() -> None:
    """After a cold answer, start the warm helper in the background for the next call (never
    from inside the helper). Costs the caller one fork; the answer is out already."""
    if _resident is None:
        from ..warm.client import start

        start()


def emit_json(data) -> None:
    from ..render import plain

    click.echo(json.dumps(plain(data), ensure_ascii=False, indent=2))


def table(rows: list[dict], headers: list[str]) -> str:
    from tabulate import tabulate

    return tabulate([[r.get(h) for h in headers] for r in rows], headers=headers, tablefmt="plain")


class Progress:
    """A one-line progress counter on stderr, drawn only when stderr is a terminal; once
    the work has run a few seconds, with the time left at the average rate so far."""

    def __init__(self, label: str):
        import sys
        import time

        self.label = label
        self.enabled = sys.stderr.isatty()
        self.last = 0.0
        self.started = time.monotonic()

    def __call__(self, done: int, total: int, detail: str = "") -> None:
        import time

        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.1 and done < total):
            return
        self.last = now
        left = remaining(done, total, now - self.started)
        click.echo(f"\r\033[K{self.label}: {done}/{total} {detail[:60]}{left}", err=True, nl=False)

    def done(self) -> None:
        if self.enabled:
            click.echo("\r\033[K", err=True, nl=False)


# Below this the rate is mostly model loading and the first batch: no estimate yet.
ESTIMATE_AFTER_SECONDS = 3.0


def remaining(done: int, total: int, elapsed: float) -> str:
    """", about 2 min 10 s left" at the average rate so far; empty while it means little."""
    if done <= 0 or done >= total or elapsed < ESTIMATE_AFTER_SECONDS:
        return ""
    seconds = round((total - done) * elapsed / done)
    if seconds >= 3600:
        text = f"{seconds // 3600} h {seconds % 3600 // 60} min"
    elif seconds >= 60:
        text = f"{seconds // 60} min {seconds % 60} s"
    else:
        text = f"{seconds} s"
    return f", about {text} left"
