"""A small stand-in for a model API: an HTTP server on 127.0.0.1 (a port of its own, chosen
by the system) that keeps every request a harness sends and answers each with what the
test's protocol function says. The protocols (Anthropic's messages, OpenAI's responses and
chat completions) live beside it, one module each; this part knows none of them.

Only the test reads what was kept: what the harness put in front of the model (the system
prompt, the tools of the first request, the tool results) is asserted on from
`StandIn.requests`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON, or the raw text when it is not JSON


@dataclass
class Reply:
    body: bytes | Iterable[bytes] = b"{}"  # an iterable is streamed, chunk by chunk (SSE)
    status: int = 200
    content_type: str = "application/json"


def json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(json.dumps(data).encode(), status)


def sse(events: Iterable[tuple[str | None, Any]]) -> Reply:
    """Server-sent events: (event name or None, data as JSON or the literal text)."""

    def chunks() -> Iterator[bytes]:
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            yield (f"event: {name}\n" if name else "").encode() + f"data: {text}\n\n".encode()

    return Reply(chunks(), content_type="text/event-stream")


@dataclass
class StandIn:
    answer: Callable[[Request], Reply]
    requests: list[Request] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kept(self, path_part: str = "") -> list[Request]:
        with self.lock:
            return [r for r in self.requests if path_part in r.path]


@contextmanager
def standing(answer: Callable[[Request], Reply]) -> Iterator[StandIn]:
    """Serve `answer` until the block ends; `.url` is http://127.0.0.1:PORT."""
    standin = StandIn(answer)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _serve(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size) if size else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            with standin.lock:
                standin.requests.append(request)
            try:
                reply = answer(request)
            except Exception as exc:  # the test's script failed: tell the harness, keep serving
                reply = json_reply({"error": {"type": "stand_in_error", "message": repr(exc)}}, 500)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            if isinstance(reply.body, bytes):
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for chunk in reply.body:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _serve

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a harness that hangs up mid-stream is not the test's failure (no traceback)

    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    standin.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        httpd.shutdown()
        httpd.server_close()
