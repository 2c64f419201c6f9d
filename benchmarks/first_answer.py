"""cli-org's first org_recall in each real harness (Claude Code 2.1.197 and 2.1.332, Codex
0.169.0, Hermes 0.19.0, tests/clients.py), in whole sessions against the tests' stand-in
model APIs, with the tests' session machinery; per harness and checkout:

- spawn to first answer: seconds from the harness spawning `cli-org mcp` to the answer of
  its first org_recall going back on the wire, and when that call arrived (a relay between
  the two notes both: benchmarks/wire_clock.py); medians over the sessions;
- the characters the model receives for each tool's result, the harness's wrapping
  included (from a session whose model calls every tool once, org_recall first), as the
  harness benchmarks measure them (client_claude, client_codex, client_hermes).

    python -m benchmarks.first_answer [--runs 3] [--before PATH] [--only claude|codex|hermes]

The harness starts `cli-org` through a script on PATH that runs the checkout named (this
one, and with --before another, e.g. a worktree of main) behind the relay.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from .common import ROOT, median

RELAY = Path(__file__).with_name("wire_clock.py")


def tools_dir(folder: Path, checkout: Path, log: Path) -> Path:
    """A folder holding a `cli-org` that runs `checkout`, `mcp` behind the relay (its log: `log`)."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "cli-org"
    python = sys.executable
    program.write_text(
        "#!/bin/sh\n"
        f"export PYTHONPATH={checkout}\n"
        f'if [ "$1" = mcp ]; then exec {python} -I -S {RELAY} {log} {python} -m cli_org "$@"; fi\n'
        f'exec {python} -m cli_org "$@"\n'
    )
    program.chmod(0o755)
    return folder


def first_answers(log: Path) -> list[dict[str, float]]:
    """Per spawn of the server that got an org_recall: seconds from spawn to its first call's
    arrival and to its answer."""
    if not log.exists():
        return []
    found, spawned, call = [], None, None
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "spawned":
            spawned, call = event["t"], None
        elif event["event"] == "call" and call is None and spawned is not None:
            call = event
        elif event["event"] == "answer" and call is not None and event["id"] == call["id"] and spawned is not None:
            found.append({"arrived": call["t"] - spawned, "answered": event["t"] - spawned})
            spawned = None  # the first one of this spawn only
    return found


