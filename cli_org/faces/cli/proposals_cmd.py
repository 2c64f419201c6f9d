"""proposals / proposals accept / proposals reject: lessons from the archive, decided."""

from __future__ import annotations

import click

from ...checks.rules import PROPOSAL_STATES
from .common import ID, as_option, connection, emit_json, json_option, org, project_option, this_operation


@click.group(invoke_without_command=True)
@project_option("Only this project's (and the org-wide ones).")
@click.option("--agent", "of_agent", metavar="A", help="Only those of this agent's sessions.")
@click.option(
    "--state", type=click.Choice([*PROPOSAL_STATES, "all"]), default="pending", show_default=True, help="Which ones."
)
@click.option("--limit", type=click.IntRange(1, 500), default=100, show_default=True)
@as_option
@json_option
@click.pass_context
def proposals(
    ctx: click.Context,
    project: str | None,
    of_agent: str | None,
    state: str,
    limit: int,
    agent: str | None,
    as_json: bool,
) -> None:
    """List the lessons proposed from archived sessions that you may decide: your own
    sessions', your team's as its lead, all as an owner.

    `archive import` proposes them (docs/proposals.md); nothing is a fact until accepted:
    `cli-org proposals accept ID`, or `cli-org proposals reject ID`."""
    if ctx.invoked_subcommand:
        return
    from ...store.proposals import list_proposals

    with connection(agent) as conn:
        found = list_proposals(conn, state=state, project=project, agent=of_agent, limit=limit)
    if as_json:
        emit_json(found)
        return
    from ..render import proposals_text

    click.echo(proposals_text(found, state))


@proposals.command("accept")
@click.argument("proposal_id", type=ID, metavar="ID")
@click.option("--claim", metavar="TEXT", help="The claim as it should stand (default: as proposed).")
@click.option("--subject", metavar="S", help="The subject (default: as proposed).")
@click.option(
    "--agent", "author", metavar="A", help="Whose fact it becomes, for one that belongs to no agent (owners)."
)
@as_option
@json_option
def accept_cmd(
    proposal_id: int, claim: str | None, subject: str | None, author: str | None, agent: str | None, as_json: bool
) -> None:
    """Make a proposal a fact: its author is the agent whose session it was, its source
    names the session and the message. That agent, its team lead or an owner may."""
    from ...store.proposals import accept

    with org(agent, embed=True) as opened, opened.serving(this_operation()) as conn:
        done = accept(
            conn, proposal_id, claim=claim, subject=subject, agent=author, via=opened.settings.via,
            embedder=opened.embedder,
        )  # fmt: skip
    if as_json:
        emit_json(done)
    else:
        click.echo(f"accepted {proposal_id} as fact #{done.fact_id} ({done.agent})")


@proposals.command("reject")
@click.argument("proposal_id", type=ID, metavar="ID")
@click.option("--reason", metavar="TEXT", help="Why it is no lasting lesson (kept with it).")
@as_option
@json_option
def reject_cmd(proposal_id: int, reason: str | None, agent: str | None, as_json: bool) -> None:
    """Reject a proposal: it is kept, rejected, and its claim is never proposed again."""
    from ...store.proposals import reject

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        done = reject(conn, proposal_id, reason=reason, via=opened.settings.via)
    if as_json:
        emit_json(done)
    else:
        click.echo(f"rejected {proposal_id}")


COMMANDS = [proposals]
