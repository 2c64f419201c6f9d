"""notebook show / add / replace / patch / remove / history / import."""

from __future__ import annotations

from pathlib import Path

import click

from ...checks.rules import NOTEBOOK_STORES
from ..render import change_line, notebook_text
from .common import OsPath, as_option, connection, emit_json, json_option, org, this_operation

target_option = click.option(
    "--target", type=click.Choice(NOTEBOOK_STORES), required=True, help="Which store: memory or user."
)
any_target_option = click.option(
    "--target", type=click.Choice(NOTEBOOK_STORES), help="Only this store (default: both)."
)


@click.group()
def notebook() -> None:
    """The acting agent's bounded notebook: `memory` (its own notes) and `user` (about the person)."""


@notebook.command("show")
@any_target_option
@as_option
@json_option
def show(target: str, agent: str | None, as_json: bool) -> None:
    """Print the notebook, each store with its usage (N% used, x/cap chars)."""
    from ...store import notebook as nb

    with connection(agent) as conn:
        found = nb.show(conn, target)
    if as_json:
        emit_json(found)
        return
    click.echo(notebook_text(found, nb.SEPARATOR))


@notebook.command("add")
@target_option
@click.argument("text")
@as_option
def add(target: str, text: str, agent: str | None) -> None:
    """Add an entry; an identical entry is a no-op, a write past the cap is refused."""
    from ...store import notebook as nb

    nb.check_entry(text, target)  # refuse bad input before starting or touching the database
    with org(agent) as opened, opened.serving(this_operation()) as conn:
        click.echo(change_line(nb.add(conn, target, text, via=opened.settings.via)))


@notebook.command("replace")
@target_option
@click.argument("old")
@click.argument("new")
@as_option
def replace(target: str, old: str, new: str, agent: str | None) -> None:
    """Replace the one entry containing OLD with NEW."""
    from ...store import notebook as nb

    nb.check_entry(new, target)
    with org(agent) as opened, opened.serving(this_operation()) as conn:
        click.echo(change_line(nb.replace(conn, target, old, new, via=opened.settings.via)))


@notebook.command("patch")
@target_option
@click.argument("old")
@click.argument("new")
@as_option
def patch(target: str, old: str, new: str, agent: str | None) -> None:
    """Replace the span OLD with NEW inside the one entry containing it; the rest stays.

    OLD must occur once in the whole store ("oat milk" -> "soy milk" in "Prefers oat milk")."""
    from ...store import notebook as nb

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        click.echo(change_line(nb.patch(conn, target, old, new, via=opened.settings.via)))


@notebook.command("remove")
@target_option
@click.argument("substring")
@as_option
def remove(target: str, substring: str, agent: str | None) -> None:
    """Remove the one entry containing SUBSTRING (kept in the history, marked removed)."""
    from ...store import notebook as nb

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        click.echo(change_line(nb.remove(conn, target, substring, via=opened.settings.via)))


@notebook.command("history")
@any_target_option
@as_option
@json_option
def history(target: str, agent: str | None, as_json: bool) -> None:
    """Every version of every entry, oldest first: added, replaced, removed, by whom and when."""
    from ...store import notebook as nb
    from ...text import one_line

    with connection(agent) as conn:
        found = nb.history(conn, target)
    if as_json:
        emit_json(found)
        return
    if not found:
        click.echo("no history")
    for v in found:
        what = f"{v.store} #{v.entry_id} v{v.version} {v.action} by {v.by}"
        click.echo(f"{v.at:%Y-%m-%d %H:%M} {what}: {one_line(v.body)}")


@notebook.command("import")
@target_option
@click.argument("file", type=OsPath(dir_okay=False, path_type=Path))
@as_option
def import_(target: str, file: Path, agent: str | None) -> None:
    """Import a notebook file (entries separated by lines holding §): every entry, or nothing."""
    from ...store import notebook as nb

    with connection(agent) as conn:
        done = nb.import_file(conn, target, file)
    click.echo(
        f"imported {done.added} of {done.entries} entries into {done.target} ({done.already} already there); "
        f"{done.used}/{done.cap} chars"
    )


COMMANDS = [notebook]
