"""cli-org through a real Claude Code session (2.1.197 and 2.1.332), against the stand-in
model API, with the machinery of tests/test_client_claude.py: set up as a user types it,
then `claude -p` calls each of the 8 tools once, in order.

Measured, per version:
- characters handed to the model per tool: the tool_result text in the request that
  carries it back (what Claude Code put in front of the model);
- tool round trips through the client: from the stand-in sending the tool_use to the
  request with its tool_result arriving; the first call of a session is cold, the rest warm;
- how long cli-org took to connect, as the debug log says ("Successfully connected ... in N ms");
- the SessionStart hook's latency in Claude Code's own debug log (`--debug-file`): 2.1.332
  writes "Hooks: SessionStart:startup [...] finished with status 0 (N ms)"; 2.1.197 writes
  no duration, so it is the span from its "hook_execution_start" line to its
  "Hook SessionStart:startup (SessionStart) success" line.

Medians over RUNS sessions per version.

    python -m benchmarks.client_claude
"""

from __future__ import annotations

import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from cli_org.db.connect import admin_conninfo, connect
from cli_org.org.registry import MCP as TOOLS
from cli_org.store import facts
from cli_org.store.agents import add_agent
from tests.standin import standing
from tests.standin_anthropic import Scripted, block_text, text, tool_names, tool_results, tool_use
from tests.test_client_claude import MINE, QUESTION, THEIRS, VERSIONS, User, main_requests, plan, tool

from .common import bench_settings, drop_database, median

RUNS = 3
STAMP = r"^(\S+Z) "


def every_tool(calls: list[dict]) -> str:
    """`--allowedTools` naming each tool the session calls: the benchmark times calls, not
    approvals (setup's own rules apply only in a trusted folder on 2.1.197, and the code
    before issue 37 wrote none), so both checkouts run the same session."""
    return ",".join(dict.fromkeys(call["name"] for call in calls))


def _calls(forgettable: int, run: int) -> list[dict]:
    """Each of the 8 tools once, with the arguments an agent would give."""
    arguments: dict[str, dict[str, Any]] = {
        "org_recall": {"question": QUESTION},
        "org_remember": {
            "subject": "releases",
            "claim": f"Release notes for build {run} are written in CHANGELOG.md before the tag",
            "source": "docs/release.md",
        },
        "org_forget": {"id": forgettable, "why": "the staging host was renamed"},
        "org_facts": {},
        "org_search": {"query": "deploy schedule"},
        "org_sessions_search": {"query": "deploy"},
        "org_notebook": {},
        "org_context": {},
    }
    return [tool_use(tool(name), args, f"toolu_{name}") for name, args in arguments.items()]


def _seconds(line: str) -> float:
    found = re.match(STAMP, line)
    assert found, line
    return datetime.fromisoformat(found.group(1).replace("Z", "+00:00")).timestamp()


def hook_ms(log: str) -> float | None:
    """The SessionStart hook's latency as Claude Code's debug log records it."""
    lines = log.splitlines()
    for line in lines:
        found = re.search(r"Hooks: SessionStart:startup \[.*\] finished with status \d+ \((\d+)ms\)", line)
        if found:
            return float(found.group(1))
    start = next((_seconds(line) for line in lines if "hook_execution_start" in line), None)
    end = next((_seconds(line) for line in lines if "Hook SessionStart:startup (SessionStart) success" in line), None)
    return round((end - start) * 1000) if start is not None and end is not None else None


