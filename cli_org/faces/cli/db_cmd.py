"""init, and the embedded server's status and stop."""

from __future__ import annotations

import getpass
import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .common import AGENT, OsPath, Progress, connection, emit_json, json_option, settings

if TYPE_CHECKING:
    from ...config import Settings
    from ...db.access import Access


def _default_owner() -> str:
    name = re.sub(r"[^a-z0-9_-]", "", getpass.getuser().lower()) or "owner"
    return name if name[0].isalpha() else f"u{name}"


@click.command()
@click.option(
    "--owner", type=AGENT, metavar="NAME", help="Name of the first owner (a person); default: your login name."
)
@json_option
def init(owner: str | None, as_json: bool) -> None:
    """Create or migrate the database and its first owner. Safe to run again."""
    from ...store.bootstrap import init as run_init

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
    # A newcomer's next step: the second of the README's five commands (tests/test_embedded.py
    # checks that the README has the section this names).
    click.echo('next: cli-org agents add NAME (see README, "Your own team in five commands")')
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
    from ...db import embedded
    from ...db.access import admin_access, read_url
    from ...errors import DatabaseError
    from ...store.bootstrap import state

    cfg = settings()
    access = admin_access(cfg, start=False)
    url = access.url if access else None
    replica = read_url(cfg)  # shown whether the embedded server runs or not
    if cfg.database_url:
        info = {"embedded": False, "running": None, "url": url, "read_url": replica, **state(cfg.database_url)}
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
            "read_url": replica,
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
        kept = embedded.saved_port(cfg.data_dir)
        click.echo(f"embedded server not running (data {info['data_dir']}" + (f", port {kept} kept)" if kept else ")"))
    if replica:
        click.echo(f"read url: {replica} (CLI_ORG_READ_URL: recall, search and context read there)")
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


def _access(agent: str | None, show_password: bool) -> tuple[Settings, Access]:
    from ...db.access import admin_access, member_access

    cfg = settings()
    if not agent:
        found = admin_access(cfg, show_password=show_password)  # started if needed: never None
        assert found is not None
        return cfg, found
    with connection(cfg=cfg) as conn:
        return cfg, member_access(conn, cfg, agent)


@db.command()
@click.option(
    "--as", "agent", type=AGENT, metavar="NAME", help="The agent's own login (over TCP, no password in the URL)."
)
@click.option("--show-password", is_flag=True, help="Print the password of CLI_ORG_DATABASE_URL instead of ****.")
@json_option
def url(agent: str | None, show_password: bool, as_json: bool) -> None:
    """Print a libpq URL for psql and other clients: the admin's, or an agent's login.

    The admin's is CLI_ORG_DATABASE_URL (password masked unless --show-password) or the
    embedded server's superuser over its private socket (started if needed). With --as, the
    agent's role over TCP and no password: clients read it from PGPASSWORD or ~/.pgpass.
    With CLI_ORG_READ_URL set, the replica's URL follows on stderr, masked the same way.
    """
    _, access = _access(agent, show_password)
    if as_json:
        emit_json(access)
        return
    click.echo(access.url)
    if access.read_url:  # on stderr: stdout stays one URL, for `psql "$(cli-org db url)"`
        click.echo(f"read url: {access.read_url} (CLI_ORG_READ_URL)", err=True)
    if access.password_from:
        click.echo(f"password: from {access.password_from}", err=True)


@db.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--as", "agent", type=AGENT, metavar="NAME", help="Log in as the agent's own role (password from PGPASSWORD)."
)
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- PSQL ARGS]")
def psql(agent: str | None, psql_args: tuple[str, ...]) -> None:
    """Run the psql that ships with the embedded server, connected as the admin or an agent.

    Arguments after -- go to psql, e.g. `cli-org db psql -- -c 'SELECT count(*) FROM memory_facts'`.
    """
    import os

    from ...db.access import psql_argv

    cfg, access = _access(agent, show_password=False)
    argv, env = psql_argv(cfg, access, list(psql_args))
    os.execve(argv[0], argv, {**os.environ, **env})


@db.command()
@click.option(
    "--port",
    type=click.IntRange(1024, 65535),
    metavar="N",
    help="Listen on this TCP port from now on (kept once the server has started on it).",
)
def start(port: int | None) -> None:
    """Start the embedded server (every command starts it anyway) on its kept port.

    The port is chosen once and kept in the data folder, so agents' saved URLs survive a
    restart; --port moves it (stop the server first). A port the server could not listen on
    is not kept: the next start uses the old one."""
    from ...db import embedded
    from ...errors import ConfigError

    cfg = settings()
    if cfg.database_url:
        raise ConfigError("CLI_ORG_DATABASE_URL is set: there is no embedded server to start")
    info = embedded.start(cfg.data_dir, port)
    click.echo(f"embedded server running: pid {info.pid}, port {info.port}, data {cfg.data_dir}")


@db.command()
def stop() -> None:
    """Stop the embedded server, and the warm helper of this database; the next command
    starts them again."""
    import os

    from ...db import embedded
    from ..warm.server import stop as stop_helper

    # The helper holds a connection to the server and would answer from a database that is
    # gone (issue 37): it goes first, whether or not the server was running.
    helper = stop_helper(dict(os.environ))
    stopped = embedded.stop(settings().data_dir)
    click.echo(("stopped" if stopped else "not running") + (" (and its warm helper)" if helper else ""))


@db.command()
@click.argument("file", type=OsPath(dir_okay=False, path_type=Path))
@json_option
def backup(file: Path, as_json: bool) -> None:
    """Write the whole database (facts, notebooks, pins, vault index, archive) to FILE.

    pg_dump's custom format, from the server wheel (embedded) or PATH (CLI_ORG_DATABASE_URL);
    written to a temporary name and renamed, so a failure leaves no file."""
    from ...db.backup import backup as run_backup

    progress = Progress("backup")
    result = run_backup(settings(), file, progress)
    progress.done()
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"backed up {result.database} to {result.file}: {result.tables} tables, "
        f"{result.bytes / 1e6:.1f} MB in {result.seconds:.1f} s"
    )


@db.command()
@click.argument("file", type=OsPath(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace a database that is not empty (the old one is kept, renamed).")
@json_option
def restore(file: Path, force: bool, as_json: bool) -> None:
    """Restore FILE (made by `db backup`) into the database, with its agents' roles.

    Only the file's rows are loaded, into a temporary database made by cli-org's migrations,
    renamed into place only when complete; a file holding any other object is refused.
    Roles that are missing are created without a login: give `--login` agents a password
    again. Other sessions on the database are ended."""
    from ...db.backup import restore as run_restore

    progress = Progress("restore")
    result = run_restore(settings(), file, force=force, progress=progress)
    progress.done()
    if as_json:
        emit_json(result)
        return
    click.echo(f"restored {result.file} into {result.database} in {result.seconds:.1f} s")
    if result.replaced:
        click.echo(f"the old database is kept as {result.replaced}")
    if result.roles_created:
        click.echo(f"roles created without a login: {', '.join(result.roles_created)}")
    if result.roles_disabled:
        click.echo(f"roles cut off (no such agent in the backup): {', '.join(result.roles_disabled)}")


COMMANDS = [init, db]
