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
    # CLI_ORG_READ_URL, the replica that recall, search and context read from (docs/operations.md, Read
    # replicas), masked or without a password as `url` is; None when reads use the primary.
    read_url: str | None = None


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


def masked_url(conninfo: str, *, show_password: bool = False) -> str:
    """A URL or conninfo string as a postgresql:// URL, its password shown as MASK unless
    `show_password`: the one way a configured URL (primary or replica) is printed."""
    params = conninfo_to_dict(conninfo)
    if params.get("password") and not show_password:
        params["password"] = MASK
    return url_from(params)


def read_url(settings: Settings, *, show_password: bool = False) -> str | None:
    """The admin's read URL: CLI_ORG_READ_URL, masked as the primary's is; None without one."""
    return masked_url(settings.read_url, show_password=show_password) if settings.read_url else None


def admin_access(settings: Settings, *, show_password: bool = False, start: bool = True) -> Access | None:
    """The admin's URL: CLI_ORG_DATABASE_URL (password masked unless `show_password`), or
    the embedded superuser over the server's socket; with it CLI_ORG_READ_URL, masked the
    same way. None when the embedded server is not running and `start` is false."""
    replica = read_url(settings, show_password=show_password)
    if settings.database_url:
        params = conninfo_to_dict(settings.database_url)
        return Access(
            masked_url(settings.database_url, show_password=show_password),
            str(params.get("user", "")),
            str(params.get("dbname", "")),
            None,
            None,
            replica,
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
    return Access(url_from(params), embedded.SUPERUSER, settings.database_name, None, None, replica)


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
    replica = None
    if settings.read_url:
        # The same role on the replica (roles and passwords replicate), and no password either.
        read = conninfo_to_dict(settings.read_url)
        read.pop("password", None)
        read.pop("passfile", None)
        read["user"] = row["role_name"]
        replica = url_from(read)
    return Access(url_from(params), row["role_name"], str(params.get("dbname", "")), agent, PASSWORD_FROM, replica)


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
