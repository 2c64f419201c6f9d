"""init, and the embedded server's status and stop."""

from __future__ import annotations

import getpass
import re

import click

from .common import emit_json, json_option, settings


def _default_owner() -> str:
    name = re.sub(r"[^a-z0-9_-]", "", getpass.getuser().lower()) or "owner"
    return name if name[0].isalpha() else f"u{name}"


@click.command()
@click.option("--owner", metavar="NAME", help="Name of the first owner (a person); default: your login name.")
@json_option
def init(owner: str | None, as_json: bool) -> None:
    """Create or migrate the database and its first owner. Safe to run again."""
    from ..bootstrap import init as run_init

    result = run_init(settings(), owner or _default_owner())
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"database {result.database}: {'created' if result.created else 'exists'}; "
        f"migrations applied: {', '.join(result.applied) or 'none (up to date)'}"
    )
    if result.owner:
        click.echo(f"owner: {result.owner}")


@click.group()
def db() -> None:
    """The embedded PostgreSQL server (not used when CLI_ORG_DATABASE_URL is set)."""


@db.command()
@json_option
def status(as_json: bool) -> None:
    """Say whether the embedded server runs and where, whether the database is up to date,
    and how big its vault index is."""
    from ..bootstrap import state
    from ..db import embedded

    cfg = settings()
    if cfg.database_url:
        info = {"embedded": False, "running": None, **state(cfg.database_url)}
    else:
        server = embedded.running(cfg.data_dir)
        info = {
            "embedded": True,
            "running": server is not None,
            "pid": server.pid if server else None,
            "port": server.port if server else None,
            "data_dir": str(cfg.data_dir),
            "database": cfg.database_name,
            **(state(server.conninfo(cfg.database_name)) if server else {}),
        }
    if as_json:
        emit_json(info)
        return
    if not info["embedded"]:
        click.echo("using CLI_ORG_DATABASE_URL; no embedded server")
    elif info["running"]:
        click.echo(f"embedded server running: pid {info['pid']}, port {info['port']}, data {info['data_dir']}")
    else:
        click.echo(f"embedded server not running (data {info['data_dir']})")
    if info.get("initialised"):
        todo = info["pending_migrations"]
        click.echo(
            f"database {cfg.database_name if info['embedded'] else '(URL)'}: {info['files']} notes, "
            f"{info['chunks']} chunks, {info['vectors']} with vectors; "
            + (f"{len(todo)} migration(s) pending: run `cli-org init`" if todo else "schema up to date")
        )
    elif info["running"] is not False:
        click.echo(f"database: {info.get('error') or 'not initialised'}; run `cli-org init`")


@db.command()
def stop() -> None:
    """Stop the embedded server; the next command starts it again."""
    from ..db import embedded

    stopped = embedded.stop(settings().data_dir)
    click.echo("stopped" if stopped else "not running")


COMMANDS = [init, db]
