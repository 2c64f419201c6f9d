"""mcp: the Model Context Protocol server over stdio."""

from __future__ import annotations

import click

from .common import as_option, settings


@click.command()
@as_option
def mcp(agent: str | None) -> None:
    """Serve cli-org's tools to an agent over stdio (Model Context Protocol).

    One process per agent session; it acts as the agent named by --as / ORG_AGENT (or the
    login role on a shared server) for its whole life. Tools: org_recall, org_remember,
    org_forget, org_restore, org_facts, org_link, org_unlink, org_pin, org_unpin, org_pins,
    org_todo_add, org_todo_done, org_todos, org_search, org_sessions_search, org_notebook,
    org_notebook_edit, org_context, org_proposals, org_proposal_accept, org_proposal_reject.
    Resources: cli-org://context and cli-org://notebook. Every call is logged for `usage`.
    """
    from ..mcp.front import serve  # answers at once; the SDK is imported behind it

    serve(settings(), agent)


COMMANDS = [mcp]
