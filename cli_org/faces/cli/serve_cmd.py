"""serve: the web page for the people who run the agents."""

from __future__ import annotations

import click

from .common import as_option, settings


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; a non-loopback one needs CLI_ORG_WEB_TOKEN.",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port to listen on.")
@as_option
def serve(host: str, port: int, agent: str | None) -> None:
    """Serve the web page: facts, agents, recall and search, usage, evaluation, and a JSON API.

    It acts as the agent (usually a person) named by --as / ORG_AGENT, or the login role of
    CLI_ORG_DATABASE_URL, for its whole life: row-level security applies to every page, and
    forget, restore, pin and unpin from the page act with that identity's rights. It listens
    on 127.0.0.1 by default. Every request needs a token, on loopback too (other users of the
    machine share 127.0.0.1): a random one drawn at start, or CLI_ORG_WEB_TOKEN. Open the
    address printed at start once: it carries the token and leaves it in a cookie. API
    clients send `Authorization: Bearer TOKEN`. --host may name a non-loopback address only
    with CLI_ORG_WEB_TOKEN set. The API's schema is at /api/openapi.json.
    """
    from ..web.app import serve as run

    run(settings(), agent, host, port, log=lambda line: click.echo(line, err=True))


COMMANDS = [serve]
