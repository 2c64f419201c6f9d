"""agents add / list."""

from __future__ import annotations

import os

import click

from ..render import table
from .common import AGENT, connection, emit_json, json_option


@click.group()
def agents() -> None:
    """Agents (bots and people); each is a PostgreSQL role in the member group."""


@agents.command("add")
@click.argument("name", type=AGENT)
@click.option("--lead", type=AGENT, metavar="NAME", help="Team lead, who may retire this agent's facts.")
@click.option("--owner", is_flag=True, help="An owner may retire any fact.")
@click.option("--person", is_flag=True, help="A person rather than a bot.")
@click.option(
    "--login",
    is_flag=True,
    help="Let the role log in with a password, for shared servers: from $ORG_AGENT_PASSWORD, "
    "else from stdin with --password-stdin, else prompted on a terminal.",
)
@click.option(
    "--password-stdin",
    is_flag=True,
    help="With --login: read the password from the first line of stdin (e.g. from a password manager).",
)
@click.option("--role", metavar="ROLE", help="Map an existing role instead of creating <database>_<name>.")
@json_option
def add(
    name: str,
    lead: str | None,
    owner: bool,
    person: bool,
    login: bool,
    password_stdin: bool,
    role: str | None,
    as_json: bool,
) -> None:
    """Add an agent (run as the database admin).

    The --login password is never an argument (other users see a command line): set
    ORG_AGENT_PASSWORD, pipe it with --password-stdin, or type it at the prompt."""
    from ...store.agents import add_agent

    password = _password() if login or password_stdin else None
    with connection() as conn:
        agent = add_agent(conn, name, lead=lead, owner=owner, person=person, password=password, role=role)
    if as_json:
        emit_json(agent)
    else:
        click.echo(f"added {agent.kind} {agent.name} (role {agent.role_name})")


def _password() -> str:
    """The --login password: $ORG_AGENT_PASSWORD, else stdin's first line with
    --password-stdin (its line ending dropped), else a hidden prompt when there is a terminal.
    Never echoed; without any of them, one line saying so instead of a prompt that aborts."""
    import sys

    from ...errors import InputError
    from ...store.agents import check_password

    ctx = click.get_current_context()
    if "ORG_AGENT_PASSWORD" in os.environ:
        return check_password(os.environ["ORG_AGENT_PASSWORD"], "ORG_AGENT_PASSWORD")
    if ctx.params.get("password_stdin"):
        if sys.stdin.isatty():
            raise InputError(
                "--password-stdin reads a pipe, not a terminal (a terminal would echo the password): "
                "drop it to be prompted"
            )
        line = sys.stdin.readline()
        extra = sys.stdin.read(1)  # a second line: the password held a line break
        text = line[:-1] if line.endswith("\n") else line
        text = text[:-1] if text.endswith("\r") else text
        return check_password(text + ("\n" if extra else ""), "stdin")
    if not sys.stdin.isatty():
        raise InputError(
            "--login needs a password and there is no terminal to ask on: set ORG_AGENT_PASSWORD, "
            "or pipe it with --password-stdin"
        )
    return check_password(click.prompt("Password", hide_input=True, confirmation_prompt=True), "the prompt")


@agents.command("list")
@json_option
def list_cmd(as_json: bool) -> None:
    """List agents, their leads and owners."""
    from ...store.agents import list_agents

    with connection() as conn:
        found = list_agents(conn)
    if as_json:
        emit_json(found)
        return
    rows = [
        {
            "name": a.name,
            "kind": a.kind,
            "lead": a.team_lead or "",
            "owner": "yes" if a.is_owner else "",
            "role": a.role_name,
        }
        for a in found
    ]
    click.echo(table(rows, ["name", "kind", "lead", "owner", "role"]) if rows else "no agents yet")


COMMANDS = [agents]
