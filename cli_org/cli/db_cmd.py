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
    if result.notice:
        click.echo(f"note: {result.notice}", err=True)


@click.group()
def db() -> None:
    """The embedded PostgreSQL server (not used when CLI_ORG_DATABASE_URL is set)."""


@db.command()
@json_option
def status(as_json: bool) -> None:
    """Say whether the embedded server runs and where (with its URL), whether the database
    is up to date, and how big its vault index is."""
    from ..bootstrap import state
    from ..db import embedded
    from ..db.access import admin_access
    from ..errors import DatabaseError

    cfg = settings()
    access = admin_access(cfg, start=False)
    url = access.url if access else None
    if cfg.database_url:
        info = {"embedded": False, "running": None, "url": url, **state(cfg.database_url)}
        if info.get("error"):
            # The one thing status is asked: an unreachable server is a failure, in one line.
            raise DatabaseError(f"cannot connect to CLI_ORG_DATABASE_URL: {info['error']}")
    else:
        server = embedded.running(cfg.data_dir)
        info = {
            "embedded": True,
            "running": server is not None,
            "pid": server.pid if server else None,
            "port": server.port if server else None,
            "data_dir": str(cfg.data_dir),
            "database": cfg.database_name,
            "url": url,
            **(state(server.conninfo(cfg.database_name)) if server else {}),
        }
    if as_json:
        emit_json(info)
        return
    if not info["embedded"]:
        click.echo(f"using CLI_ORG_DATABASE_URL ({url}); no embedded server")
    elif info["running"]:
        click.echo(f"embedded server running: pid {info['pid']}, port {info['port']}, data {info['data_dir']}")
        click.echo(f"url: {url}")
    else:
        click.echo(f"embedded server not running (data {info['data_dir']})")
    if info.get("initialised"):
        todo = info["pending_migrations"]
        waiting = sorted(info.get("waiting_for_extensions") or {})
        click.echo(
            f"database {cfg.database_name if info['embedded'] else '(URL)'}: {info['files']} notes, "
            f"{info['chunks']} chunks, {info['vectors']} with vectors; "
            + (f"{len(todo)} migration(s) pending: run `cli-org init`" if todo else "schema up to date")
            + (f" (some wait for the extension {', '.join(waiting)}: README, Team server)" if waiting else "")
        )
    elif info["running"] is not False:
        click.echo(f"database: {info.get('error') or 'not initialised'}; run `cli-org init`")


def _access(agent: str | None, show_password: bool):
    from ..db.access import admin_access, member_access
    from ..db.connect import connect

    cfg = settings()
    if not agent:
        return cfg, admin_access(cfg, show_password=show_password)
    with connect(cfg) as conn:
        return cfg, member_access(conn, cfg, agent)


@db.command()
@click.option("--as", "agent", metavar="NAME", help="The agent's own login (over TCP, no password in the URL).")
@click.option("--show-password", is_flag=True, help="Print the password of CLI_ORG_DATABASE_URL instead of ****.")
@json_option
def url(agent: str | None, show_password: bool, as_json: bool) -> None:
    """Print a libpq URL for psql and other clients: the admin's, or an agent's login.

    The admin's is CLI_ORG_DATABASE_URL (password masked unless --show-password) or the
    embedded server's superuser over its private socket (started if needed). With --as, the
    agent's role over TCP and no password: clients read it from PGPASSWORD or ~/.pgpass.
    """
    _, access = _access(agent, show_password)
    if as_json:
        emit_json(access)
        return
    click.echo(access.url)
    if access.password_from:
        click.echo(f"password: from {access.password_from}", err=True)


@db.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--as", "agent", metavar="NAME", help="Log in as the agent's own role (password from PGPASSWORD).")
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- PSQL ARGS]")
def psql(agent: str | None, psql_args: tuple[str, ...]) -> None:
    """Run the psql that ships with the embedded server, connected as the admin or an agent.

    Arguments after -- go to psql, e.g. `cli-org db psql -- -c 'SELECT count(*) FROM memory_facts'`.
    """
    import os

    from ..db.access import psql_argv

    cfg, access = _access(agent, show_password=False)
    argv, env = psql_argv(cfg, access, list(psql_args))
    os.execve(argv[0], argv, {**os.environ, **env})


@db.command()
def stop() -> None:
    """Stop the embedded server; the next command starts it again."""
    from ..db import embedded

    stopped = embedded.stop(settings().data_dir)
    click.echo("stopped" if stopped else "not running")


COMMANDS = [init, db]
