"""hook: what a harness runs at session start and on each prompt (loaded alone, like recall)."""

from __future__ import annotations

import os
import sys

import click

from .common import org, settings, warm_up


@click.command()
@click.argument("harness", type=click.Choice(["claude-code"]), metavar="HARNESS")
@click.argument("event", type=click.Choice(["session-start", "prompt"]), metavar="EVENT")
# Not as_option: a hook fails open; a usage error exits 0 too (OrgGroup.main in app.py).
@click.option("--as", "agent", metavar="NAME", envvar="ORG_AGENT", help="Act as this agent (default: $ORG_AGENT).")
@click.option("--project", metavar="P", help="The project (default: the name of the working folder's project root).")
def hook(harness: str, event: str, agent: str | None, project: str | None) -> None:
    """Read the harness's hook JSON on stdin and print what it should add to the session:
    the context block at session start, the new on-match hits on each prompt.

    Fails open: on any error, or after 5 seconds, it prints nothing and exits 0.
    """
    from ...session.hooks import CONNECT_SECONDS, fail_open

    ours = "PGCONNECT_TIMEOUT" not in os.environ
    os.environ.setdefault("PGCONNECT_TIMEOUT", str(CONNECT_SECONDS))
    outcome = fail_open(lambda: _hook_work(event, agent, project))
    if outcome.text:
        click.echo(outcome.text)
    if outcome.problem:
        click.echo(f"cli-org hook: nothing added ({outcome.problem})", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    from ...org import lent

    if not outcome.finished and not lent():
        os._exit(0)  # the work is stuck (a connection, a lock): leave it behind
    if outcome.finished and not outcome.problem:
        if ours:  # PG* variables are part of a helper's key: launch the one the next hook asks
            del os.environ["PGCONNECT_TIMEOUT"]
        warm_up()


def _hook_work(event: str, agent: str | None, project: str | None) -> str:
    from ...errors import InputError
    from ...session.hooks import claude_code_hook, parse_hook_input

    hook_input = parse_hook_input(sys.stdin.read())
    if not agent:
        raise InputError("no agent named; the hook command carries --as NAME")
    wanted = bool(event == "prompt" and hook_input.prompt)
    if wanted:
        from ...vault.embedders import build_in_background, onnx_path

        # A first prompt on a fresh install answers by words while the model is built beside it.
        wanted = not build_in_background(onnx_path(settings()))
    with org(agent, embed=wanted) as opened, opened.connection() as conn:
        return claude_code_hook(
            conn, event, hook_input, settings=opened.settings, project=project, embedder=opened.embedder
        )


COMMANDS = [hook]
