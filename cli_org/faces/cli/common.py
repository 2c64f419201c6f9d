"""Options and rendering shared by the commands."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ...checks.rules import AGENT_NAME, FIELD_RULES, MAX_ID
from ...config import Settings
from ...limits import check_words
from ...text import one_line

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from ...db import Conn
    from ...org import Lender, Org

# Usage errors (exit 2) for values a parameter's type cannot hold, found by the fuzz of every
# command (tests/test_fuzz.py): each rule's source is named where it is read.


class AgentName(click.ParamType[str, str]):
    """An agent's name (rules.AGENT_NAME), checked while the command line is parsed."""

    name = "name"

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not AGENT_NAME.match(value):
            rule = "lowercase letters, digits, '_' or '-', starting with a letter"
            self.fail(f"{value[:40]!r} is not an agent name: {rule}", param, ctx)
        return value


class ProjectName(click.ParamType[str, str]):
    """A project's name (rules.FIELD_RULES["project"], the database's rule too), checked while
    the command line is parsed: a usage error, exit 2 (a name with a line break once ran
    `tidy` and exited 0). The empty name passes: where a command takes it, it means none."""

    name = "project"

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None) -> str:
        shape, longest = FIELD_RULES["project"]
        if value and (len(value) > longest or not re.fullmatch(shape or ".*", value)):
            rule = "letters, digits, '.', '_' or '-' (at most 64)"
            self.fail(f"{value[:40]!r} is not a project name: {rule}", param, ctx)
        return value


class Finite(click.FloatRange):
    """A FloatRange that also refuses nan, which passes every comparison of a range."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail("nan is not a number", param, ctx)
        return number


class OsPath(click.Path):
    """A click.Path the operating system can take: not empty, no NUL, no name longer than
    NAME_MAX bytes, not longer than PATH_MAX (a 10 KB name was an OSError traceback)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
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
PROJECT = ProjectName()


def project_option(help: str) -> Callable[[F], F]:  # noqa: A002 (click's own name)
    return click.option("--project", metavar="P", type=PROJECT, help=help)


@dataclass(frozen=True)
class Invocation:
    """What the warm helper hands a command it runs in its own process, as click's context
    object (`cli.main(..., obj=Invocation(...))`): the request's environment (its .env
    merged in by the caller), working folder and input, and the model and connection the
    helper lends (org.Lender). The helper's own environment, folder and stdin stay as they are."""

    env: dict[str, str]
    cwd: str
    stdin: str
    lender: Lender

    def settings(self) -> Settings:
        """Settings.from_env of the request; the project root found from its folder (as a
        cold run finds it from the current one) when ORG_ROOT does not name it."""
        from dataclasses import replace
        from pathlib import Path

        from ...local.project import project_root

        here = Path(self.cwd)
        found = Settings.from_env(self.env)
        # A relative ORG_ROOT, ORG_VAULT or CLI_ORG_DATA_DIR means the request's folder, as in a
        # cold run there, not the helper's own (joining keeps an absolute one as it is).
        found = replace(
            found,
            data_dir=here / found.data_dir,
            vault=here / found.vault if found.vault else None,
            root=str(here / found.root) if found.root else None,
        )
        return found if found.root else replace(found, root=str(project_root(cwd=here)))


def invoked() -> Invocation | None:
    """The warm helper's request this command runs for; None in a cold process."""
    ctx = click.get_current_context(silent=True)
    return ctx.find_object(Invocation) if ctx is not None else None


def stdin_text() -> str:
    """The command's input: the request's in the warm helper, else this process's stdin."""
    import sys

    invocation = invoked()
    return invocation.stdin if invocation is not None else sys.stdin.read()


class EnvOption(click.Option):
    """An option with a default from the environment (`envvar`): the request's environment
    when the warm helper runs the command (Invocation.env), else this process's."""

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        invocation = ctx.find_object(Invocation)
        if invocation is None or not isinstance(self.envvar, str):
            return super().resolve_envvar_value(ctx)
        return invocation.env.get(self.envvar) or None


ID = click.IntRange(1, MAX_ID)  # a fact's, todo's or pin's id: a bigint (rules.MAX_ID)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
as_option = click.option(
    "--as",
    "agent",
    cls=EnvOption,
    type=AGENT,
    metavar="NAME",
    envvar="ORG_AGENT",
    help="Act as this agent (default: $ORG_AGENT).",
)


