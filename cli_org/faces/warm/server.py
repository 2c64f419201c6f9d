"""The helper's loop: one socket per user and database, one request at a time, an idle exit.

What a request runs is the caller's business (the CLI passes a handler that runs the
command in-process); this module only guards the door:

- the socket lives in a folder only the user can enter (0700, checked like the embedded
  server's, `private.py`) and is itself 0600;
- a peer running as another user is refused (SO_PEERCRED), whatever the permissions;
- a request must name this helper's database key and code version, or it is sent back
  (the caller answers cold; a version mismatch also stops this helper, so the next call
  starts a current one);
- only one helper per key: the second finds the lock taken and exits.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...local.private import private_folder
from .client import (
    IDLE_TIMEOUT,
    KINDS,
    enabled,
    fingerprint,
    folder,
    peer_uid,
    receive,
    request,
    send,
    target,
)


def idle_timeout(env: Mapping[str, str]) -> float:
    """CLI_ORG_WARM_IDLE seconds (default IDLE_TIMEOUT), above 0 and at most a day."""
    raw = env.get("CLI_ORG_WARM_IDLE")
    try:
        value = float(raw) if raw else IDLE_TIMEOUT
    except ValueError:
        raise ConfigError(f"CLI_ORG_WARM_IDLE must be a number of seconds, not {raw!r}") from None
    if not 0 < value <= 86400:
        raise ConfigError(f"CLI_ORG_WARM_IDLE must be above 0 and at most 86400 seconds, not {raw!r}")
    return value


@dataclass
class Status:
    """What `warm status` shows about this database's helper."""

    running: bool
    target: str
    socket: str
    enabled: bool
    pid: int | None = None
    started_at: float | None = None
    idle_timeout: float | None = None
    requests: int | None = None


def status(env: Mapping[str, str]) -> Status:
    key, shown = target(env)
    path = folder(env) / f"{key}.sock"
    found = Status(False, shown, str(path), enabled(env))
    answer = request(env, {"kind": "status"}, timeout=5)
    if answer and answer.get("pid"):
        found.running = True
        found.pid = int(answer["pid"])
        found.started_at = answer.get("started_at")
        found.idle_timeout = answer.get("idle_timeout")
        found.requests = answer.get("requests")
    return found


def stop(env: Mapping[str, str]) -> bool:
    """Ask this database's helper to exit; False when none answered."""
    answer = request(env, {"kind": "stop"}, timeout=5)
    return bool(answer and answer.get("stopping"))


Handler = Callable[[str, list[str], dict[str, str], str, str], dict[str, Any]]


def serve(
    env: Mapping[str, str], handle: Handler, *, idle: float | None = None, prepare: Callable[[], None] | None = None
) -> str:
    """Serve requests for the database `env` reaches until idle for `idle` seconds (default
    CLI_ORG_WARM_IDLE), a stop request, SIGTERM or SIGINT. `handle(kind, args, env, cwd, stdin)`
    returns {"exit_code", "stdout", "stderr"} or raises, which sends the caller cold.
    `prepare()` runs once this process holds the database's lock, before the socket opens
    (loading what the first request should not wait for). Returns why it ended."""
    idle = idle_timeout(env) if idle is None else idle
    key, _shown = target(env)
    where = folder(env)
    problem = private_folder(where)
    if problem:
        raise ConfigError(f"the helper folder {where} is not private ({problem}); remove it")
    lock_file = open(where / f"{key}.lock", "w")  # noqa: SIM115 (held for the life of the loop)
    try:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "another helper serves this database"
        if prepare is not None:
            prepare()
        return _loop(where / f"{key}.sock", key, handle, idle)
    finally:
        lock_file.close()


class Stopped(BaseException):
    """SIGTERM or SIGINT: unwinds the request in hand (its caller answers cold) and the loop."""


def _stop_on_signal(signum: int, frame: object) -> None:
    raise Stopped(signum)


def _loop(path: Path, key: str, handle: Handler, idle: float) -> str:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # left by a helper that was killed; the lock says none is running
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket is born 0600
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    listener.listen(16)
    previous = {s: signal.signal(s, _stop_on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    started, served = time.time(), 0
    try:
        listener.settimeout(idle)
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                return "idle"
            with conn:
                outcome = _one(conn, key, handle, {"started_at": started, "idle_timeout": idle, "requests": served})
            if outcome == "served":
                served += 1
            elif outcome in ("stop", "version"):
                return outcome
    except Stopped:
        return "signal"
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _one(conn: socket.socket, key: str, handle: Handler, info: dict[str, Any]) -> str:
    """Answer one connection; returns "served", "stop", "version" or "refused"."""
    conn.settimeout(10)
    try:
        uid = peer_uid(conn)
        if uid is not None and uid != os.geteuid():
            return "refused"
        message = receive(conn)
    except (OSError, ValueError):
        return "refused"
    conn.settimeout(None)
    if message.get("key") != key:
        return _reply(conn, {"cold": "another database"}, "refused")
    if message.get("version") != fingerprint():
        return _reply(conn, {"cold": "another version"}, "version")
    kind = message.get("kind")
    if kind == "status":
        return _reply(conn, {"pid": os.getpid(), **info}, "refused")
    if kind == "stop":
        return _reply(conn, {"stopping": True}, "stop")
    args, env, cwd, stdin = message.get("args"), message.get("env"), message.get("cwd"), message.get("stdin", "")
    if (
        kind not in KINDS
        or not isinstance(args, list)
        or not all(isinstance(a, str) for a in args)
        or not isinstance(env, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        or not isinstance(cwd, str)
        or not isinstance(stdin, str)
        or target(env)[0] != key  # the environment it runs in reaches this database, no other
    ):
        return _reply(conn, {"cold": "malformed"}, "refused")
    try:
        answer = handle(kind, args, env, cwd, stdin)
    except Exception as exc:  # anything unexpected: the caller answers cold
        return _reply(conn, {"cold": f"{type(exc).__name__}"}, "refused")
    return _reply(conn, answer, "served")


def _reply(conn: socket.socket, message: dict[str, Any], outcome: str) -> str:
    with contextlib.suppress(OSError, TypeError, ValueError):
        send(conn, message)
    return outcome
