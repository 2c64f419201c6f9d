"""warm status / stop / serve: the helper that answers recall and context without a cold start."""

from __future__ import annotations

import io
import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from .common import Finite, Invocation, emit_json, json_option, settings

if TYPE_CHECKING:
    from ...config import Settings
    from ...org import Lender


@click.group()
def warm() -> None:
    """The warm helper: a background process per user and database that keeps the query
    model and a connection open, so recall and context answer without a cold start."""


@warm.command()
@json_option
def status(as_json: bool) -> None:
    """Say whether this database's helper is running, since when, and where its socket is."""
    from ..warm.server import status as helper_status

    found = helper_status(dict(os.environ))
    if as_json:
        emit_json(found)
        return
    if found.running:
        since = datetime.fromtimestamp(found.started_at or 0, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        click.echo(
            f"running: pid {found.pid}, since {since}, {found.requests} requests, "
            f"exits after {found.idle_timeout:g} s idle"
        )
    else:
        click.echo("not running" + ("" if found.enabled else " (off: CLI_ORG_WARM=0)"))
    click.echo(f"for {found.target}")
    click.echo(f"socket {found.socket}")


@warm.command()
@json_option
def stop(as_json: bool) -> None:
    """Stop this database's helper; the next recall or context answers cold and starts it again."""
    from ..warm.server import stop as stop_helper

    stopped = stop_helper(dict(os.environ))
    if as_json:
        emit_json({"stopped": stopped})
    else:
        click.echo("stopped" if stopped else "no helper was running")


@warm.command()
@click.option(
    "--idle",
    type=Finite(0, 86400, min_open=True),
    metavar="SECONDS",
    help="Exit after this long without a request (default: $CLI_ORG_WARM_IDLE, else 600).",
)
def serve(idle: float | None) -> None:
    """Run the helper in the foreground until it is idle, stopped or sent SIGTERM.

    recall and context start it in the background by themselves after a cold answer; this
    is for running it by hand. A second helper for the same database exits at once.
    """
    from functools import partial
    from importlib import import_module

    from ..warm.resident import Resident
    from ..warm.server import serve as run

    for module in ("cli_org.session.context", "cli_org.recall.answer", "cli_org.faces.cli.app"):
        import_module(module)  # loaded now, not in the first request

    cfg = settings()
    with Resident() as held:
        why = run(dict(os.environ), partial(_run_command, held), idle=idle, prepare=lambda: _warm_up(held, cfg))
    click.echo(f"warm helper: {why}", err=True)


def _warm_up(held: Lender, cfg: Settings) -> None:
    """Load the model, open the connection and run one recall whose answer is thrown away
    (as the login role, logging nothing): the first request then finds the server's caches
    and the model's first run done. Any failure is left for a request to meet and report
    as a cold run would."""
    from ...recall.answer import recall

    try:
        with held.connection(cfg, None) as conn:
            recall(conn, "warm up the caches", settings=cfg, embedder=held.embedder(cfg), log=False)
    except Exception:
        pass


def _run_command(
    held: Lender, kind: str, args: list[str], env: dict[str, str], cwd: str, stdin: str = ""
) -> dict[str, Any]:
    """Run `cli-org <kind> <args>` here as a cold process would in `env` and `cwd` with
    `stdin` as its input, and return its exit code and output. The command gets the request
    (its environment, folder and input, and `held`'s model and connection) as click's
    context object; only its output streams are this call's own."""
    from .app import group

    cli = group()
    saved_streams = sys.stdout, sys.stderr
    out, err = _capture(), _capture()
    invocation = Invocation(env=env, cwd=cwd, stdin=stdin, lender=held)
    try:
        sys.stdout, sys.stderr = out, err
        try:
            cli.main(args=[kind, *args], prog_name="cli-org", standalone_mode=True, obj=invocation)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdout, sys.stderr = saved_streams
    return {"exit_code": code, "stdout": _text(out), "stderr": _text(err)}


def _capture() -> io.TextIOWrapper:
    # UTF-8 like a cold process's streams (Python's UTF-8 mode or a UTF-8 locale).
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8")


COMMANDS = [warm]
