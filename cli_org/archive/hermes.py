"""Hermes' SQLite store (`state.db`): sessions and messages tables, opened read-only.

Later schema versions add columns, so rows are read by name and only the columns below
are required. Compression starts a new session whose parent_session_id names the old one,
and can copy earlier messages into it; copied tool calls keep their ids.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .records import Message, SessionInfo, arguments, clean, compact, shell_command, timestamp

HARNESS = "hermes"
SHELL_TOOLS = ("terminal",)
_REQUIRED = {"sessions": {"id"}, "messages": {"id", "session_id", "role"}}
_ROLES = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}


@dataclass
class Store:
    sessions: list[SessionInfo]
    messages: list[Message]
    last_row_id: int | None


def store_path(path: Path) -> Path:
    """A HERMES_HOME folder or the state.db file itself."""
    return path / "state.db" if path.is_dir() else path


def read(path: Path, after: int = 0) -> Store:
    """Every session, and the messages with an id above `after`."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open Hermes store {path}: {exc}") from None
    db.row_factory = sqlite3.Row
    try:
        _check_columns(db, path)
        sessions = [_session(dict(row)) for row in db.execute("SELECT * FROM sessions")]
        rows = [dict(r) for r in db.execute("SELECT * FROM messages WHERE id > ? ORDER BY id", (after,))]
        last = db.execute("SELECT max(id) FROM messages").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise InputError(f"cannot read Hermes store {path}: {exc}") from None
    finally:
        db.close()
    messages = [m for row in rows for m in _messages(row)]
    return Store(sessions, messages, last)


def _check_columns(db: sqlite3.Connection, path: Path) -> None:
    for table, needed in _REQUIRED.items():
        have = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
        missing = needed - have
        if missing:
            raise InputError(f"{path} is not a Hermes store: table {table} lacks {', '.join(sorted(missing))}")


def _session(row: dict) -> SessionInfo:
    return SessionInfo(
        external_id=str(row["id"]),
        parent=str(row["parent_session_id"]) if row.get("parent_session_id") else None,
        cwd=row.get("cwd"),
        model=row.get("model"),
        title=row.get("title"),
        started_at=timestamp(row.get("started_at")),
        ended_at=timestamp(row.get("ended_at")),
    )


def _messages(row: dict) -> list[Message]:
    session = str(row["session_id"])
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
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
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


def _calls(value) -> list[dict]:
    if not value:
        return []
    try:
        calls = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
