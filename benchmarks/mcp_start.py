"""`cli-org mcp` as a harness meets it: how soon it answers `initialize`, `tools/list` and
its first `org_recall` (sent at once after the list, as a direct JSON-RPC client does) after
spawning, against a cold `cli-org facts` and a cold `cli-org recall` of the same question
(spawn to exit) in the same run, the runs of every variant interleaved so load on the shared
machine falls on all of them alike; and what a model reads from each tool: the characters
of text and of structured content per call, through the SDK's own stdio client, on the
shipped sample (facts and vault).

    python -m benchmarks.mcp_start [--runs 15] [--before PATH]

With --before, the same for another checkout (the code before a change, e.g. a worktree of
main), run from there. Figures are medians; the ratios to the cold commands are what counts
on a noisy machine. The harnesses' own figures: benchmarks/first_answer.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from .common import ROOT, bench_settings, median
from .recall_eval import SAMPLE, load_sample

AGENT = "builder"
QUESTION = "how do deploys run"
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
# One call per tool (two for the notebook and the context), as an agent makes them.
CALLS = [
    ("org_recall", {"question": QUESTION}),
    (
        "org_remember",
        {
            "subject": "bench",
            "claim": "The start benchmark ran from benchmarks/mcp_start.py",
            "source": "benchmarks/mcp_start.py",
        },
    ),
    ("org_facts", {}),
    ("org_search", {"query": "deploy"}),
    ("org_sessions_search", {"query": "deploy"}),
    ("org_notebook_edit", {"action": "add", "text": "The start benchmark adds and removes this"}),
    ("org_notebook", {}),
    ("org_context", {}),
    ("org_context", {"for": "deploy the app"}),
]


def _env(settings, checkout: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": settings.database_url or "",
        "ORG_ROOT": str(SAMPLE),
        "ORG_AGENT": AGENT,
        "CLI_ORG_WARM": "0",  # cold: no helper process answers for the command
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(checkout),
    }
    return env


def _line(message: dict) -> bytes:
    return (json.dumps(message) + "\n").encode()


def time_mcp(env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Seconds from spawning `cli-org mcp` to its reply to `initialize`, to `tools/list`, and
    to its first `org_recall`."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli_org", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(_line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        initialized = time.perf_counter() - started
        proc.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 2
        listed = time.perf_counter() - started
        call = {"name": "org_recall", "arguments": {"question": QUESTION}}
        proc.stdin.write(_line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}))
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 3 and not answer["result"]["isError"], answer
        recalled = time.perf_counter() - started
        proc.stdin.close()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return initialized, listed, recalled


def time_command(env: dict[str, str], cwd: Path, *args: str) -> float:
    """Seconds from spawning a cold `cli-org ARGS` to its exit."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cli_org", *args], env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def characters(env: dict[str, str], cwd: Path) -> list[dict]:
    """Per call: the characters of its text and of its structured content (JSON)."""
    server = StdioServerParameters(command=sys.executable, args=["-m", "cli_org", "mcp"], env=env, cwd=str(cwd))
    rows: list[dict] = []

    async def main() -> None:
        with open(os.devnull, "w") as quiet:
            async with stdio_client(server, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for name, args in CALLS:
                    result = await session.call_tool(name, args)
                    text = "\n".join(c.text for c in result.content if c.type == "text")
                    data = result.structured_content
                    rows.append(
                        {
                            "tool": name,
                            "args": ",".join(args),
                            "text": len(text),
                            "structured": len(json.dumps(data, ensure_ascii=False)) if data is not None else 0,
                            "error": bool(result.is_error),
                        }
                    )
                    if name == "org_remember" and not result.is_error:  # leave the sample as it was
                        fact = data["id"] if data else int(text.split()[0])
                        await session.call_tool("org_forget", {"id": fact, "why": "the benchmark's own fact"})
                await session.call_tool("org_notebook_edit", {"action": "remove", "old_text": "The start benchmark"})

    anyio.run(main)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", type=Path, help="another checkout, timed the same way")
    args = parser.parse_args()
    settings = bench_settings("mcp_sample")
    env = _env(settings, ROOT)
    if subprocess.run(
        [sys.executable, "-m", "cli_org", "facts", "--json"], env=env, cwd=ROOT, capture_output=True, text=True
    ).stdout.strip() in ("", "[]"):
        load_sample(settings, facts_only=False)
    checkouts = {"this": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    times: dict[str, list[float]] = {}
    load = os.getloadavg()
    for _ in range(args.runs):
        times.setdefault("facts", []).append(time_command(env, ROOT, "facts"))
        times.setdefault("recall", []).append(time_command(env, ROOT, "recall", QUESTION))
        for label, checkout in checkouts.items():
            initialized, listed, recalled = time_mcp(_env(settings, checkout), checkout)
            times.setdefault(f"{label}: initialize", []).append(initialized)
            times.setdefault(f"{label}: tools/list", []).append(listed)
            times.setdefault(f"{label}: first org_recall", []).append(recalled)
    facts, recall = median(times["facts"]), median(times["recall"])
    report: dict = {
        "runs": args.runs,
        "load": {"before": load, "after": os.getloadavg()},
        "median_s": {k: round(median(v), 3) for k, v in times.items()},
        "ratio_to_facts": {k: round(median(v) / facts, 2) for k, v in times.items()},
        "ratio_to_recall": {k: round(median(v) / recall, 2) for k, v in times.items()},
        "characters": {label: characters(_env(settings, c), c) for label, c in checkouts.items()},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
