"""link / unlink."""

from __future__ import annotations

import click

from ...checks.rules import LINK_KINDS
from .common import ID, as_option, emit_json, json_option, org, this_operation


@click.command()
@click.argument("from_id", type=ID, metavar="FROM")
@click.argument("kind", type=click.Choice(LINK_KINDS), metavar="KIND")
@click.argument("to_id", type=ID, metavar="TO")
@click.option("--reason", metavar="TEXT", help="Why the two facts are linked (kept and shown with the link).")
@as_option
@json_option
def link(from_id: int, kind: str, to_id: int, reason: str | None, agent: str | None, as_json: bool) -> None:
    """Link two current facts, as the acting agent: fact FROM is KIND of fact TO.

    \b
    KIND is one of:
      depends-on   FROM holds only while TO holds (recall brings TO along)
      explains     FROM says why TO is so
      confirms     FROM says the same as TO, seen again (by another agent or source)
      contradicts  FROM and TO cannot both hold: a person chooses (forget one, or unlink)

    Both facts must be ones you may read. Linking again returns the live link already there.
    Supersession is not a link: `remember --supersedes` retires the old fact. `facts show`
    shows a fact's links both ways; `unlink` removes one."""
    from ...store.links import link as do_link
    from ..render import link_line

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        made = do_link(conn, from_id, kind, to_id, reason=reason, via=opened.settings.via)
    if as_json:
        emit_json(made)
    else:
        click.echo(link_line(made))


@click.command()
@click.argument("link_id", type=ID, metavar="LINK_ID")
@click.argument("why")
@as_option
@json_option
def unlink(link_id: int, why: str, agent: str | None, as_json: bool) -> None:
    """Remove a link (or dismiss a contradiction): its author, their team lead or an owner may.

    The link stays in the history with who removed it, when and why (`facts show` prints
    each link's id)."""
    from ...store.links import unlink as do_unlink
    from ..render import link_line

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        removed = do_unlink(conn, link_id, why, via=opened.settings.via)
    if as_json:
        emit_json(removed)
    else:
        click.echo(link_line(removed))


COMMANDS = [link, unlink]
