"""checks allow / approvals: owner-approved texts for the write scan."""

from __future__ import annotations

import click

from .common import as_option, connection, emit_json, json_option


@click.group()
def checks() -> None:
    """The write checks: approve a text the secret or injection scan refuses (owners only)."""


@checks.command("allow")
@click.argument("text")
@click.option("--reason", required=True, metavar="WHY", help="Why the text is no secret and no injection.")
@as_option
@json_option
def allow(text: str, reason: str, agent: str | None, as_json: bool) -> None:
    """Approve this exact TEXT: any agent's write of it then skips the secret and injection
    scans (never the control-character check). Owners only; kept with who, when and why."""
    from ...store.approvals import approve

    with connection(agent) as conn:
        result = approve(conn, text, reason)
    if as_json:
        emit_json(result)
    else:
        click.echo(f"approved {result.sha256[:12]} (by {result.approved_by}: {result.reason})")


@checks.command("approvals")
@as_option
@json_option
def approvals(agent: str | None, as_json: bool) -> None:
    """List the approved texts (their SHA-256, who, when, why), newest first."""
    from ...store.approvals import list_approvals
    from ...text import one_line

    with connection(agent) as conn:
        found = list_approvals(conn)
    if as_json:
        emit_json(found)
        return
    if not found:
        click.echo("no approvals")
    for a in found:
        click.echo(f"{a.sha256[:12]}  {a.approved_at:%Y-%m-%d %H:%M}  {a.approved_by}: {one_line(a.reason, 100)}")


COMMANDS = [checks]