def session(version: str, env: dict[str, str], settings, folder: Path, runs: int) -> dict:
    user = User.make(version, env, folder)
    done = user.set_up("bot")
    assert done.returncode == 0, done.stderr
    chars: dict[str, int] = {}
    cold: list[float] = []
    warm: list[float] = []
    hooks: list[float] = []
    connects: list[float] = []
    problems: list[str] = []
    for run in range(runs):
        with connect(settings, "bot") as conn:
            forgettable = facts.remember(conn, "staging", f"Staging {run} lives on host stg-{run}", source="ops.md").id
        calls = _calls(forgettable, run)
        steps = {a["id"]: b for a, b in zip(calls, calls[1:], strict=False)} | {calls[-1]["id"]: text("done")}
        model = Scripted(plan(steps, calls[0], QUESTION))
        log = folder / f"debug-{run}.log"
        with standing(model) as standin:
            user.prompt(standin, QUESTION, "--allowedTools", every_tool(calls), "--debug-file", str(log))
            requests = main_requests(standin)
            results = tool_results(requests[-1])
        offered = set(tool_names(requests[0]))
        if not {tool(name) for name in TOOLS} <= offered:
            problems.append(f"run {run}: cli-org's tools missing from the first request")
        with connect(settings, "bot") as conn:  # the next run starts from the same facts
            for fact in facts.list_facts(conn, subject="releases"):
                facts.forget(conn, fact.id, "a benchmark run's own fact")
        answered = False  # the first call a session answers is its cold one
        for call in calls:
            name = call["name"].rsplit("__", 1)[1]
            result = results.get(call["id"])
            if result is None or call["id"] not in model.sent:
                problems.append(f"run {run}: {name}: no result")
                continue
            if result.get("is_error"):
                problems.append(f"run {run}: {name}: {block_text(result)[:120]}")
                continue
            if run == 0:  # the same database state for every version: a fresh one's first run
                chars[name] = len(block_text(result))
            (warm if answered else cold).append(model.round_trip(call["id"]) * 1000)
            answered = True
        written = log.read_text() if log.exists() else ""
        latency = hook_ms(written)
        if latency is not None:
            hooks.append(latency)
        connected = re.search(r'MCP server "cli-org": Successfully connected \(transport: stdio\) in (\d+)ms', written)
        if connected:
            connects.append(float(connected.group(1)))
    return {
        "chars": chars,
        "cold_ms": round(median(cold)) if cold else None,
        "warm_ms": round(median(warm)) if warm else None,
        "hook_ms": round(median(hooks)) if hooks else None,
        "connect_ms": round(median(connects)) if connects else None,
        "problems": problems,
    }


def org(name: str):
    """A fresh database with bot's fact and other's (the test's MINE and THEIRS)."""
    settings = bench_settings(name, fresh=True)
    with psycopg.connect(admin_conninfo(settings, settings.database_name), row_factory=dict_row) as admin:
        add_agent(admin, "bot")
        add_agent(admin, "other")
        admin.commit()
    with connect(settings, "bot") as conn:
        facts.remember(conn, "deploys", MINE, source="docs/deploy.md")
    with connect(settings, "other") as conn:
        facts.remember(conn, "payments", THEIRS, source="ci/log.txt")
    env = {
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": "",
    }
    return settings, env


def main() -> None:
    figures = {}
    with tempfile.TemporaryDirectory(prefix="cli-org-claude-") as tmp:
        for n, version in enumerate(VERSIONS):
            settings, env = org(f"client_claude_{n}")
            figures[version] = session(version, env, settings, Path(tmp) / version, RUNS)
            drop_database(settings)
    print(
        "Claude Code against the stand-in model API: characters from a fresh database's first session,",
        f"times the median of {RUNS} sessions\n",
    )
    print("| | " + " | ".join(VERSIONS) + " |")
    print("|---|" + "---:|" * len(VERSIONS))
    for name in TOOLS:
        print(f"| chars of {name} | " + " | ".join(str(figures[v]["chars"].get(name, "-")) for v in VERSIONS) + " |")
    for key, label in (
        ("cold_ms", "cold tool round trip, ms"),
        ("warm_ms", "warm tool round trip, ms"),
        ("connect_ms", "cli-org connected, in Claude Code's log, ms"),
    ):
        print(f"| {label} | " + " | ".join(str(figures[v][key]) for v in VERSIONS) + " |")
    print(
        "| SessionStart hook in Claude Code's log, ms | "
        + " | ".join(str(figures[v]["hook_ms"]) for v in VERSIONS)
        + " |"
    )
    for version in VERSIONS:
        for problem in figures[version]["problems"]:
            print(f"\n{version}: {problem}")


if __name__ == "__main__":
    main()
