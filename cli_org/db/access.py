"""How a person or a tool gets into the database: a libpq URL, and psql with it.

The admin URL is the embedded server's superuser over its private socket, or
CLI_ORG_DATABASE_URL itself. A member's URL is the agent's own login role over TCP and
never carries a password: psql and every libpq client read it from PGPASSWORD or
~/.pgpass, and it is the password given to `cli-org agents add --login`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from psycopg.conninfo import conninfo_to_dict

from ..config import Settings
from ..errors import InputError, NotFound
from . import Conn, embedded
from .errors import translated
from .queries import sql
from .session import owns_transaction

MASK = "********"
PASSWORD_FROM = "PGPASSWORD or ~/.pgpass (the password given to `cli-org agents add --login`)"


@dataclass
class Access:
    url: str  # a libpq URL; its password masked unless asked for
    user: str
    database: str
    agent: str | None  # None: the admin
    password_from: str | None  # where a client finds the password, when the URL has none


def url_from(conninfo: Mapping[str, str | int | None]) -> str:
    """A postgresql:// URL from conninfo parameters; a socket folder (a host that starts
    with '/') and any other parameter go in the query string."""
    params = {k: str(v) for k, v in conninfo.items() if v is not None and str(v) != ""}
    user = quote(params.pop("user", ""), safe="")
    password = params.pop("password", None)
    dbname = quote(params.pop("dbname", ""), safe="")
    host = params.get("host", "")
    netloc = ""
    if host and "," not in host and not host.startswith("/"):
        params.pop("host")
        netloc = f"[{host}]" if ":" in host else quote(host, safe="")
        port = params.get("port", "")
        if port and "," not in port:
            netloc += f":{params.pop('port')}"
    if user:
        auth = user + (f":{quote(password, safe='') if password != MASK else MASK}" if password else "")
        netloc = f"{auth}@{netloc}"
    query = "&".join(f"{k}={quote(v, safe='/')}" for k, v in params.items())
    return f"postgresql://{netloc}/{dbname}" + (f"?{query}" if query else "")


def admin_access(settings: Settings, *, show_password: bool = False, start: bool = True) -> Access | None:
    """The admin's URL: CLI_ORG_DATABASE_URL (password masked unless `show_password`), or
    the embedded superuser over the server's socket. None when the embedded server is not
    running and `start` is false."""
    if settings.database_url:
        params = conninfo_to_dict(settings.database_url)
        if params.get("password") and not show_password:
            params["password"] = MASK
        return Access(
            url_from(params), str(params.get("user", "")), str(params.get("dbname", "")), None, None
        )
    server = embedded.ensure_running(settings.data_dir) if start else embedded.running(settings.data_dir)
    if server is None:
        return None
    params = {
        "user": embedded.SUPERUSER,
        "dbname": settings.database_name,
        "host": str(server.socket_dir),
        "port": str(server.port),
    }
    return Access(url_from(params), embedded.SUPERUSER, settings.database_name, None, None)


@owns_transaction
def member_access(conn: Conn, settings: Settings, agent: str) -> Access:
    """The agent's own login: its role over TCP (127.0.0.1 for the embedded server, the
    URL's host otherwise), with no password in the URL."""
    with translated(conn):
        row = conn.execute(sql("agents.login"), {"name": agent}).fetchone()
        conn.rollback()
    if row is None:
        raise NotFound(f"unknown agent {agent!r}; see `cli-org agents list`")
    if not row["can_login"]:
        raise InputError(
            f"agent {agent!r} (role {row['role_name']}) has no login of its own: it was added without --login; "
            "leave out --as to connect as the admin"
        )
    if settings.database_url:
        params = conninfo_to_dict(settings.database_url)
        params.pop("password", None)
        params.pop("passfile", None)
    else:
        server = embedded.ensure_running(settings.data_dir)
        params = {"host": "127.0.0.1", "port": str(server.port), "dbname": settings.database_name}
    params["user"] = row["role_name"]
    return Access(url_from(params), row["role_name"], str(params.get("dbname", "")), agent, PASSWORD_FROM)


def psql_argv(settings: Settings, access: Access, args: list[str]) -> tuple[list[str], dict[str, str]]:
    """The psql that ships with the embedded server, pointed at `access`; a password from
    CLI_ORG_DATABASE_URL travels in PGPASSWORD (not on the command line, where ps shows it)."""
    env: dict[str, str] = {}
    url = access.url
    if access.agent is None and settings.database_url:
        params = conninfo_to_dict(settings.database_url)
        password = params.pop("password", None)
        if password:
            env["PGPASSWORD"] = str(password)
        url = url_from(params)
    return [str(embedded.psql_path()), url, *args], env
