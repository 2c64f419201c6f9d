"""recall."""

from __future__ import annotations

import click

from .common import (
    agent_session,
    as_option,
    emit_json,
    json_option,
    query_argument,
    record_on_primary,
    settings,
    usage_error,
    warm_up,
)


def _arms(spec: str | None) -> tuple[str, ...]:
    from ..recall.answer import parse_arms

    return parse_arms(spec)


@click.command()
@query_argument("question")
@click.option("--project", metavar="P", help="That project's facts plus facts with no project.")
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 50), help="Hits in all.")
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
    found. Every call is logged in recall_events.
    """
    from ..db.connect import on_replica
    from ..recall.answer import recall as run_recall
    from ..render import recall_data

    cfg = settings()
    with agent_session(cfg, agent, embed="vault" in arms, read=True) as (embedder, conn):
        result = run_recall(conn, question, settings=cfg, project=project, limit=limit, arms=arms, embedder=embedder)
        if as_json:
            emit_json(recall_data(result))
        else:
            click.echo(result.text)
        if on_replica(conn):  # the answer is out; its log line and lazy vectors go to the primary
            record_on_primary(cfg, agent, result, embedder)
    warm_up()


COMMANDS = [recall]