def claude(version: str, tools: Path, runs: int, tmp: Path) -> dict[str, Any]:
    """client_claude's sessions (each tool once, org_recall first), set up by the `cli-org` in `tools`."""
    import subprocess

    from cli_org.db.connect import connect
    from cli_org.store import facts
    from tests.standin import standing
    from tests.standin_anthropic import Scripted, block_text, text, tool_results
    from tests.test_client_claude import QUESTION, User, main_requests, plan

    from . import client_claude
    from .common import drop_database

    settings, env = client_claude.org("first_answer_claude")
    chars: dict[str, int] = {}
    problems: list[str] = []
    try:
        user = User.make(f"claude-code-{version}", env, tmp)
        user.env["PATH"] = f"{tools}{os.pathsep}{user.env['PATH']}"
        setup = [str(tools / "cli-org"), "setup", "claude-code", "--project-dir", str(user.project), "--agent", "bot"]
        done = subprocess.run(setup, cwd=user.project, env=user.env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        for run in range(runs):
            with connect(settings, "bot") as conn:
                forgettable = facts.remember(
                    conn, "staging", f"Staging {run} lives on host stg-{run}", source="o.md"
                ).id
            calls = client_claude._calls(forgettable, run)
            steps = {a["id"]: b for a, b in zip(calls, calls[1:], strict=False)} | {calls[-1]["id"]: text("done")}
            with standing(Scripted(plan(steps, calls[0], QUESTION))) as standin:
                user.prompt(standin, QUESTION, "--allowedTools", client_claude.every_tool(calls))
                results = tool_results(main_requests(standin)[-1])
            with connect(settings, "bot") as conn:  # the next run starts from the same facts
                for fact in facts.list_facts(conn, subject="releases"):
                    facts.forget(conn, fact.id, "a benchmark run's own fact")
            for call in calls:
                name = call["name"].rsplit("__", 1)[1]
                result = results.get(call["id"])
                if result is None or result.get("is_error"):
                    problems.append(f"run {run}: {name}: {block_text(result)[:120] if result else 'no result'}")
                elif run == 0:
                    chars[name] = len(block_text(result))
    finally:
        drop_database(settings)
    return {"chars": chars, "problems": problems}


def codex(tools: Path, runs: int, tmp: Path) -> dict[str, Any]:
    from tests import standin_responses as api
    from tests.test_client_codex import WRAPPED, codex_session, scripted

    from . import client_codex
    from .common import bench_settings, drop_database

    database, mine = client_codex._database()
    calls = [(n, {**a, "id": mine} if n == "org_forget" else a) for n, a, _ in client_codex.CALLS]
    chars: dict[str, int] = {}
    try:
        for run in range(runs):
            with codex_session(tmp / f"codex-{run}", database, scripted(*calls)) as h:
                h.env["PATH"] = f"{tools}{os.pathsep}{h.env['PATH']}"
                h.cli_org("setup", "codex", "--agent", "bot")
                h.exec("Use every org tool once.", client_codex.BYPASS)
                outputs = list(api.outputs(h.requests()[-1]).values())
            if run == 0:
                chars = {name: len(out) for (name, _), out in zip(calls, outputs, strict=True)}
                chars["(of org_recall, the result)"] = len(WRAPPED.sub("", outputs[0]))
            if run + 1 < runs:  # the next session's forget has a fact of bot's to retire again
                database, mine = client_codex._database()
                calls = [(n, {**a, "id": mine} if n == "org_forget" else a) for n, a, _ in client_codex.CALLS]
    finally:
        drop_database(bench_settings("client_codex"))
    return {"chars": chars, "problems": []}


def hermes(tools: Path, runs: int, tmp: Path) -> dict[str, Any]:
    from cli_org.db.connect import connect
    from cli_org.store.facts import remember
    from tests.test_client_hermes import run_session, user_home

    from . import client_hermes
    from .common import drop_database

    env, settings = client_hermes.prepare()
    names = [c[0].name.removeprefix(client_hermes.PREFIX) for c in client_hermes.script(0)[:-1]]  # type: ignore[union-attr]
    chars: dict[str, int] = {}
    problems: list[str] = []
    try:
        home = user_home(tmp / "hermes", env)
        home.env["PATH"] = f"{tools}{os.pathsep}{home.env['PATH']}"
        done = home.cli("setup", "hermes", "--agent", "bot")
        assert done.returncode == 0, done.stderr
        for run in range(runs):
            with connect(settings, "bot") as conn:
                target = remember(conn, "release", f"Tags are signed (run {run})", source="docs/release.md").id
            measured = client_hermes.measure(run_session(home, client_hermes.script(target), "How do we deploy?"))
            if not measured["tools_first"]:
                problems.append(f"run {run}: no cli-org tools in the first request")
            if not chars:
                chars = {names[r["turn"]]: r["handed"] for r in measured["per_tool"] if r["turn"] < len(names) - 1}
    finally:
        drop_database(settings)  # type: ignore[arg-type]
    return {"chars": chars, "problems": problems}


HARNESSES = ("claude-code 2.1.197", "claude-code 2.1.332", "codex 0.169.0", "hermes 0.19.0")


def measure(harness: str, checkout: Path, runs: int, tmp: Path) -> dict[str, Any]:
    log = tmp / "wire.jsonl"
    tools = tools_dir(tmp / "bin", checkout, log)
    name, version = harness.split()
    if name == "claude-code":
        figures = claude(version, tools, runs, tmp / "session")
    elif name == "codex":
        figures = codex(tools, runs, tmp)
    else:
        figures = hermes(tools, runs, tmp)
    answers = first_answers(log)
    figures["arrived_s"] = round(median([a["arrived"] for a in answers]), 3) if answers else None
    figures["answered_s"] = round(median([a["answered"] for a in answers]), 3) if answers else None
    figures["sessions"] = len(answers)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout, measured the same way")
    parser.add_argument("--only", choices=("claude", "codex", "hermes"))
    args = parser.parse_args()
    checkouts = {"this": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    harnesses = [h for h in HARNESSES if args.only is None or h.startswith(args.only)]
    report: dict[str, Any] = {"runs": args.runs, "load_before": os.getloadavg(), "figures": {}}
    with tempfile.TemporaryDirectory(prefix="cli-org-first-") as tmp:
        for harness in harnesses:
            for label, checkout in checkouts.items():
                where = Path(tmp) / f"{harness.replace(' ', '-')}-{label}"
                figures = measure(harness, checkout, args.runs, where)
                report["figures"][f"{harness} ({label})"] = figures
                print(f"{harness} ({label}): {json.dumps(figures)}", file=sys.stderr, flush=True)
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
