"""OpenAI's chat completions for the stand-in model API (tests/standin.py): what a harness that
speaks it (Hermes Agent, with a custom OpenAI-compatible base URL) gets from `POST
/v1/chat/completions`, streamed as server-sent events or as one JSON object, whichever the
request asks for, and the model list it reads a context length from (`GET /v1/models`).

The agent's replies are a script: turn k is the reply to a request that already holds k
assistant messages, so a retry of the same request gets the same turn. A turn is text, or
tool calls (`Call`). A request without tools is the harness's own side request (a title, a
summary): it gets a short text and does not move the script. Each exchange keeps when the
request arrived and when its reply was sent in full, so a test can time the round trip of
a tool call through the harness.
"""

from __future__ import annotations

import json
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


Turn = str | list[Call]


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
        turn = sum(m.get("role") == "assistant" for m in body.get("messages", [])) if main else None
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


_USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def _completion(reply: Turn, turn: int | None) -> dict[str, Any]:
    if isinstance(reply, str):
        message: dict[str, Any] = {"role": "assistant", "content": reply}
        finish = "stop"
    else:
        message = {"role": "assistant", "content": None, "tool_calls": _tool_calls(reply, turn)}
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _USAGE,
    }


def _chunks(reply: Turn, turn: int | None) -> Iterator[Any]:
    """The reply as chat.completion.chunk objects, then the usage, then [DONE]."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        head = {"id": f"chatcmpl-{turn}", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
        return {**head, "choices": choices, **extra}

    yield chunk({"role": "assistant", "content": ""})
    if isinstance(reply, str):
        yield chunk({"content": reply})
        finish = "stop"
    else:
        for i, call in enumerate(_tool_calls(reply, turn)):
            yield chunk({"tool_calls": [{"index": i, **call}]})
        finish = "tool_calls"
    yield chunk({}, finish)
    yield {**chunk({}), "choices": [], "usage": _USAGE}
    yield "[DONE]"


def _timed(body: Iterable[bytes], exchange: Exchange) -> Iterator[bytes]:
    yield from body
    exchange.sent = time.monotonic()
