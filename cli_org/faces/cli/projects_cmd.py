"""projects: list them; restrict one to named agents (owners only)."""

from __future__ import annotations

import click

from .common import as_option, connection, emit_json, json_option


@click.group(invoke_without_command=True)
@as_option
@json_option
@click.pass_context
def projects(ctx: click.Context, agent: str | None, as_json: bool) -> None:
    """List the projects you may read: current facts, open todos, archived sessions, and
    whom each is restricted to.

    `cli-org projects restrict NAME --to AGENT[,AGENT...]` restricts one (owners only)."""
    if ctx.invoked_subcommand:
        return
    from ...store.projects import list_projects

    with connection(agent) as conn:
        found = list_projects(conn)
    if as_json:
        emit_json(found)
        return
    from ..render import projects_text

    click.echo(projects_text(found))


def _agents(value: str | None) -> list[str]:
    return [a.strip() for a in (value or "").split(",") if a.strip()]


@projects.command("restrict")
@click.argument("name")
@click.option("--to", "to", metavar="AGENTS", help="The agents who may read and write the project, comma-separated.")
@click.option("--add", "add", metavar="AGENTS", help="Add these agents (comma-separated) to the project's list.")
@click.option("--remove", "remove", is_flag=True, help="Lift the restriction: every member reads the project again.")
@as_option
@json_option
def restrict(name: str, to: str | None, add: str | None, remove: bool, agent: str | None, as_json: bool) -> None:
    """Restrict project NAME to the named agents (owners only): its facts, pins, todos,
    archived sessions, recall log and activity are then read, and written, only by those
    agents, their team leads and the owners; the database enforces it for every other member.

    --to replaces the list; --add extends it; --remove lifts the restriction."""
    from ...store.projects import access, lift
    from ...store.projects import restrict as do_restrict

    if sum(x is not None and x is not False for x in (to, add, remove)) != 1:
        raise click.UsageError("give exactly one of --to, --add or --remove")
    with connection(agent) as conn:
        if remove:
            n = lift(conn, name)
            result: dict[str, object] = {"project": name, "restricted_to": None, "lifted": n}
        else:
            names = _agents(to if to is not None else add)
            if not names:
                raise click.UsageError("name at least one agent (--to AGENT[,AGENT...])")
            if add is not None:
                names += access(conn, name) or []
            result = {"project": name, "restricted_to": do_restrict(conn, name, names), "lifted": 0}
    if as_json:
        emit_json(result)
    elif remove:
        click.echo(f"project {name}: not restricted" + ("" if result["lifted"] else " (it was not)"))
    else:
        click.echo(f"project {name}: restricted to {', '.join(result['restricted_to'])} (and their team leads, owners)")  # type: ignore[arg-type]


COMMANDS = [projects]
