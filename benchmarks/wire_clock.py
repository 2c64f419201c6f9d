"""A relay between a harness and `cli-org mcp` that notes, on the wire, when each org_recall
call arrived and when its answer went back, in seconds after the server was spawned.
Standard library only; benchmarks/first_answer.py starts it (`python -I -S`) in place of
the server:

    wire_clock.py LOG COMMAND...

Each event is one JSON line appended to LOG: {"event": "spawned"|"call"|"answer", "id", "t"}
(t: time.time()). Signals are passed on to the server; the relay ends with it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time


def main() -> None:
    log_path, command = sys.argv[1], sys.argv[2:]
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 (open for the relay's life)
    lock = threading.Lock()

    def note(event: str, id_: object = None) -> None:
        with lock:
            log.write(json.dumps({"event": event, "id": id_, "t": time.time()}) + "\n")
            log.flush()

    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    note("spawned")
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: child.send_signal(signum))
    recalls: set[object] = set()
    assert child.stdin is not None and child.stdout is not None

    def inward() -> None:
        for line in iter(sys.stdin.buffer.readline, b""):
            try:
                message = json.loads(line)
                params = message.get("params") or {}
                if message.get("method") == "tools/call" and params.get("name") == "org_recall":
                    recalls.add(message.get("id"))
                    note("call", message.get("id"))
            except (ValueError, AttributeError):
                pass
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:
                return
        child.stdin.close()

    threading.Thread(target=inward, daemon=True).start()
    for line in iter(child.stdout.readline, b""):
        try:
            message = json.loads(line)
            if isinstance(message, dict) and message.get("id") in recalls and "method" not in message:
                note("answer", message.get("id"))
        except (ValueError, TypeError):
            pass
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
