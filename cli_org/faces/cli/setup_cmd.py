"""setup: wire a harness to cli-org (the hooks it installs are in hook_cmd.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ...checks.rules import HARNESSES
from .common import AGENT, OsPath, connection, emit_json, json_option

if TYPE_CHECKING:
    from ...setup import SetupResult

SETUP_HARNESSES = ("claude-code", "codex", "hermes")
assert set(SETUP_HARNESSES) <= set(HARNESSES)


@click.command()
@click.argument("harness", type=click.Choice(SETUP_HARNESSES), metavar="HARNESS")
@click.option(
    "--agent",
    type=AGENT,
    metavar="NAME",
    envvar="ORG_AGENT",
    help="The agent the harness acts as (default: $ORG_AGENT).",
)
@click.option(
    "--project-dir",
    type=OsPath(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Set up this project only (default: user-wide, in your home folder).",
)
@click.option("--dry-run", is_flag=True, help="Print the changes as a diff; write nothing.")
@click.option("--remove", is_flag=True, help="Take out what setup wrote, as its record says.")
@click.option("--yes", is_flag=True, help="Create a missing agent without asking.")
@json_option
def setup(
    harness: str,
    agent: str | None,
    project_dir: Path | None,
    dry_run: bool,
    remove: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Wire a harness (claude-code, codex, hermes) to cli-org: its MCP server entry with the
    agent's identity, and Claude Code's hooks or an instruction block for the others.

    Running it twice changes nothing; setup keeps a record of what it wrote in your own
    cli-org folder (no file is left beside yours); --remove takes out only what it wrote.
    """
    from ...errors import InputError
    from ...setup import setup as run_setup

    created = missing = False
    if not remove:
        if not agent:
            raise InputError("name the agent: --agent NAME (or set ORG_AGENT)")
        created, missing = _ensure_agent(agent, dry_run=dry_run, yes=yes)
    result = run_setup(harness, agent=agent, project_dir=project_dir, remove=remove, dry_run=dry_run)
    # A dry run for an agent that does not exist says so last, where it is seen after the
    # diff, and what a real run would do about it.
    unknown = None
    if missing:
        then = "setup would create it" if yes else "setup would ask to create it (--yes: without asking)"
        unknown = f"warning: agent {agent!r} does not exist (check the name); {then}"
    if as_json:
        emit_json({**_summary(result), "agent_created": created, "agent_missing": missing})
        if unknown:
            click.echo(unknown, err=True)
        return
    if created:
        click.echo(f"created agent {agent}")
    if dry_run:
        click.echo(result.diff, nl=False)
    for change in result.changes:
        verb = {
            "create": "created",
            "edit": "removed" if remove else "edited",  # --remove took cli-org's part out of a file that stays
            "delete": "deleted",
            "restore": "restored as it was",
            "unchanged": "unchanged",
        }[change.action]
        if dry_run and change.action != "unchanged":
            verb = f"would be {verb}"
        click.echo(f"{change.path}: {change.what} {verb}")
    for note in result.notes:
        click.echo(f"note: {note}")
    if unknown:
        click.echo(unknown, err=True)


def _summary(result: SetupResult) -> dict[str, Any]:
    from dataclasses import asdict

    data = asdict(result)
    data["changes"] = [{k: v for k, v in c.items() if k not in ("before", "after", "here")} for c in data["changes"]]
    return data


def _ensure_agent(name: str, *, dry_run: bool, yes: bool) -> tuple[bool, bool]:
    """Create the agent when it is missing, after a confirmation: (created, missing and not
    created, as in a dry run)."""
    from ...errors import InputError
    from ...store.agents import add_agent, find_agent

    with connection() as conn:
        if find_agent(conn, name) is not None:
            return False, False
        if dry_run:
            return False, True
        if not yes:
            if not sys.stdin.isatty():
                raise InputError(
                    f"agent {name!r} does not exist; create it with --yes (or `cli-org agents add {name}`)"
                )
            if not click.confirm(f"Agent {name!r} does not exist. Create it?", default=False, err=True):
                raise InputError(f"agent {name!r} not created; nothing was changed")
        add_agent(conn, name)
        return True, False


COMMANDS = [setup]
