"""The cli-org command line: parse, call one library function, render."""

from __future__ import annotations

import os
import sys

import click

from .. import __version__
from ..errors import OrgError
from ..text import is_utf8, shown


class OrgGroup(click.Group):
    """Turns every OrgError into one line on stderr and exit code 1."""

    def main(self, args=None, *rest, **kwargs):
        # Arguments and ORG_*/CLI_ORG_* values that are not UTF-8 cannot reach the database
        # (Python holds the stray bytes as lone surrogates); refuse them here, for every command.
        problem = not_utf8(sys.argv[1:] if args is None else list(args), os.environ)
        if problem:
            click.echo(f"cli-org: {problem}", err=True)
            sys.exit(2)
        return super().main(args, *rest, **kwargs)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except OrgError as exc:
            click.echo(f"cli-org: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=OrgGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cli-org")
def cli() -> None:
    """Org memory for teams of AI agents and people, on PostgreSQL.

    With no CLI_ORG_DATABASE_URL, cli-org starts (or reuses) a private PostgreSQL in the
    user data dir. Name the acting agent with ORG_AGENT or --as.
    """


def not_utf8(args: list[str], env) -> str | None:
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


def _register() -> None:
    from . import agents_cmd, archive_cmd, db_cmd, eval_cmd, facts_cmd, recall_cmd, vault_cmd

    for module in (db_cmd, agents_cmd, facts_cmd, recall_cmd, vault_cmd, eval_cmd, archive_cmd):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    cli(prog_name="cli-org")
