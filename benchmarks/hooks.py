"""The Claude Code hooks, timed as the harness runs them: a `cli-org hook claude-code EVENT`
process with recorded hook JSON on stdin, on the shipped sample, cold (CLI_ORG_WARM=0) and
answered by the warm helper; and the fail-open paths: the database refusing connections (a
closed port) and a server that accepts and never answers.

    python -m benchmarks.hooks
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import threading
import time

from cli_org.db.connect import connect
from cli_org.evaluation import load_golden
from cli_org.faces.warm.server import status
from cli_org.faces.warm.server import stop as stop_helper
from cli_org.store import notebook

from .common import ROOT, WORK, bench_settings, eval_halves, median, percentile
from .recall_eval import SAMPLE, load_sample

RUNS = 20
SILENT_RUNS = 5


PROBLEMS: list[str] = []  # the hooks' stderr lines: why one printed nothing


def _run(env: dict, event: str, payload: dict) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cli_org", "hook", "claude-code", event, "--as", "builder"],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    took = time.perf_counter() - started
    PROBLEMS.extend(done.stderr.splitlines())
    return took, done.stdout


def _figures(times: list[float], outputs: list[str]) -> dict:
    problems = PROBLEMS[:]
    PROBLEMS.clear()
    chars = [len(json.loads(o)["hookSpecificOutput"]["additionalContext"]) if o else 0 for o in outputs]
    return {
        "runs": len(times),
        "p50_s": round(median(times), 3),
        "p95_s": round(percentile(times, 0.95), 3),
        "max_s": round(max(times), 3),
        "printed": sum(1 for o in outputs if o),
        "chars_median": median(chars),
        "stderr": sorted(set(problems))[:3],
    }


def main() -> None:
    settings = dataclasses.replace(bench_settings("hooks_sample", fresh=True), root=str(SAMPLE))
    load_sample(settings, facts_only=False)
    with connect(settings, "builder") as conn:
        if not notebook.show(conn).stores[0].entries:
            notebook.add(conn, "memory", "Run the linter and the unit tests before every commit")
    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": "",
        "ORG_ROOT": str(SAMPLE),
        "PYTHONPATH": str(ROOT),
        "CLI_ORG_WARM": "0",
        "CLI_ORG_WARM_DIR": str(WORK / "warm"),
    }
    questions = [c.question for f in eval_halves("golden") for c in load_golden(f)]
    results: dict[str, dict] = {}
    _new_sessions(env, questions, results, "")
    # The same runs answered by the warm helper: one cold run launches it, then wait for it.
    warm = {**env, "CLI_ORG_WARM": "1"}
    _run(warm, "session-start", {"session_id": f"bench-launch-{time.time_ns()}", "cwd": str(SAMPLE)})
    deadline = time.monotonic() + 60
    while not status(warm).running and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        _new_sessions(warm, questions, results, ", warm")
    finally:
        stop_helper(warm)
    _fail_open(env, questions, results)


def _new_sessions(env: dict, questions: list[str], results: dict, suffix: str) -> None:
    for label, event in (("session-start" + suffix, "session-start"), ("prompt (new session)" + suffix, "prompt")):
        times, outputs = [], []
        for i in range(RUNS):
            payload = {"session_id": f"bench-{label}-{i}-{time.time_ns()}", "cwd": str(SAMPLE)}
            payload |= (
                {"hook_event_name": "SessionStart"}
                if event == "session-start"
                else {
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": questions[i % len(questions)],
                }
            )
            took, out = _run(env, event, payload)
            times.append(took)
            outputs.append(out)
        results[label] = _figures(times, outputs)
        print(label, results[label], flush=True)


def _fail_open(env: dict, questions: list[str], results: dict) -> None:
    # The same prompt again in the same session: nothing new, nothing printed.
    times, outputs = [], []
    payload = {"session_id": f"bench-repeat-{time.time_ns()}", "cwd": str(SAMPLE), "prompt": questions[0]}
    first = _run(env, "prompt", payload)[1]
    PROBLEMS.clear()
    for _ in range(RUNS):
        took, out = _run(env, "prompt", payload)
        times.append(took)
        outputs.append(out)
    results["prompt (repeated)"] = {**_figures(times, outputs), "first_printed": bool(first)}
    print("prompt (repeated)", results["prompt (repeated)"], flush=True)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    down = {**env, "CLI_ORG_DATABASE_URL": f"postgresql://builder@127.0.0.1:{closed}/org"}
    times, outputs = [], []
    for _ in range(RUNS):
        took, out = _run(down, "session-start", {"session_id": "x", "cwd": str(SAMPLE)})
        times.append(took)
        outputs.append(out)
    results["database down"] = _figures(times, outputs)
    print("database down", results["database down"], flush=True)

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    silent = {**env, "CLI_ORG_DATABASE_URL": f"postgresql://builder@127.0.0.1:{listener.getsockname()[1]}/org"}
    times, outputs = [], []
    for _ in range(SILENT_RUNS):
        took, out = _run(silent, "session-start", {"session_id": "x", "cwd": str(SAMPLE)})
        times.append(took)
        outputs.append(out)
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()
    results["server silent"] = _figures(times, outputs)
    print("server silent", results["server silent"], flush=True)


if __name__ == "__main__":
    main()
