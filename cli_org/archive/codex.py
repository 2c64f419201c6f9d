"""Codex rollout files: `sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl`.

Each line is `{timestamp, type, payload}`; older versions wrote the payload bare. The shell
tool has had several names: `shell` and `container.exec` (argv list in `command`),
`shell_command` (a string `command`), `exec_command` (a string `cmd`) and the
`local_shell_call` item (argv in `action.command`). All of them fill `command`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .jsonl import files  # noqa: F401  (the importer reads each harness module's files())
from .records import (
    BadRecord,
    Message,
    Parsed,
    SessionInfo,
    arguments,
    argv_command,
    clean,
    compact,
    obj,
    shell_command,
    timestamp,
)

HARNESS = "codex"
SHELL_TOOLS = ("exec_command", "shell", "shell_command", "container.exec", "local_shell")
_ID_IN_NAME = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
_ITEM_TYPES = {
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
}


class TranscriptFile:
    harness = HARNESS

    def __init__(self, path: Path) -> None:
        self.path = path
        # The file name carries the session id, so lines read after the first import still
        # know their session without the session_meta line.
        found = _ID_IN_NAME.search(path.stem)
        self.session = found[1] if found else None

    def parse(self, record: dict[str, Any], line_no: int) -> Parsed:
        at = timestamp(record.get("timestamp"))
        kind = record.get("type")
        payload = record.get("payload")
        if not isinstance(payload, dict):
            # Early rollouts: the first line is the session header, the rest bare items.
            if kind in _ITEM_TYPES:
                kind, payload = "response_item", record
            elif "id" in record and "timestamp" in record and kind is None:
                kind, payload = "session_meta", record
            else:
                return Parsed()
        if kind == "session_meta":
            git = obj(payload.get("git"))
            if not isinstance(payload.get("id"), str | None):
                raise BadRecord("session id is not a string")
            self.session = self.session or payload.get("id")
            started = timestamp(payload.get("timestamp")) or at
            return Parsed(
                [
                    SessionInfo(
                        self._session(),
                        cwd=payload.get("cwd"),
                        git_branch=git.get("branch"),
                        started_at=started,
                        ended_at=at,
                    )
                ]
            )
        info = SessionInfo(self._session(), started_at=at, ended_at=at)
        if kind == "turn_context":
            info.model = payload.get("model")
            info.cwd = payload.get("cwd")
            return Parsed([info])
        if kind != "response_item":
            # event_msg lines repeat what the response items already hold.
            return Parsed([info])
        fields = _item(payload)
        if fields is None:
            return Parsed([info])
        message = Message(
            session=info.external_id,
            source_key=f"L{line_no}",
            position=line_no,
            occurred_at=at,
            raw=clean(record),
            **{name: clean(value) for name, value in fields.items()},
        )
        return Parsed([info], [message])

    def _session(self) -> str:
        return self.session or self.path.stem


def _item(item: dict[str, Any]) -> dict[str, Any] | None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        parts = [c.get("text") for c in item.get("content") or [] if isinstance(c, dict)]
        text = "\n".join(p for p in parts if isinstance(p, str))
        return {"kind": role if role in ("user", "assistant") else "system", "text": text}
    if kind == "reasoning":
        summary = [s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict)]
        return {"kind": "assistant", "text": "\n".join(summary) or None}
    if kind in ("function_call", "custom_tool_call"):
        name = item.get("name")
        # An MCP tool's call names its server apart: the namespace `mcp__cli_org` and the
        # function `org_recall`. Joined, the name says which server's tool it was.
        space = item.get("namespace")
        if isinstance(space, str) and space and isinstance(name, str) and not name.startswith(space):
            name = f"{space}__{name}" if not space.endswith("_") else space + name
        args = arguments(item.get("arguments")) if kind == "function_call" else {}
        command = shell_command(args) if name in SHELL_TOOLS else None
        shown = command or (item.get("arguments") if kind == "function_call" else item.get("input"))
        return {
            "kind": "assistant",
            "tool_name": name,
            "tool_call_id": item.get("call_id"),
            "command": command,
            "text": shown if isinstance(shown, str) else compact(shown),
        }
    if kind == "local_shell_call":
        action = obj(item.get("action"))
        argv = action.get("command")
        command = argv_command(argv) if isinstance(argv, list) and argv else None
        return {
            "kind": "assistant",
            "tool_name": "local_shell",
            "tool_call_id": item.get("call_id") or item.get("id"),
            "command": command,
            "text": command,
        }
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        if isinstance(output, dict):
            output = output.get("output") or output.get("content")
        return {
            "kind": "tool",
            "tool_call_id": item.get("call_id"),
            "text": output if isinstance(output, str) else compact(output),
        }
    if kind == "web_search_call":
        return {"kind": "assistant", "tool_name": "web_search", "tool_call_id": item.get("id"), "text": None}
    return None
