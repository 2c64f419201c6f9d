"""cli-org through the real Codex (0.169.0, tests/clients.py), against the stand-in model API
(tests/standin_responses.py), with the test's machinery (tests/test_client_codex.py):

- in how many of RUNS `codex exec` runs the first request to the model carried cli-org's
  tools, and the time from starting `codex exec` to that first request;
- the characters Codex hands the model for each of the 8 tools, called once each (the
  whole output item: Codex's timing line and the result), beside the CLI's text for the
  same read;
- cold and warm tool round trips through Codex: from the stand-in's last event of a reply
  that calls org_recall to the arrival of the request carrying its output. The first call
  of a session is cold; the next WARM are warm. Medians over SESSIONS sessions. The
  stand-in answers at once, so its first call meets a server still loading (the SDK and
  the Org, behind the front that answered `initialize`); a second cold row lets the model
  take THINK seconds to its first call, as a real one does.

Codex runs as `cli-org setup codex` leaves it (the server required, the read tools
approved); the characters per tool with `--dangerously-bypass-approvals-and-sandbox`, so
that the writes run too.

    python -m benchmarks.client_codex
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from cli_org.db.connect import connect
from cli_org.store import facts
from cli_org.store.agents import add_agent
from tests import standin_responses as api
from tests.test_client_codex import NAMESPACE, WRAPPED, Script, codex_session, scripted

from .common import bench_settings, drop_database, median

RUNS = 6
SESSIONS = 3
WARM = 5
THINK = 3.0  # seconds a model may take to its first call
QUESTION = "how do deploys run"
# Each tool once, with the arguments a model would give; the CLI command printing the same read.
CALLS: list[tuple[str, dict[str, Any], list[str] | None]] = [
    ("org_recall", {"question": QUESTION}, ["recall", QUESTION]),
    ("org_facts", {"subject": "deploy"}, ["facts", "--subject", "deploy"]),
    ("org_search", {"query": "deploy"}, ["search", "deploy"]),
    ("org_sessions_search", {"query": "deploy"}, ["sessions", "search", "deploy"]),
    ("org_context", {"for": "fix the deploy script"}, ["context", "--for", "fix the deploy script"]),
    ("org_notebook", {}, ["notebook", "show"]),
    (
        "org_remember",
        {"subject": "release", "claim": "Releases are tagged from main by the release job", "source": "ci.yml"},
        None,
    ),
    ("org_forget", {"id": 0, "why": "replaced by the release job"}, None),  # bot's own deploy fact
]
BYPASS = "--dangerously-bypass-approvals-and-sandbox"


def _database() -> tuple[dict[str, str], int]:
    """A fresh benchmark database with agents bot and other and two facts; its environment
    and bot's fact."""
    settings = bench_settings("client_codex", fresh=True)
    with connect(settings) as conn:
        for agent in ("bot", "other"):
            add_agent(conn, agent)
        conn.commit()
    with connect(settings, "bot") as conn:
        mine = facts.remember(conn, "deploy", "Deploys run from scripts/deploy.sh on main", source="ops.md").id
    with connect(settings, "other") as conn:
        facts.remember(conn, "deploy", "Deploys are frozen on Fridays", source="ops.md")
    env = {
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": settings.database_url or "",
    }
    return env, mine


def _clocked(script: Script, arrived: list[float]) -> Script:
    """`script`, noting when each request arrived (time.perf_counter)."""

    def clocked(body: dict[str, Any]) -> list[api.Item]:
        arrived.append(time.perf_counter())
        return script(body)

    return clocked


def _slow_start(script: Script, think: float) -> Script:
    """`script`, answering the first request of a session `think` seconds late."""

    def slow(body: dict[str, Any]) -> list[api.Item]:
        if not api.outputs(body):
            time.sleep(think)
        return script(body)

    return slow


