"""recall."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ...limits import RECALL_HITS
from .common import as_option, emit_json, json_option, org, project_option, query_argument, usage_error, warm_up

if TYPE_CHECKING:
    from ...recall.answer import RecallResult


def _arms(spec: str | None) -> tuple[str, ...]:
    from ...recall.answer import parse_arms

    return parse_arms(spec)


@click.command()
@query_argument("question")
@project_option("That project's facts plus facts with no project.")
@click.option(
    "--limit",
    default=RECALL_HITS.default,
    show_default=True,
    type=click.IntRange(RECALL_HITS.low, RECALL_HITS.high),
    help="Hits in all, at most, of which at most half memory lines; otherwise the limit only cuts one order "
    "(--limit 3 is the first three of --limit 8).",
)
@click.option(
    "--arms",
    metavar="LIST",
    callback=usage_error(_arms),
    help="Comma-separated subset of fact,memory,vault (default: all).",
)
@as_option
@json_option
def recall(
    question: str, project: str | None, limit: int, arms: tuple[str, ...], agent: str | None, as_json: bool
) -> None:
    """Answer a question from shared facts, bot memory files and the vault, each hit labelled.

    Prints one line per hit ([fact], [memory] or [vault]) or one line saying nothing was
    found. The answer stops when it has the answer: a hit more than 0.20 below the best
    hit's closeness in meaning is left out. Every call is logged in recall_events.
    """
    from ..render import recall_data

    def show(result: RecallResult) -> None:  # the answer is out before its log line goes to the primary
        if as_json:
            emit_json(recall_data(result))
        else:
            for notice in result.warnings:  # before the answer: seen even when the answer is long
                click.echo(f"notice: {notice}", err=True)
            click.echo(result.text)

    from ...recall import needs_embedder

    with org(agent, embed=needs_embedder(arms)) as opened:
        opened.recall(question, project=project, limit=limit, arms=arms, shown=show)
    warm_up()


COMMANDS = [recall]
