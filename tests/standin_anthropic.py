"""Anthropic's messages protocol for the stand-in model API (tests/standin.py), as Claude
Code speaks it: POST /v1/messages, streamed as server-sent events (message_start,
content_block_start / _delta / _stop per block, message_delta with the stop reason,
message_stop) or answered whole; POST /v1/messages/count_tokens; anything else (Claude
Code's HEAD / at start) gets an empty JSON object.

The model is a script: `Scripted(script)` asks `script(body)` for the content blocks that
answer a request (`text(...)`, `tool_use(...)`), so a turn depends only on what the
conversation holds, never on how many side requests came before it. It also times each
tool round trip through the harness: from the moment the stand-in finished sending a
`tool_use` to the moment the request carrying its `tool_result` arrived.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.standin import Reply, Request, json_reply, sse

Block = dict[str, Any]


@dataclass
class Turn:
    """What the model answers: its blocks, and optionally how many input tokens the usage
    reports (a context near its window makes the harness compact before its next request)."""

    blocks: list[Block]
    input_tokens: int | None = None


def text(words: str) -> Block:
    return {"type": "text", "text": words}


def tool_use(name: str, arguments: dict[str, Any], id: str) -> Block:
    return {"type": "tool_use", "id": id, "name": name, "input": arguments}


def messages(body: Any) -> list[dict[str, Any]]:
    return body.get("messages") or [] if isinstance(body, dict) else []


def contents(message: dict[str, Any]) -> list[Block]:
    """A message's content as blocks (a plain string is one text block)."""
    content = message.get("content")
    return [text(content)] if isinstance(content, str) else [b for b in content or [] if isinstance(b, dict)]


def block_text(block: Block) -> str:
    """What a block puts in front of the model as text (a tool_result's content, a text)."""
    content = block.get("content", block.get("text", ""))
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def tool_results(body: Any) -> dict[str, Block]:
    """Every tool_result in the conversation, by its tool_use_id."""
    return {
        b["tool_use_id"]: b
        for m in messages(body)
        if m.get("role") == "user"
        for b in contents(m)
        if b.get("type") == "tool_result"
    }


def prompt_text(body: Any) -> str:
    """All the text the model reads: the system prompt and every message's text blocks."""
    system = body.get("system") if isinstance(body, dict) else None
    parts = [system] if isinstance(system, str) else [block_text(b) for b in system or []]
    parts += [block_text(b) for m in messages(body) for b in contents(m) if b.get("type") in ("text", "tool_result")]
    return "\n".join(parts)


def tool_names(body: Any) -> list[str]:
    return [t.get("name", "") for t in (body.get("tools") or [])] if isinstance(body, dict) else []


def _message(body: Any, turn: Turn) -> dict[str, Any]:
    blocks = turn.blocks
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    model = body.get("model", "stand-in") if isinstance(body, dict) else "stand-in"
    return {
        "id": f"msg_standin_{time.monotonic_ns()}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": turn.input_tokens or len(json.dumps(body)) // 4,
            "output_tokens": len(json.dumps(blocks)) // 4,
        },
    }


def _events(message: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The message as the stream of events the messages API sends."""
    blocks = message["content"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(blocks):
        empty = {**block, "input": {}} if block["type"] == "tool_use" else {**block, "text": ""}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}
        if block["type"] == "tool_use":
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    done = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield (
        "message_delta",
        {"type": "message_delta", "delta": done, "usage": {"output_tokens": message["usage"]["output_tokens"]}},
    )
    yield "message_stop", {"type": "message_stop"}


@dataclass
class Scripted:
    """The answer function for `standing(...)`: a scripted model on the messages API."""

    script: Callable[[Any], list[Block] | Turn]
    sent: dict[str, float] = field(default_factory=dict)  # tool_use id: when its message was sent
    back: dict[str, float] = field(default_factory=dict)  # tool_use id: when its result came back
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Request) -> Reply:
        arrived = time.perf_counter()
        if request.method != "POST" or not request.path.startswith("/v1/messages"):
            return json_reply({})
        if request.path.startswith("/v1/messages/count_tokens"):
            return json_reply({"input_tokens": len(json.dumps(request.body)) // 4})
        with self.lock:
            for id in tool_results(request.body):
                self.back.setdefault(id, arrived)
        answer = self.script(request.body)
        message = _message(request.body, answer if isinstance(answer, Turn) else Turn(answer))
        if not (isinstance(request.body, dict) and request.body.get("stream")):
            self._sent(message)
            return json_reply(message)
        reply = sse(_events(message))

        def timed() -> Iterator[bytes]:
            yield from reply.body  # type: ignore[misc]
            self._sent(message)  # the last event is out: the harness has the whole message

        return Reply(timed(), content_type=reply.content_type)

    def _sent(self, message: dict[str, Any]) -> None:
        now = time.perf_counter()
        with self.lock:
            for block in message["content"]:
                if block["type"] == "tool_use":
                    self.sent.setdefault(block["id"], now)

    def round_trip(self, id: str) -> float:
        """Seconds from the tool_use `id` sent to its tool_result received."""
        return self.back[id] - self.sent[id]
