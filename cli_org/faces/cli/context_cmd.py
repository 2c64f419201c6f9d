"""context: the block a harness puts in front of a session (or of a turn, with --for)."""

from __future__ import annotations

import click

from .common import as_option, emit_json, json_option, org, project_option, warm_up


@click.command()
@as_option
@project_option("That project's pins, todos and facts beside the org-wide ones.")
@click.option("--for", "for_text", metavar="TEXT", help="Add the recall hits for this task or message.")
@click.option("--session", metavar="ID", help="Deliver each entry once per session: later calls add only what is new.")
@click.option(
    "--budget",
    default=1500,
    show_default=True,
    type=click.IntRange(16),
    metavar="TOKENS",
    help="Never print more; tokens are ceil(characters / 4).",
)
@click.option(
    "--of",
    "of",
    metavar="NAME",
    help="That agent's session-start block, read with your rights: what you may not read is hidden.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@json_option
def context(
    agent: str | None,
    project: str | None,
    for_text: str | None,
    session: str | None,
    budget: int,
    fmt: str,
    of: str | None,
    as_json: bool,
) -> None:
    """Print the session context block: notebook, pins, todos, facts by kind, then hits.

    The same state prints the same bytes. What is not shown is only under --json: "omitted"
    lists what was read and left out (over the budget, duplicate) and "omitted_counts" counts
    everything not shown by reason (budget, duplicate, retired, superseded): the block is
    what an agent reads. Nothing to deliver (with --session: nothing new) prints
    nothing. --json is --format json.

    --of NAME prints the block NAME gets at the start of a session, every part read as you:
    a part you may not read (another agent's notebook, unless you lead it or are an owner)
    is left out and named on stderr ("hidden" under --json).
    """
    fmt = "json" if as_json else fmt
    with org(agent, embed=bool(for_text)) as opened:
        block = opened.context(project=project, for_text=for_text, session=session, budget=budget, fmt=fmt, agent=of)
    if fmt == "json":
        emit_json(block)
    elif block.text:
        click.echo(block.text, nl=False)
    if fmt != "json":
        for part in block.hidden:
            click.echo(f"hidden from you: {part.part}: {part.reason}", err=True)
    warm_up()


COMMANDS = [context]