def usage_error(check: Callable[[Any], Any]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback that runs a library check (raising InputError) on an option's value
    and turns its refusal into a usage error: the rule stays in the library, in one place."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        from ...errors import InputError

        try:
            return check(value)
        except InputError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None

    return callback


def query_argument(name: str) -> Callable[[F], F]:
    """A required text argument that may not be empty or only whitespace: a usage error
    (exit 2) before anything starts, the same for recall, search and sessions search; the
    rule is the library's (limits.check_words), which the MCP tools apply too."""
    return click.argument(name, callback=usage_error(check_words))


def settings() -> Settings:
    """The command's settings: the environment's, or those of the request the warm helper
    runs (Invocation.settings)."""
    invocation = invoked()
    return invocation.settings() if invocation is not None else Settings.from_env()


def _notice(message: str) -> None:
    click.echo(f"notice: {message}", err=True)


def this_operation() -> str:
    """The registered operation of the command being run (org/registry.py): what routes its
    connection. A command that offers two (`tidy`) names the one it does instead."""
    from ...org.registry import CLI, only

    names: list[str] = []
    ctx: click.Context | None = click.get_current_context()
    while ctx is not None and ctx.parent is not None:  # up to the group, whatever its program name
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return only(CLI, " ".join(names)).name


@contextmanager
def org(agent: str | None, *, cfg: Settings | None = None, embed: bool = False) -> Iterator[Org]:
    """The Org of one command (cli_org/org): its connections act as `agent`, the query
    model is loaded when `embed`, notices go to stderr; lent by the warm helper that runs
    the command, if one does."""
    from ...org import Org

    invocation = invoked()
    lender = invocation.lender if invocation is not None else None
    with Org.open(cfg or settings(), agent, face="cli", embed=embed, notify=_notice, lender=lender) as opened:
        yield opened


@contextmanager
def connection(agent: str | None = None, *, cfg: Settings | None = None) -> Iterator[Conn]:
    """One connection acting as `agent` (None: the login role) for a command: its Org's, where
    the command's registered operation runs."""
    with org(agent, cfg=cfg) as opened, opened.serving(this_operation()) as conn:
        yield conn


def warm_up() -> None:
    """After a cold answer, start the warm helper in the background for the next call (never
    from inside the helper). Costs the caller one fork; the answer is out already."""
    if invoked() is None:
        from ..warm.client import start

        start()


def emit_json(data: object) -> None:
    from ..render import plain

    click.echo(json.dumps(plain(data), ensure_ascii=False, indent=2))


class Progress:
    """Progress of long work on stderr. On a terminal: one line redrawn in place. Elsewhere (a
    log, a pipe, CI): a plain line every PLAIN_EVERY_SECONDS, so work that runs for minutes
    is not silent, and work that ends sooner prints nothing. Once the work has run a few
    seconds, the line says the time left at the average rate so far."""

    def __init__(self, label: str):
        import sys
        import time

        self.label = label
        self.terminal = sys.stderr.isatty()
        self.started = time.monotonic()
        self.last = 0.0

    def __call__(self, done: int, total: int, detail: str = "") -> None:
        import time

        now = time.monotonic()
        if self.terminal:
            if now - self.last < 0.1 and done < total:
                return
        elif now - max(self.last, self.started) < PLAIN_EVERY_SECONDS:
            return
        self.last = now
        left = remaining(done, total, now - self.started)
        if self.terminal:
            click.echo(f"\r\033[K{self.label}: {done}/{total} {detail[:60]}{left}", err=True, nl=False)
        else:
            what = f" {one_line(detail[:60])}" if detail else ""
            click.echo(f"{self.label}: {done}/{total}{what}{left}", err=True)

    def done(self) -> None:
        if self.terminal:
            click.echo("\r\033[K", err=True, nl=False)


# Off a terminal, a progress line this often (a log gets a few lines a minute, not hundreds).
PLAIN_EVERY_SECONDS = 10.0

# Below this the rate is mostly model loading and the first batch: no estimate yet.
ESTIMATE_AFTER_SECONDS = 3.0


def remaining(done: int, total: int, elapsed: float) -> str:
    """ ", about 2 min 10 s left" at the average rate so far; empty while it means little."""
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
