"""pin / unpin / pins / restore / todo."""

from __future__ import annotations

import click

from ..render import pinned_line, pins_text, restored_text, todos_text
from .common import ID, as_option, connection, emit_json, json_option, org, project_option, this_operation


@click.command()
@click.argument("fact_id", type=ID, metavar="ID")
@project_option("Pin in this project (default: the fact's project, else org-wide).")
@as_option
@json_option
def pin(fact_id: int, project: str | None, agent: str | None, as_json: bool) -> None:
    """Pin a current fact so that every session gets it (10 org-wide, 5 per project)."""
    from ...store.pins import pin as do_pin

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        result = do_pin(conn, fact_id, project, via=opened.settings.via)
    if as_json:
        emit_json(result)
    else:
        click.echo(pinned_line("pinned", result))


@click.command()
@click.argument("fact_id", type=ID, metavar="ID")
@as_option
@json_option
def unpin(fact_id: int, agent: str | None, as_json: bool) -> None:
    """Unpin a fact; the pin stays in the history with who unpinned it and when."""
    from ...store.pins import unpin as do_unpin

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        result = do_unpin(conn, fact_id, via=opened.settings.via)
    if as_json:
        emit_json(result)
    else:
        click.echo(pinned_line("unpinned", result))


@click.command("pins")
@project_option("The org-wide pins and this project's (default: every project's).")
@click.option("--all", "include_unpinned", is_flag=True, help="Include unpinned pins, with who and when.")
@as_option
@json_option
def pins_list(project: str | None, include_unpinned: bool, agent: str | None, as_json: bool) -> None:
    """List the pinned facts, org-wide ones first."""
    from ...store.pins import list_pins

    with connection(agent) as conn:
        found = list_pins(conn, project=project, include_unpinned=include_unpinned)
    if as_json:
        emit_json(found)
    else:
        click.echo(pins_text(found))


@click.command()
@click.argument("fact_id", type=ID, metavar="ID")
@click.argument("why")
@as_option
@json_option
def restore(fact_id: int, why: str, agent: str | None, as_json: bool) -> None:
    """Bring a forgotten fact back: its author, their team lead or an owner may.

    The pin that forgetting it ended comes back too, in the same scope and under the name of
    whoever pinned it, unless that scope has since filled to its cap (then it says so)."""
    from ...store.facts import restore as do_restore

    with org(agent, embed=True) as opened, opened.serving(this_operation()) as conn:
        fact = do_restore(conn, fact_id, why, embedder=opened.embedder, via=opened.settings.via)
    if as_json:
        emit_json({"id": fact.id, "restored": True, "why": why.strip(), "pin": fact.pin})
        return
    click.echo(restored_text(fact))


@click.group()
def todo() -> None:
    """Open items per project, with no expiry; done items are kept."""


@todo.command("add")
@click.argument("text")
@project_option("The project it belongs to (default: org-wide).")
@as_option
@json_option
def todo_add(text: str, project: str | None, agent: str | None, as_json: bool) -> None:
    """Add an open item as the acting agent; prints its id."""
    from ...store.todos import add_todo, check_todo

    check_todo(text, project)  # refuse bad input before touching the database
    with org(agent) as opened, opened.serving(this_operation()) as conn:
        item = add_todo(conn, text, project, via=opened.settings.via)
    if as_json:
        emit_json(item)
    else:
        click.echo(item.id)


@todo.command("done")
@click.argument("todo_id", type=ID, metavar="ID")
@as_option
@json_option
def todo_done(todo_id: int, agent: str | None, as_json: bool) -> None:
    """Mark an item done (kept, with who and when): its author, their team lead or an owner may."""
    from ...store.todos import done_todo

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        item = done_todo(conn, todo_id, via=opened.settings.via)
    if as_json:
        emit_json(item)
    else:
        click.echo(f"done {todo_id}")


@todo.command("list")
@project_option("The org-wide items and this project's (default: every project's).")
@click.option("--all", "include_done", is_flag=True, help="Include done items.")
@as_option
@json_option
def todo_list(project: str | None, include_done: bool, agent: str | None, as_json: bool) -> None:
    """List open items, org-wide ones first."""
    from ...store.todos import list_todos

    with connection(agent) as conn:
        found = list_todos(conn, project=project, include_done=include_done)
    if as_json:
        emit_json(found)
    else:
        click.echo(todos_text(found))


COMMANDS = [pin, unpin, pins_list, restore, todo]
