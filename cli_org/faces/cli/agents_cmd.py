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
    help="Let the role log in with a password (prompted, or $ORG_AGENT_PASSWORD): for shared servers.",
)
@click.option("--role", metavar="ROLE", help="Map an existing role instead of creating <database>_<name>.")
@json_option
def add(name: str, lead: str | None, owner: bool, person: bool, login: bool, role: str | None, as_json: bool) -> None:
    """Add an agent (run as the database admin)."""
    from ...store.agents import add_agent

    password = None
    if login:
        password = os.environ.get("ORG_AGENT_PASSWORD") or click.prompt(
            "Password", hide_input=True, confirmation_prompt=True
        )
    with connection() as conn:
        agent = add_agent(conn, name, lead=lead, owner=owner, person=person, password=password, role=role)
    if as_json:
        emit_json(agent)
    else:
        click.echo(f"added {agent.kind} {agent.name} (role {agent.role_name})")


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
