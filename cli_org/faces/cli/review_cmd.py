"""review: what waits for a person to settle (issue 36)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import OsPath, as_option, emit_json, json_option, org, project_option


@click.command()
@click.option("--refresh", is_flag=True, help="Refresh the stored items first (owners and team leads).")
@click.option(
    "--due",
    is_flag=True,
    help="With --refresh: only when the last one is a day old, printing nothing (the hook's run).",
)
@project_option("With --refresh: the project whose sources are judged (default: the project root's name).")
@click.option(
    "--root",
    type=OsPath(file_okay=False, path_type=Path),
    metavar="DIR",
    help="With --refresh: the project's checkout (default: ORG_ROOT or the git top of the working folder).",
)
@as_option
@json_option
def review(refresh: bool, due: bool, project: str | None, root: Path | None, agent: str | None, as_json: bool) -> None:
    """List what waits for you to settle, grouped by kind, each with the command that settles
    it: contradictions between current facts, near-duplicates tidy would merge, proposals
    waiting, facts whose source is missing or changed. You see what you may settle: your
    facts', your team's as its lead, all as an owner. An owner's or a team lead's session
    start refreshes the stored items once a day in the background; --refresh does it now."""
    from ...evaluation.review import refresh as do_refresh
    from ...local.project import project_root
    from ...store.review import review as listed

    done = None
    with org(agent) as opened:
        if refresh:  # the list is read on the refresh's own connection (its registered route)
            top = root or project_root(opened.settings.root)
            name = project or top.name or None
            with opened.serving("review.refresh") as conn, opened.serving("review.refresh") as lock:
                done = do_refresh(conn, lock, project=name, root=top, force=not due)
                if due:
                    return  # the session start's background run: nobody reads its output
                found = listed(conn)
        else:
            with opened.serving("review") as conn:
                found = listed(conn)
    if as_json:
        emit_json(found)
        return
    from ..render import review_text

    if done is not None:
        click.echo(f"refreshed: {done.near_duplicates} near-duplicates, {done.stale_sources or 0} stale sources")
    click.echo(review_text(found))


COMMANDS = [review]
