"""OpenAI's Responses protocol for the stand-in model API (tests/standin.py): a POST to
`/v1/responses` is answered with server-sent events (response.created, then for each output
item response.output_item.added, its text as response.output_text.delta, and
response.output_item.done, then response.completed), the way a streaming model does.

What the model says is scripted: `script(body)` gets the request's JSON and returns the
output items of the reply (`text(...)`, `call(...)`). A harness that runs a tool sends the
next request with a `function_call_output` item for each call; `outputs(body)` reads them
back, and `tools(body)` names every function the request offers the model.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.standin import Reply, Request, json_reply, sse

Item = dict[str, Any]
_ids = itertools.count(1)
_lock = threading.Lock()


def _id(prefix: str) -> str:
    with _lock:
        return f"{prefix}_{next(_ids)}"


def text(words: str) -> Item:
    """An assistant message."""
    return {
        "type": "message",
        "id": _id("msg"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": words, "annotations": []}],
    }


def call(name: str, arguments: dict[str, Any], namespace: str | None = None) -> Item:
    """A function call; `namespace` is the group the request listed the function in (a
    `{"type": "namespace"}` tool), as a model names a grouped function."""
    item: Item = {
        "type": "function_call",
        "id": _id("fc"),
        "call_id": _id("call"),
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    if namespace:
        item["namespace"] = namespace
    return item


def _events(items: list[Item], tokens: int) -> Iterator[tuple[str, Any]]:
    response = {"id": _id("resp"), "object": "response", "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": response}
    for index, item in enumerate(items):
        started = {**item, "status": "in_progress"}
        if item["type"] == "message":
            started["content"] = []
        yield (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": index, "item": started},
        )
        if item["type"] == "message":
            words = item["content"][0]["text"]
            delta = {"item_id": item["id"], "output_index": index, "content_index": 0, "delta": words}
            yield "response.output_text.delta", {"type": "response.output_text.delta", **delta}
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": item}
    usage = {"input_tokens": tokens - 10, "output_tokens": 10, "total_tokens": tokens}
    done = {**response, "status": "completed", "output": items, "usage": usage}
    yield "response.completed", {"type": "response.completed", "response": done}


def responses(
    script: Callable[[dict[str, Any]], list[Item]],
    sent: list[float] | None = None,
    tokens: Callable[[dict[str, Any]], int] = lambda body: 110,
) -> Callable[[Request], Reply]:
    """The stand-in's answer: a POST to .../responses is streamed from `script(body)`; any
    other request (a model list, say) gets an empty list. Each reply says it used
    `tokens(body)` (a harness compacts its history past its limit). With `sent`, the time
    (time.perf_counter) each reply's last event was written is appended to it."""

    def answer(request: Request) -> Reply:
        if request.method != "POST" or not request.path.rstrip("/").endswith("/responses"):
            return json_reply({"object": "list", "data": []})
        events = _events(script(request.body), tokens(request.body))
        return sse(events if sent is None else _timed(events, sent))

    return answer


def _timed(events: Iterator[tuple[str, Any]], sent: list[float]) -> Iterator[tuple[str, Any]]:
    yield from events
    sent.append(time.perf_counter())  # resumed once the server wrote the last event


def tools(body: dict[str, Any]) -> dict[str, Item]:
    """Every function the request offers, by the name a model calls it with: a grouped one
    as `namespace/name`."""
    found: dict[str, Item] = {}
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            found.update({f"{tool['name']}/{t['name']}": t for t in tool.get("tools") or []})
        elif tool.get("name"):
            found[tool["name"]] = tool
    return found


def outputs(body: dict[str, Any]) -> dict[str, str]:
    """What the harness handed back for each call, by call_id: the output text (a list of
    content parts is joined)."""
    found = {}
    for item in body.get("input") or []:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            if isinstance(output, list):
                output = "".join(part.get("text", "") for part in output)
            found[item["call_id"]] = output if isinstance(output, str) else json.dumps(output)
    return found


def said(body: dict[str, Any]) -> str:
    """Every text the request puts in front of the model: its instructions and the text of
    each input message."""
    parts = [body.get("instructions") or ""]
    for item in body.get("input") or []:
        for part in item.get("content") or []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    return "\n".join(parts)
