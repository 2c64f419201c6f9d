"""activity."""

from __future__ import annotations

import click

from .common import AGENT, as_option, connection, emit_json, json_option

KINDS_HELP = (
    "written, superseded, retired, restored, pinned, unpinned, notebook, todo_added, todo_done, "
    "erased, linked, unlinked, recall, tool_call; or a group: facts, pins, links, todos, writes "
    "(the default), reads, all. "
    "Repeat or separate with commas."
)


@click.command()
@click.option(
    "--since",
    metavar="WHEN",
    default="1d",
    show_default=True,
    help="A span back from now (30m, 12h, 1d, 2w), a date or time (2026-12-01, 2026-12-01T09:00, UTC), or all.",
)
@click.option("--agent", "who", type=AGENT, metavar="NAME", help="Only what this agent did.")
@click.option(
    "--via",
    metavar="HARNESS",
    help="Only what came through this harness: its name (claude-code) or RUNTIME@HOST as recorded.",
)
@click.option("--kind", "kinds", multiple=True, metavar="KIND", help=KINDS_HELP)
@click.option("--limit", type=click.IntRange(1, 200), default=50, show_default=True, help="Events per page.")
@click.option("--before", metavar="CURSOR", help="The next page: the cursor the previous page ended with.")
@as_option
@json_option
def activity(
    since: str,
    who: str | None,
    via: str | None,
    kinds: tuple[str, ...],
    limit: int,
    before: str | None,
    agent: str | None,
    as_json: bool,
) -> None:
    """What changed, newest first: facts written, superseded, retired and restored, pins,
    links between facts, notebook edits and todos, each with who did it and the harness it came through (where
    recorded). What you may not read (another agent's notebook) does not show.

    \b
    cli-org activity                     what changed since yesterday
    cli-org activity --agent bot --since 12h
    cli-org activity --via claude-code --kind facts
    cli-org activity --kind reads        recall calls and tool calls"""
    from ...store.activity import feed, parse_kinds, parse_since

    moment = parse_since(since)
    chosen = parse_kinds(kinds)  # refuse a bad kind before touching the database
    with connection(agent) as conn:
        result = feed(conn, since=moment, agent=who, via=via, kinds=chosen, before=before, limit=limit)
    if as_json:
        emit_json(result)
        return
    from ...text import one_line

    if not result.events:
        click.echo("no activity" + (f" since {moment:%Y-%m-%d %H:%M} UTC" if moment else ""))
    for e in result.events:
        what = f"#{e.fact_id} {one_line(e.subject)}" if e.fact_id else one_line(e.subject or "")
        if e.kind in ("todo_added", "todo_done"):
            what = f"todo #{e.ref}"
        elif e.kind == "notebook":
            what = f"notebook {one_line(e.subject)}"
        line = f"{e.at:%Y-%m-%d %H:%M} {e.kind:<10} {e.who or '-'} via {e.via or '-'}  {what}"
        if e.detail:
            line += f": {one_line(e.detail, 100)}"
        if e.other and e.kind == "written":
            line += f" (supersedes #{e.other})"
        click.echo(line)
    if result.next:
        click.echo(f"more: --before {result.next}")


COMMANDS = [activity]
