"""Find the warm helper for this user and database, and ask it; None means "answer cold".

Standard library only, and only what a request needs: this runs in every `cli-org recall`
and `cli-org context` before click, psycopg or numpy load (`-X importtime` in
benchmarks/RESULTS.md shows what that saves).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ... import __version__
from ...local.places import data_dir_from
from ...local.private import private_folder

# The commands the helper answers; everything else runs cold.
KINDS = ("recall", "context", "hook")
# Waiting for a helper that is there takes well under a millisecond; one that does not
# accept within this is treated as absent.
CONNECT_TIMEOUT = 0.5
# A request runs a few statements, each bounded by CLI_ORG_STATEMENT_TIMEOUT (30 s by
# default); a helper silent for longer than this is given up on and the caller answers cold.
REPLY_TIMEOUT = 90.0
# A hook must end within the harness's limit (hooks.HARNESS_TIMEOUT, 10 s) even when a busy
# helper makes it answer cold afterwards (the cold hook bounds itself at 5 s): 3 + 5 < 10.
HOOK_REPLY_TIMEOUT = 3.0
# Idle seconds after which a helper exits (CLI_ORG_WARM_IDLE): a working session asks every
# few seconds to minutes; ten quiet minutes mean it is over, and the model's memory
# (about 150 MB resident) is given back.
IDLE_TIMEOUT = 600.0
_HEADER = struct.Struct("!I")

try:  # the built-in SHA-256: hashlib would first load OpenSSL, about 10 ms of a warm call
    from _sha2 import sha256  # type: ignore[import-not-found]  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]  # Python 3.11
    except ImportError:
        from hashlib import sha256
MAX_MESSAGE = 64 * 1024 * 1024


class Reply(NamedTuple):
    """What a cold `cli-org <kind> <args>` would have done: its exit code and its output."""

    exit_code: int
    stdout: str
    stderr: str


def enabled(env: Mapping[str, str]) -> bool:
    """CLI_ORG_WARM=0 turns the helper off: no asking, no starting."""
    return env.get("CLI_ORG_WARM", "1").strip() not in ("0", "off", "no", "false")


def fingerprint() -> str:
    """The code a helper runs: a caller from another version or checkout is not served."""
    return f"{__version__} {Path(__file__).resolve().parents[2]}"  # the cli_org package folder


def target(env: Mapping[str, str]) -> tuple[str, str]:
    """The key of the helper for the database this environment reaches, and a description
    that shows no secret. The key holds everything the connection is made from: the data
    dir and database name of the embedded server, or the whole URL (credentials included);
    and the libpq PG* variables. So a caller only reaches a helper whose connection it
    could have made itself."""
    url = env.get("CLI_ORG_DATABASE_URL") or ""
    libpq = sorted((k, v) for k, v in env.items() if k.startswith("PG"))
    if url:
        material: list[object] = ["url", url]
        shown = "the server of CLI_ORG_DATABASE_URL"
    else:
        data_dir = os.path.realpath(data_dir_from(env))
        name = env.get("CLI_ORG_DATABASE") or "org"
        material = ["embedded", data_dir, name]
        shown = f"database {name} of the embedded server in {data_dir}"
    digest = sha256(json.dumps([material, libpq]).encode("utf-8", "surrogateescape")).hexdigest()
    return digest[:32], shown


def folder(env: Mapping[str, str]) -> Path:
    """Where this user's helpers keep their sockets: CLI_ORG_WARM_DIR, else `cli-org-warm`
    in XDG_RUNTIME_DIR (the user's own runtime folder), else `cli-org-warm-<uid>` in TMPDIR
    or /tmp. Made private to the user (0700) or refused. (Not tempfile.gettempdir(): its
    import costs more than the rest of a warm call's imports.)"""
    if env.get("CLI_ORG_WARM_DIR"):
        return Path(env["CLI_ORG_WARM_DIR"]).expanduser()
    if env.get("XDG_RUNTIME_DIR"):
        return Path(env["XDG_RUNTIME_DIR"]) / "cli-org-warm"
    return Path(env.get("TMPDIR") or "/tmp") / f"cli-org-warm-{os.geteuid()}"


def socket_path(env: Mapping[str, str]) -> Path:
    return folder(env) / f"{target(env)[0]}.sock"


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    sock.sendall(_HEADER.pack(len(data)) + data)


def receive(sock: socket.socket) -> dict[str, Any]:
    """One length-prefixed JSON object; ConnectionError if the other side went away."""
    (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size))
    if size > MAX_MESSAGE:
        raise ConnectionError("message too large")
    message = json.loads(_exactly(sock, size).decode("utf-8"))
    if not isinstance(message, dict):
        raise ConnectionError("not a message")
    return message


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end (Linux); None where it cannot be read."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(uid)


def _connect(env: Mapping[str, str]) -> socket.socket | None:
    """A connection to this database's helper, or None (no helper, or one not safe to use)."""
    path = socket_path(env)
    try:
        st = path.parent.lstat()
    except OSError:
        return None
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None  # a folder someone else made or left open is never trusted
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(str(path))
        uid = peer_uid(sock)
        if uid is not None and uid != os.geteuid():
            raise ConnectionError("the helper runs as another user")
    except OSError:
        sock.close()
        return None
    return sock


def request(env: Mapping[str, str], message: dict[str, Any], timeout: float = REPLY_TIMEOUT) -> dict[str, Any] | None:
    """Send one message to this database's helper and return its answer; None on any failure."""
    sock = _connect(env)
    if sock is None:
        return None
    try:
        with sock:
            sock.settimeout(timeout)
            send(sock, {"version": fingerprint(), "key": target(env)[0], **message})
            return receive(sock)
    except (OSError, ValueError):
        return None


def _sendable(values: list[str]) -> bool:
    """Text that is not UTF-8 (lone surrogates) cannot travel; the cold path refuses it in one line."""
    try:
        for value in values:
            value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def ask(
    kind: str, args: list[str], env: Mapping[str, str] | None = None, cwd: str | None = None, stdin: str = ""
) -> Reply | None:
    """Run `cli-org <kind> <args...>` in the warm helper, as the environment `env` (default:
    this process's) and the folder `cwd` (default: the current one) would run it cold, with
    `stdin` as its standard input (a hook's JSON).

    Returns the reply (exit code, stdout, stderr: the same bytes a cold process prints), or
    None when the helper is off, absent, busy past the timeout, from another version, or
    fails in any way: then the caller runs the command itself. The agent is whatever the
    arguments and `env` name (`--as`, ORG_AGENT); the helper sets that role per request on
    its own connection, which is the connection this environment would open.
    """
    env = dict(os.environ if env is None else env)
    if kind not in KINDS or not enabled(env):
        return None
    cwd = os.getcwd() if cwd is None else cwd
    if not _sendable([*args, cwd, stdin, *env, *env.values()]):
        return None
    timeout = HOOK_REPLY_TIMEOUT if kind == "hook" else REPLY_TIMEOUT
    answer = request(env, {"kind": kind, "args": list(args), "env": env, "cwd": cwd, "stdin": stdin}, timeout)
    if not answer or "exit_code" not in answer:
        return None
    try:
        return Reply(int(answer["exit_code"]), str(answer["stdout"]), str(answer["stderr"]))
    except (KeyError, TypeError, ValueError):
        return None


def environment() -> dict[str, str]:
    """This process's environment with what cli-org takes from the current folder's .env
    under it, as the CLI sees it (config.DOTENV_TAKEN: never the database or the identity).
    The command, cold or in the helper, warns about what the .env held and was ignored."""
    env = dict(os.environ)
    if Path(".env").is_file():
        from ...config import dotenv_settings

        for key, value in dotenv_settings()[0].items():
            env.setdefault(key, value)
    return env


def answer_command(argv: list[str]) -> int | None:
    """The CLI's first step: if a helper answers `cli-org <argv>`, print its output and
    return the exit code; None means run the command cold."""
    if not argv or argv[0] not in KINDS:
        return None
    env = environment()
    if not enabled(env):
        return None
    stdin = ""
    if argv[0] == "hook":  # read once: the helper gets it, or the cold run below reads it back
        import io

        stdin = sys.stdin.read()
        sys.stdin = io.StringIO(stdin)
    reply = ask(argv[0], argv[1:], env, os.getcwd(), stdin)
    if reply is None:
        return None
    sys.stdout.write(reply.stdout)
    sys.stdout.flush()
    sys.stderr.write(reply.stderr)
    sys.stderr.flush()
    return reply.exit_code


def start(env: Mapping[str, str] | None = None) -> bool:
    """Start this database's helper in the background unless it is off or answers already.
    Never waits for it; returns whether one was launched. A second helper for the same
    database finds the first one's lock and exits at once."""
    env = dict(os.environ if env is None else env)
    if not enabled(env) or not _sendable([*env, *env.values()]):
        return False
    if private_folder(folder(env)) is not None:
        return False
    probe = _connect(env)
    if probe is not None:
        probe.close()
        return False
    import subprocess

    package_root = str(Path(__file__).resolve().parents[3])  # the folder holding cli_org
    child_env = {**env, "PYTHONPATH": os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)}
    try:
        subprocess.Popen(
            [sys.executable, "-m", "cli_org", "warm", "serve"],
            env=child_env,
            cwd=package_root,  # `-m` looks in the folder first: the same code as this process
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return False
    return True
