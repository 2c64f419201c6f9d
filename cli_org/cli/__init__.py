"""The cli-org command line: parse, call one library function, render."""

from __future__ import annotations

import click

from .. import __version__
from ..errors import OrgError


class OrgGroup(click.Group):
    """Turns every OrgError into one line on stderr and exit code 1."""

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


def _register() -> None:
    from . import agents_cmd, archive_cmd, db_cmd, eval_cmd, facts_cmd, recall_cmd, vault_cmd

    for module in (db_cmd, agents_cmd, facts_cmd, recall_cmd, vault_cmd, eval_cmd, archive_cmd):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    cli(prog_name="cli-org")