def first_turns(database: dict[str, str]) -> tuple[int, list[float]]:
    """`codex exec` runs: how many first requests carried cli-org's tools; seconds from
    start to the first request."""
    carried, waits = 0, []
    for _ in range(RUNS):
        arrived: list[float] = []
        script = _clocked(lambda body: [api.text("Done.")], arrived)
        with tempfile.TemporaryDirectory() as tmp, codex_session(Path(tmp), database, script) as h:
            h.cli_org("setup", "codex", "--agent", "bot")
            started = time.perf_counter()
            h.exec("Hello.")
            first = h.requests()[0]
        carried += any(name.startswith(NAMESPACE + "/") for name in api.tools(first))
        waits.append(arrived[0] - started)
    return carried, waits


def each_tool(database: dict[str, str], mine: int) -> list[tuple[str, int, int, int | None]]:
    """(tool, characters handed, of which the result, the CLI's text) for each tool."""
    calls = [(name, {**args, "id": mine} if name == "org_forget" else args) for name, args, _ in CALLS]
    with tempfile.TemporaryDirectory() as tmp, codex_session(Path(tmp), database, scripted(*calls)) as h:
        h.cli_org("setup", "codex", "--agent", "bot")
        h.env["ORG_AGENT"] = "bot"
        cli = {name: len(h.cli_org(*command).rstrip("\n")) for name, _, command in CALLS if command}
        del h.env["ORG_AGENT"]
        h.exec("Use every org tool once.", BYPASS)
        outputs = list(api.outputs(h.requests()[-1]).values())
    return [
        (name, len(out), len(WRAPPED.sub("", out)), cli.get(name))
        for (name, _), out in zip(calls, outputs, strict=True)
    ]


def round_trips(database: dict[str, str], think: float = 0.0) -> tuple[list[float], list[float]]:
    """Seconds per org_recall round trip through Codex: the first of each session (cold), the
    others (warm). The model's first reply comes `think` seconds after the first request (a
    real model's time to its first call, while the server goes on loading)."""
    cold, warm = [], []
    for _ in range(SESSIONS):
        arrived: list[float] = []
        sent: list[float] = []
        model = scripted(*[("org_recall", {"question": QUESTION})] * (1 + WARM))
        script = _clocked(_slow_start(model, think), arrived)
        with tempfile.TemporaryDirectory() as tmp, codex_session(Path(tmp), database, script, sent=sent) as h:
            h.cli_org("setup", "codex", "--agent", "bot")
            h.exec("Ask the org six times.")
            answered = [len(api.outputs(body)) for body in h.requests()]
            handed = list(api.outputs(h.requests()[-1]).values())
        assert answered == list(range(2 + WARM)), answered
        assert all("scripts/deploy.sh" in out for out in handed), handed  # each call ran: no refusal timed
        trips = [arrived[i + 1] - sent[i] for i in range(1 + WARM)]
        cold.append(trips[0])
        warm.extend(trips[1:])
    return cold, warm


def main() -> None:
    database, mine = _database()
    try:
        carried, waits = first_turns(database)
        cold, warm = round_trips(database)
        thought, _ = round_trips(database, THINK)
        chars = each_tool(database, mine)
    finally:
        drop_database(bench_settings("client_codex"))
    print("## cli-org through Codex 0.169.0 (`python -m benchmarks.client_codex`)\n")
    print(f"First request carried cli-org's tools: {carried} of {RUNS} `codex exec` runs")
    print(f"Start of `codex exec` to its first request: median {median(waits):.2f} s, max {max(waits):.2f} s\n")
    print("| tool round trip through Codex | median s | runs |")
    print("|---|---|---|")
    print(f"| cold (first call of a session) | {median(cold):.3f} | {len(cold)} |")
    print(f"| cold, the first call {THINK:g} s after the first request | {median(thought):.3f} | {len(thought)} |")
    print(f"| warm | {median(warm):.3f} | {len(warm)} |\n")
    print("| tool | characters handed to the model | of which the result | the CLI's text |")
    print("|---|---|---|---|")
    for name, whole, result, cli in chars:
        print(f"| {name} | {whole} | {result} | {'-' if cli is None else cli} |")


if __name__ == "__main__":
    main()
