"""Hermes' SQLite store (`state.db`): sessions and messages tables, opened read-only.

Later schema versions add columns, so rows are read by name and only the columns below
are required. Compression starts a new session whose parent_session_id names the old one,
and can copy earlier messages into it; copied tool calls keep their ids.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .records import (
    BadRecord,
    Message,
    Parsed,
    SessionInfo,
    arguments,
    check,
    clean,
    compact,
    obj,
    shell_command,
    timestamp,
)

HARNESS = "hermes"
SHELL_TOOLS = ("terminal",)
_REQUIRED = {"sessions": {"id"}, "messages": {"id", "session_id", "role"}}
_ROLES = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}


@dataclass
class Store:
    sessions: list[SessionInfo]
    messages: list[Message]
    last_row_id: int | None
    skipped: dict[str, int] = field(default_factory=dict)  # rows left out, by reason


def store_path(path: Path) -> Path:
    """A HERMES_HOME folder or the state.db file itself."""
    return path / "state.db" if path.is_dir() else path


def read(path: Path, after: int = 0) -> Store:
    """Every session, and the messages with an id above `after`."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open the Hermes store: {exc}") from None
    db.row_factory = sqlite3.Row
    # SQLite does not check that TEXT is UTF-8; one bad row must not stop the read.
    db.text_factory = lambda data: data.decode("utf-8", "replace")
    try:
        _check_columns(db)
        session_rows = [dict(row) for row in db.execute("SELECT * FROM sessions")]
        rows = [dict(r) for r in db.execute("SELECT * FROM messages WHERE id > ? ORDER BY id", (after,))]
        last = db.execute("SELECT max(id) FROM messages").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise InputError(f"cannot read the Hermes store: {exc}") from None
    finally:
        db.close()
    store = Store([], [], last if isinstance(last, int) else None)
    for row in session_rows:
        parsed = _isolated(store, session_row, row)
        store.sessions.extend(parsed.sessions if parsed else [])
    for row in rows:
        parsed = _isolated(store, message_row, row)
        store.messages.extend(parsed.messages if parsed else [])
    return store


def session_row(row: dict[str, Any]) -> Parsed:
    """One row of the sessions table, checked; BadRecord when it cannot be imported."""
    try:
        return check(Parsed([_session(clean(row))]))
    except BadRecord:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadRecord(f"unexpected shape ({type(exc).__name__})") from None


def message_row(row: dict[str, Any]) -> Parsed:
    """One row of the messages table as its messages, checked; BadRecord when it cannot be imported."""
    try:
        return check(Parsed([], _messages(clean(row))))
    except BadRecord:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadRecord(f"unexpected shape ({type(exc).__name__})") from None


def _isolated(store: Store, parse: Callable[[dict[str, Any]], Parsed], row: dict[str, Any]) -> Parsed | None:
    """One row parsed; a row that cannot be read is counted by its reason and left out."""
    try:
        return parse(row)
    except BadRecord as exc:
        store.skipped[str(exc)] = store.skipped.get(str(exc), 0) + 1
        return None


def _check_columns(db: sqlite3.Connection) -> None:
    for table, needed in _REQUIRED.items():
        have = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
        missing = needed - have
        if missing:
            raise InputError(f"not a Hermes store: table {table} lacks {', '.join(sorted(missing))}")


def _id(value: object) -> str:
    if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
        return str(value)
    raise BadRecord("session id is not a string")


def _session(row: dict[str, Any]) -> SessionInfo:
    return SessionInfo(
        external_id=_id(row["id"]),
        parent=_id(row["parent_session_id"]) if row.get("parent_session_id") else None,
        cwd=row.get("cwd"),
        model=row.get("model"),
        title=row.get("title"),
        started_at=timestamp(row.get("started_at")),
        ended_at=timestamp(row.get("ended_at")),
    )


def _messages(row: dict[str, Any]) -> list[Message]:
    session = _id(row["session_id"])
    key = f"m{row['id']}"
    at = timestamp(row.get("timestamp"))
    raw = clean(row)
    kind = _ROLES.get(row["role"], "system")
    first = Message(
        session=session,
        source_key=key,
        position=row["id"],
        kind=kind,
        raw=raw,
        occurred_at=at,
        text=clean(row.get("content")),
        tool_name=row.get("tool_name"),
        tool_call_id=row.get("tool_call_id"),
    )
    out = [first]
    for n, call in enumerate(_calls(row.get("tool_calls")), start=1):
        function = obj(call.get("function"))
        name = function.get("name") or call.get("name")
        args = arguments(function.get("arguments"))
        command = shell_command(args) if name in SHELL_TOOLS else None
        out.append(
            Message(
                session=session,
                source_key=f"{key}#{n}",
                position=row["id"],
                part=n,
                kind="assistant",
                raw=clean(call),
                occurred_at=at,
                text=clean(command or function.get("arguments") or compact(args)),
                tool_name=name,
                tool_call_id=call.get("id") or call.get("call_id"),
                command=clean(command),
            )
        )
    return out


def _calls(value: object) -> list[dict[str, Any]]:
    if not value:
        return []
    try:
        calls = clean(json.loads(value)) if isinstance(value, str) else value
    except (ValueError, RecursionError, BadRecord):
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
