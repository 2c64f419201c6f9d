"""The cli-org command group: parse, call one library function, render."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO, Any

import click

from ... import __version__
from ...config import dotenv_settings, load_dotenv
from ...errors import OrgError
from ...text import is_utf8, one_line, shown
from .common import Invocation


class OrgGroup(click.Group):
    """The one place where failures are rendered, for every command.

    An OrgError is one line on stderr with its exit code (1); a usage error (a missing or
    malformed argument or option, an unknown command) is one line with exit code 2. Under
    --json the line is {"error": "..."}, as gh does; exit codes do not change.
    """

    json_errors = False  # set per run by main()

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:
        args = list(sys.argv[1:] if args is None else args)
        # The warm helper's request (common.Invocation) brings its environment, .env merged.
        invocation = kwargs.get("obj")
        env = invocation.env if isinstance(invocation, Invocation) else os.environ
        # click reads ORG_AGENT (--as) and ORG_VIA (--via) from the environment while it
        # parses the command line, so .env has to be in the environment before that.
        if isinstance(invocation, Invocation):
            warnings = dotenv_settings(os.path.join(invocation.cwd, ".env"))[1]
        else:
            warnings = load_dotenv()
        for warning in warnings:
            click.echo(f"cli-org: warning: {warning}", err=True)
        # psycopg logs a second error when a pipeline ends on a dead connection ("error
        # ignored terminating Pipeline"); the one line below already says what happened
        # (stress/stopped.py found the extra line on stderr).
        logging.getLogger("psycopg").addHandler(logging.NullHandler())
        logging.getLogger("psycopg").propagate = False
        OrgGroup.json_errors = "--json" in (args[: args.index("--")] if "--" in args else args)
        # Arguments and ORG_*/CLI_ORG_* values that are not UTF-8 cannot reach the database
        # (Python holds the stray bytes as lone surrogates); refuse them here, for every command.
        problem = not_utf8(args, env)
        if problem:
            report(problem)
            sys.exit(0 if _is_hook(args) else 2)  # a hook fails open, never exits 2 (below)
        try:
            return super().main(args, *rest, **kwargs)
        except SystemExit as exc:
            # A harness reads a hook's exit 2 as "block this prompt": any usage error of a hook
            # command line (the group's options or the hook's own) is its one line and exit 0.
            if exc.code == 2 and _is_hook(args):
                sys.exit(0)
            raise

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        with _one_line_usage():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _one_line_usage():
                return super().invoke(ctx)
        except OrgError as exc:
            report(str(exc), exc.fields)
            ctx.exit(exc.exit_code)


def _is_hook(args: list[str]) -> bool:
    """Whether the command line runs `hook` (its first word that is not an option)."""
    return next((a for a in args if not a.startswith("-")), None) == "hook"


def report(message: str, fields: dict[str, Any] | None = None) -> None:
    """One line on stderr: JSON under --json (with the error's fields, OrgError.fields), else
    prefixed with the program's name."""
    message = one_line(message)  # every failure is one line: a name with a newline must not make a second
    if OrgGroup.json_errors:
        click.echo(json.dumps({"error": message, **(fields or {})}, ensure_ascii=False), err=True)
    else:
        click.echo(f"cli-org: {message}", err=True)


class _UsageLine(click.ClickException):
    """A usage error already turned into one line; click prints it through show()."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        report(self.message)


@contextmanager
def _one_line_usage() -> Iterator[None]:
    try:
        yield
    except (_UsageLine, click.exceptions.NoArgsIsHelpError):
        raise  # done, or a bare group: click shows its help
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "cli-org"
        message = one_line(exc.format_message()).rstrip(".")
        raise _UsageLine(f"{message[:1].lower()}{message[1:]} (see `{where} --help`)") from None


@click.group(cls=OrgGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cli-org")
def cli() -> None:
    """Org memory for teams of AI agents and people, on PostgreSQL.

    With no CLI_ORG_DATABASE_URL, cli-org starts (or reuses) a private PostgreSQL in the
    user data dir. Name the acting agent with ORG_AGENT or --as.
    """


def not_utf8(args: list[str], env: Mapping[str, str]) -> str | None:
    """A usage error naming the first argument or environment value that is not UTF-8."""
    for n, arg in enumerate(args, start=1):
        if not is_utf8(arg):
            if arg.startswith("--") and "=" in arg:
                where = f" ({arg.split('=', 1)[0]}=...)"
            elif n > 1 and args[n - 2].startswith("-"):
                where = f" (after {shown(args[n - 2])})"
            else:
                where = ""
            return f'argument {n}{where} is not valid UTF-8: "{shown(arg)}"'
    for name in sorted(env):
        if name.startswith(("ORG_", "CLI_ORG_")) and not (is_utf8(name) and is_utf8(env[name])):
            return f'environment variable {shown(name)} is not valid UTF-8: "{shown(env[name])}"'
    return None


# The commands a hook or a skill runs on every prompt load their own module only: loading
# all twelve command modules cost about 30 ms of CPU per cold start (`startup`).
ALONE = {"recall": "recall_cmd", "context": "context_cmd", "hook": "hook_cmd"}
_registered: set[str] = set()


def group(only: str | None = None) -> click.Group:
    """The command group with every command registered, or for a command named in ALONE
    just that one (the entry point's case)."""
    from importlib import import_module

    names = [ALONE[only]] if only in ALONE else list(MODULES)
    for name in names:
        if name not in _registered:
            _registered.add(name)
            for command in import_module(f"{__package__}.{name}").COMMANDS:
                cli.add_command(command)
    return cli


MODULES = [
    "db_cmd",
    "agents_cmd",
    "facts_cmd",
    "links_cmd",
    "activity_cmd",
    "pins_cmd",
    "proposals_cmd",
    "projects_cmd",
    "checks_cmd",
    "tidy_cmd",
    "review_cmd",
    "notebook_cmd",
    "context_cmd",
    "recall_cmd",
    "vault_cmd",
    "eval_cmd",
    "archive_cmd",
    "transfer_cmd",
    "setup_cmd",
    "hook_cmd",
    "mcp_cmd",
    "serve_cmd",
    "warm_cmd",
]
