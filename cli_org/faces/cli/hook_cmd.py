"""hook: what a harness runs at session start, on each prompt and at the end of a turn
(loaded alone, like recall)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from .common import EnvOption, invoked, org, settings, stdin_text, this_operation, warm_up

if TYPE_CHECKING:
    from ...config import Settings
    from ...session.hooks import HookInput


@click.command()
@click.argument("harness", type=click.Choice(["claude-code", "codex", "hermes"]), metavar="HARNESS")
@click.argument("event", type=click.Choice(["session-start", "prompt", "stop"]), metavar="EVENT")
# Not as_option: a hook fails open; a usage error exits 0 too (OrgGroup.main in app.py).
@click.option(
    "--as", "agent", cls=EnvOption, metavar="NAME", envvar="ORG_AGENT", help="Act as this agent (default: $ORG_AGENT)."
)
@click.option("--project", metavar="P", help="The project (default: the name of the working folder's project root).")
def hook(harness: str, event: str, agent: str | None, project: str | None) -> None:
    """Read the harness's hook JSON on stdin and print what it should add to the session:
    the context block at session start, the new on-match hits on each prompt; at the end
    of a turn (stop), when the turn holds a lasting lesson that is no fact yet, a request
    to the agent to save it with org_remember or say why not (once per lesson and session).
    HARNESS: claude-code (every event), codex (session-start and stop: Codex 0.169's
    SessionStart and Stop hooks) or hermes (session-start, run by Hermes 0.19's pre_llm_call
    hook: the block on the first turn, and again on a turn whose conversation lost it).

    Fails open: on any error, or after 5 seconds, it prints nothing and exits 0.
    """
    from ...session.hooks import CONNECT_SECONDS, fail_open

    invocation = invoked()
    ctx = click.get_current_context()

    def work() -> str:
        with ctx:  # the command's context, in the thread that does the work
            return _hook_work(harness, event, agent, project, CONNECT_SECONDS)

    outcome = fail_open(work)
    if outcome.text:
        click.echo(outcome.text)
    if outcome.problem:
        click.echo(f"cli-org hook: nothing added ({outcome.problem})", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    if not outcome.finished and invocation is None:
        os._exit(0)  # the work is stuck (a connection, a lock): leave it behind
    if outcome.finished and not outcome.problem:
        warm_up()


def _hook_work(harness: str, event: str, agent: str | None, project: str | None, connect_seconds: int) -> str:
    from dataclasses import replace

    from ...errors import InputError
    from ...session.hooks import HARNESS_EVENTS, claude_code_hook, parse_hermes_turn, parse_hook_input

    if event not in HARNESS_EVENTS[harness]:
        raise InputError(f"{harness} gets no {event} hook from cli-org")
    if harness == "hermes":
        turn = parse_hermes_turn(stdin_text())
        if turn is None:
            return ""  # the conversation still holds the block: nothing to add
        hook_input = turn
    else:
        hook_input = parse_hook_input(stdin_text())
    if not agent:
        raise InputError("no agent named; the hook command carries --as NAME")
    # A connection attempt gives up within connect_seconds, unless the user set a bound.
    cfg = replace(settings(), connect_timeout=connect_seconds)
    if event == "stop":
        return _stop_work(harness, hook_input, agent, project, cfg)
    wanted = bool(event == "prompt" and hook_input.prompt)
    if wanted:
        from ...vault.embedders import build_in_background, onnx_path

        # A first prompt on a fresh install answers by words while the model is built beside it.
        wanted = not build_in_background(onnx_path(cfg))
    with org(agent, cfg=cfg, embed=wanted) as opened, opened.serving(this_operation()) as conn:
        return claude_code_hook(
            conn,
            event,
            hook_input,
            settings=opened.settings,
            project=project,
            embedder=opened.embedder,
            harness=harness,
        )


def _stop_work(harness: str, hook_input: HookInput, agent: str, project: str | None, cfg: Settings) -> str:
    """The end of a turn: the turn's lessons first (no connection for plain work), then the
    ones no fact says yet."""
    from ...session.hooks import lesson_ask, turn_lessons
    from ...vault.embedders import build_in_background, onnx_path

    if hook_input.stop_hook_active or not hook_input.transcript_path:
        return ""  # the harness is continuing because a stop hook asked: never twice
    wanted = not build_in_background(onnx_path(cfg))
    with org(agent, cfg=cfg, embed=wanted) as opened:
        found = turn_lessons(hook_input, opened.embedder, harness=harness)
        if not found:
            return ""
        with opened.serving(this_operation()) as conn:
            return lesson_ask(conn, hook_input, found, project=project, embedder=opened.embedder)


COMMANDS = [hook]
