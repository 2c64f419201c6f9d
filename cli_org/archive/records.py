"""What every harness parser produces: sessions it saw and the messages they hold."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..checks.rules import HARNESSES as HARNESSES  # the archive's harness names, defined once
from ..checks.rules import MESSAGE_KINDS as KINDS
from ..errors import InputError
from ..text import pg_text

# Real transcript lines nest about ten levels (a tool's input inside a content block inside
# a message); anything far deeper is hostile or broken, and would overflow recursive code.
MAX_DEPTH = 64


class BadRecord(InputError):
    """One line or row that cannot be imported; the importer skips it and counts the reason."""


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
    raw: dict[str, Any]
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


def timestamp(value: object) -> datetime | None:
    """An ISO-8601 string or epoch seconds as an aware datetime; None when unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
            # In UTC, so that an offset at the edge of year 1 or 9999 fails here, not when
            # the stored value is read back into Python.
            return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
        except (ValueError, OverflowError):
            return None
    return None


text = pg_text  # a string PostgreSQL accepts: no NUL, lone surrogates replaced


def clean(value: Any, depth: int = 0) -> Any:
    """A value jsonb and text columns accept: strings as `text()` makes them, NaN and
    infinities as null, raw bytes described; deeper than MAX_DEPTH raises BadRecord."""
    if isinstance(value, str):
        return text(value)
    if depth >= MAX_DEPTH and isinstance(value, dict | list | tuple):
        raise BadRecord(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        return {text(str(k)): clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v, depth + 1) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if value is None or isinstance(value, bool | int):
        return value
    return text(str(value))


def load_line(line: bytes) -> dict[str, Any]:
    """One JSON-lines record, cleaned; BadRecord names why a line cannot be read."""
    try:
        record = json.loads(line)
    except RecursionError:
        raise BadRecord(f"nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise BadRecord("not valid UTF-8") from None
    except ValueError:
        raise BadRecord("not JSON") from None
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object")
    cleaned: dict[str, Any] = clean(record)
    return cleaned


_SESSION_TEXT = ("parent", "cwd", "git_branch", "model", "title")
_MESSAGE_TEXT = ("text", "tool_name", "tool_call_id", "command")


def check(parsed: Parsed) -> Parsed:
    """Refuse a record whose fields have the wrong types, before any of it reaches the
    database: strings where strings belong, whole numbers for positions, datetimes."""
    for info in parsed.sessions:
        if not isinstance(info.external_id, str) or not info.external_id:
            raise BadRecord("session id is not a string")
        info.external_id = text(info.external_id)
        for name in _SESSION_TEXT:
            _check_text(info, name)
        for name in ("started_at", "ended_at"):
            if not isinstance(getattr(info, name), datetime | None):
                raise BadRecord(f"{name} is not a time")
    for m in parsed.messages:
        for name in ("session", "source_key"):
            if not isinstance(getattr(m, name), str):
                raise BadRecord(f"message {name} is not a string")
            setattr(m, name, text(getattr(m, name)))
        for name in ("position", "part"):
            value = getattr(m, name)
            if not isinstance(value, int) or isinstance(value, bool) or not -(2**63) <= value < 2**63:
                raise BadRecord(f"message {name} is not a whole number")
        if m.kind not in KINDS:
            raise BadRecord(f"message kind {m.kind!r} is unknown")
        if not isinstance(m.occurred_at, datetime | None):
            raise BadRecord("message time is not a time")
        if not isinstance(m.raw, dict):
            raise BadRecord("message record is not an object")
        for name in _MESSAGE_TEXT:
            _check_text(m, name)
    return parsed


def _check_text(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if value is None:
        return
    if not isinstance(value, str):
        raise BadRecord(f"{name} is not a string")
    setattr(obj, name, text(value))


def obj(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (for optional nested objects)."""
    return value if isinstance(value, dict) else {}


def arguments(value: object) -> dict[str, Any]:
    """Tool arguments as a dict, whether given as an object or as a JSON string."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = clean(json.loads(value))
        except (ValueError, RecursionError, BadRecord):
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


_SHELLS = {"bash", "sh", "zsh", "dash", "fish", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "/usr/bin/zsh"}


def shell_command(args: dict[str, Any]) -> str | None:
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


def compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
