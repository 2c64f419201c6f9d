"""OpenAI's chat completions for the stand-in model API (tests/standin.py): what a harness that
speaks it (Hermes Agent, with a custom OpenAI-compatible base URL) gets from `POST
/v1/chat/completions`, streamed as server-sent events or as one JSON object, whichever the
request asks for, and the model list it reads a context length from (`GET /v1/models`).

The agent's replies are a script: turn k+1 is the reply to a request whose last tool calls
are turn k's (their ids say which), turn 0 to one with none, so a retry gets the same turn
and so does a request after the harness compacted the conversation. A turn is text, tool
calls (`Call`), or a `Step` with both and the prompt size to report. A request without
tools is the harness's own side request (a title, a summary): it gets a short text and does
not move the script. Each exchange keeps when the request arrived and when its reply was
sent in full, so a test can time the round trip of a tool call through the harness.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.standin import Reply, Request, json_reply, sse

MODEL = "standin"
CONTEXT_LENGTH = 131_072  # what /v1/models says; a harness sizes its prompt and compaction by it


@dataclass(frozen=True)
class Call:
    name: str  # as the harness named the tool in its request
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """A turn with more to it: text and tool calls together, and the prompt size the reply
    reports (a harness decides when to compact from the provider's count)."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    prompt_tokens: int = 1


Turn = str | list[Call] | Step


@dataclass
class Exchange:
    request: Request
    turn: int | None  # the script's turn it answered; None for a side request
    arrived: float  # time.monotonic()
    sent: float | None = None  # when the reply's last byte was handed over


@dataclass
class Chat:
    """The protocol function for `standing(...)`: answers every request by the script."""

    script: list[Turn]
    last: str = "done"  # the reply once the script is over
    exchanges: list[Exchange] = field(default_factory=list)

    def __call__(self, request: Request) -> Reply:
        arrived = time.monotonic()
        body = request.body if isinstance(request.body, dict) else {}
        if request.method == "GET" and request.path.rstrip("/").endswith("/v1/models"):
            return json_reply({"object": "list", "data": [_model()]})
        if request.method == "GET" and request.path.endswith(f"/v1/models/{MODEL}"):
            return json_reply(_model())
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            return json_reply({"error": {"message": f"the stand-in has no {request.path}"}}, 404)
        main = bool(body.get("tools"))
        turn = _turn(body.get("messages", [])) if main else None
        exchange = Exchange(request, turn, arrived)
        self.exchanges.append(exchange)
        reply = self.script[turn] if turn is not None and turn < len(self.script) else self.last
        if turn is None:
            reply = "stand-in"
        if body.get("stream"):
            out = sse((None, chunk) for chunk in _chunks(reply, turn))
            out.body = _timed(out.body, exchange)  # type: ignore[arg-type]
            return out
        exchange.sent = time.monotonic()
        return json_reply(_completion(reply, turn))

    def turns(self) -> list[Exchange]:
        """The agent's own requests (with tools), in the order they came."""
        return [e for e in self.exchanges if e.turn is not None]

    def first(self, turn: int) -> Exchange:
        return next(e for e in self.turns() if e.turn == turn)

    def round_trip(self, turn: int) -> float:
        """Seconds from the tool calls of `turn` sent in full to the request holding their
        results: the harness running the calls (and whatever it does around them)."""
        sent = self.first(turn).sent
        assert sent is not None, f"turn {turn} was never sent in full"
        return self.first(turn + 1).arrived - sent


def _turn(messages: list[dict[str, Any]]) -> int:
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            found = re.fullmatch(r"call_(\d+)_\d+", call.get("id", ""))
            if found:
                return int(found[1]) + 1
    return sum(m.get("role") == "assistant" for m in messages)


def _model() -> dict[str, Any]:
    return {"id": MODEL, "object": "model", "owned_by": "stand-in", "context_length": CONTEXT_LENGTH}


def _tool_calls(calls: list[Call], turn: int | None) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_{turn}_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
        }
        for i, c in enumerate(calls)
    ]


def _step(reply: Turn) -> Step:
    return Step(text=reply) if isinstance(reply, str) else Step(calls=reply) if isinstance(reply, list) else reply


def _usage(step: Step) -> dict[str, int]:
    return {"prompt_tokens": step.prompt_tokens, "completion_tokens": 1, "total_tokens": step.prompt_tokens + 1}


def _completion(reply: Turn, turn: int | None) -> dict[str, Any]:
    step = _step(reply)
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.calls:
        message["tool_calls"] = _tool_calls(step.calls, turn)
    finish = "tool_calls" if step.calls else "stop"
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(step),
    }


def _chunks(reply: Turn, turn: int | None) -> Iterator[Any]:
    """The reply as chat.completion.chunk objects, then the usage, then [DONE]."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        head = {"id": f"chatcmpl-{turn}", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
        return {**head, "choices": choices, **extra}

    step = _step(reply)
    yield chunk({"role": "assistant", "content": ""})
    if step.text:
        yield chunk({"content": step.text})
    for i, call in enumerate(_tool_calls(step.calls, turn)):
        yield chunk({"tool_calls": [{"index": i, **call}]})
    yield chunk({}, "tool_calls" if step.calls else "stop")
    yield {**chunk({}), "choices": [], "usage": _usage(step)}
    yield "[DONE]"


def _timed(body: Iterable[bytes], exchange: Exchange) -> Iterator[bytes]:
    yield from body
    exchange.sent = time.monotonic()
