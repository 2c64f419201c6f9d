"""Claude Code transcripts: `<project>/<session>.jsonl`, subagents in `<session>/subagents/`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .jsonl import files  # noqa: F401  (the importer reads each harness module's files())
from .records import BadRecord, Message, Parsed, SessionInfo, clean, compact, obj, shell_command, timestamp

HARNESS = "claude-code"
SHELL_TOOLS = ("Bash",)
# Lines that are not conversation: hook and tool progress (which repeats a subagent's own
# lines), file-history snapshots (no sessionId), queue operations, summaries.
_MESSAGE_TYPES = ("user", "assistant", "system")


class TranscriptFile:
    """One transcript file; a subagent file becomes a child of the session it names."""

    harness = HARNESS

    def __init__(self, path: Path) -> None:
        self.path = path
        self.agent = path.stem if path.parent.name == "subagents" else None

    def parse(self, record: dict[str, Any], line_no: int) -> Parsed:
        if record.get("type") not in _MESSAGE_TYPES or not record.get("sessionId"):
            return Parsed()
        session_id = record["sessionId"]
        if not isinstance(session_id, str):
            raise BadRecord("sessionId is not a string")
        at = timestamp(record.get("timestamp"))
        info = SessionInfo(
            external_id=session_id,
            cwd=record.get("cwd"),
            git_branch=record.get("gitBranch") or None,
            started_at=at,
            ended_at=at,
        )
        if self.agent:
            # Subagent lines carry the parent's sessionId; the file names the subagent.
            agent = record.get("agentId")
            info.external_id = f"{session_id}/{'agent-' + agent if agent else self.agent}"
            info.parent = session_id
        message = obj(record.get("message"))
        if record["type"] == "assistant":
            info.model = message.get("model") if message.get("model") != "<synthetic>" else None
        key = str(record.get("uuid") or f"L{line_no}")
        raw = clean(record)
        if record["type"] == "system":
            text = record.get("content") if isinstance(record.get("content"), str) else record.get("subtype")
            system = Message(
                session=info.external_id,
                source_key=key,
                position=line_no,
                kind="system",
                raw=raw,
                occurred_at=at,
                text=clean(text),
            )
            return Parsed([info], [system])
        messages = []
        for part, (kind, fields) in enumerate(_blocks(record, message)):
            messages.append(
                Message(
                    session=info.external_id,
                    source_key=key if part == 0 else f"{key}#{part}",
                    position=line_no,
                    part=part,
                    kind=kind,
                    raw=raw if part == 0 else {"part_of": key},
                    occurred_at=at,
                    **{name: clean(value) for name, value in fields.items()},
                )
            )
        return Parsed([info], messages)


def _blocks(record: dict[str, Any], message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, fields) per content block; one line usually holds exactly one block."""
    role = record["type"]
    plain = "system" if record.get("isMeta") or record.get("isCompactSummary") else role
    content = message.get("content")
    if isinstance(content, str) or not content:
        yield plain, {"text": content if isinstance(content, str) else None}
        return
    for block in content:
        if not isinstance(block, dict):
            yield plain, {"text": str(block)}
            continue
        kind = block.get("type")
        if kind == "text":
            yield plain, {"text": block.get("text")}
        elif kind == "thinking":
            yield "assistant", {"text": block.get("thinking")}
        elif kind == "tool_use":
            args = obj(block.get("input"))
            command = shell_command(args) if block.get("name") in SHELL_TOOLS else None
            yield (
                "assistant",
                {
                    "tool_name": block.get("name"),
                    "tool_call_id": block.get("id"),
                    "command": command,
                    "text": command or compact(args),
                },
            )
        elif kind == "tool_result":
            yield "tool", {"tool_call_id": block.get("tool_use_id"), "text": _result_text(block.get("content"))}
        else:
            yield plain, {"text": f"[{kind}]"}


def _result_text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return None
