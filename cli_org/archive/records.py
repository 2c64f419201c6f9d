"""What every harness parser produces: sessions it saw and the messages they hold."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime

HARNESSES = ("claude-code", "hermes", "codex")
KINDS = ("user", "assistant", "tool", "system")


@dataclass
class SessionInfo:
    """What one record says about its session; the importer merges these per session."""

    external_id: str
    parent: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    model: str | None = None
    title: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None

    def merge(self, other: SessionInfo) -> None:
        for name in ("parent", "cwd", "git_branch", "model", "title"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(other, name))
        self.started_at = _earliest(self.started_at, other.started_at)
        self.ended_at = _latest(self.ended_at, other.ended_at)


@dataclass
class Message:
    session: str
    source_key: str
    position: int
    kind: str
    raw: dict
    part: int = 0
    occurred_at: datetime | None = None
    text: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    command: str | None = None


@dataclass
class Parsed:
    """The result of one source record: usually one session touch and a few messages."""

    sessions: list[SessionInfo] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else min(a, b)


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def timestamp(value) -> datetime | None:
    """An ISO-8601 string or epoch seconds as an aware datetime; None when unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


def clean(value):
    """Drop NUL characters, which PostgreSQL refuses in text and jsonb; describe raw bytes."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value


def arguments(value) -> dict:
    """Tool arguments as a dict, whether given as an object or as a JSON string."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


_SHELLS = {"bash", "sh", "zsh", "dash", "fish", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "/usr/bin/zsh"}


def shell_command(args: dict) -> str | None:
    """The command line a shell tool runs, from the argument names harnesses use."""
    for key in ("command", "cmd"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return argv_command(value)
    return None


def argv_command(argv: list[str]) -> str:
    # ["bash", "-lc", "script"] runs the script; show that rather than the wrapper.
    if len(argv) >= 3 and argv[0] in _SHELLS and argv[-2] in ("-c", "-lc", "-ic", "-lic"):
        return argv[-1]
    return shlex.join(argv)


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
