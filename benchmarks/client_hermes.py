"""cli-org through a real Hermes Agent (0.19.0, tests/clients.py), measured on the stand-in model
API (tests/standin_chat.py) with the session machinery of tests/test_client_hermes.py: each
run is one `hermes -z` whose scripted model calls all 8 org_* tools once, then org_recall
again.

- characters handed to the model per tool: the whole tool message Hermes sends (its envelope
  included), the text cli-org gave (the CLI's), and the JSON beside that text, if any;
- tool round trips through the client: from the stand-in sending a tool call in full to
  receiving the request that holds its result (the first call of a run is the cold one; the
  last, the same recall again, is warm);
- whether the first request carried cli-org's tools (Hermes waits `mcp_discovery_timeout`,
  1.5 s by default, for its MCP servers before its first request), and the seconds from
  starting Hermes to that request.

    python -m benchmarks.client_hermes [--runs 5]

It makes database `bench_client_hermes` (agents bot and other, a dozen facts, a notebook
entry) on the benchmark server (benchmarks/common.py) and a home folder in a temporary one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from cli_org.db.connect import connect
from cli_org.store import notebook
from cli_org.store.agents import add_agent
from cli_org.store.facts import remember
from tests.clients import client
from tests.standin_chat import Call, Turn
from tests.test_client_hermes import HERMES, PREFIX, Home, Session, payload, run_session, user_home

from .common import bench_settings

FACTS = [
    ("bot", "deploy", "Deploys go through scripts/deploy.sh, never by hand", "docs/deploy.md"),
    ("bot", "ci", "CI runs on ephemeral runners; caches live in the artifact store", "docs/ci.md"),
    ("bot", "release", "Releases are tagged from main after CI passes", "docs/release.md"),
    ("bot", "database", "Migrations run in one transaction each and never edit an applied one", "docs/db.md"),
    ("bot", "logging", "Services log JSON lines to stdout; the collector adds the host", "docs/logging.md"),
    ("bot", "deploy", "A deploy on Friday after 15:00 needs the lead's approval", "#ops-112"),
    ("other", "cache", "The cache TTL is 60 seconds", "config/cache.yml"),
    ("other", "deploy", "The deploy script reads the target from DEPLOY_ENV", "scripts/deploy.sh"),
    ("other", "ci", "Lint and type checks run before the tests in CI", ".ci/run"),
    ("other", "api", "The public API is versioned in the path (/v1, /v2)", "docs/api.md"),
    ("other", "oncall", "On-call hands over on Mondays at 10:00", "docs/oncall.md"),
    ("other", "secrets", "Secrets come from the vault agent, never from files in the repository", "docs/secrets.md"),
]


def prepare() -> tuple[dict[str, str], object]:
    settings = bench_settings("client_hermes", fresh=True)
    with connect(settings, bounded=False) as admin:
        for name in ("bot", "other"):
            add_agent(admin, name)
        admin.commit()
    for agent in ("bot", "other"):
        with connect(settings, agent) as conn:
            for author, subject, claim, source in FACTS:
                if author == agent:
                    remember(conn, subject, claim, source=source)
            if agent == "bot":
                notebook.add(conn, "memory", "The user prefers small commits with a line of why")
    env = {"CLI_ORG_DATABASE": settings.database_name, "CLI_ORG_DATABASE_URL": settings.database_url or ""}
    if settings.data_dir:
        env["CLI_ORG_DATA_DIR"] = str(settings.data_dir)
    return env, settings


def script(forget_id: int) -> list[Turn]:
    question = "how do we deploy"
    calls = [
        ("org_recall", {"question": question}),
        (
            "org_remember",
            {"subject": "release", "claim": "Hotfixes are tagged from the release branch", "source": "#ops-7"},
        ),
        ("org_forget", {"id": forget_id, "why": "replaced by the release-branch rule"}),
        ("org_facts", {"subject": "deploy"}),
        ("org_search", {"query": "deploy"}),
        ("org_sessions_search", {"query": "deploy"}),
        ("org_notebook", {}),
        ("org_context", {}),
        ("org_recall", {"question": question}),
    ]
    return [[Call(PREFIX + name, args)] for name, args in calls] + ["done"]


def measure(session: Session) -> dict:
    chat = session.chat
    results = session.results()
    turns = chat.turns()
    first_tools = [t["function"]["name"] for t in turns[0].request.body.get("tools") or []]
    per_tool = []
    answered = {e.turn for e in turns}
    for turn in (t for t in range(len(turns) - 1) if t + 1 in answered and t in answered):
        content = results.get(f"call_{turn}_0", "")
        try:
            inner = payload(content)
        except ValueError:
            inner = {"result": content}
        text = inner.get("result") if isinstance(inner.get("result"), str) else inner.get("error", "")
        beside = {k: v for k, v in inner.items() if k not in ("result", "error")}
        per_tool.append(
            {
                "turn": turn,
                "handed": len(content),
                "text": len(text or ""),
                "json": len(json.dumps(beside, ensure_ascii=False)) if beside else 0,
                "round_trip": chat.round_trip(turn),
                "error": "error" in inner,
            }
        )
    return {
        "tools_first": any(n.startswith(PREFIX) for n in first_tools),
        "to_first": turns[0].arrived - session.started,
        "per_tool": per_tool,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    client(HERMES)
    env, settings = prepare()
    names = [c[0].name.removeprefix(PREFIX) for c in script(0)[:-1]]  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory(prefix="cli-org-hermes-") as tmp:
        home: Home = user_home(Path(tmp), env)
        done = home.cli("setup", "hermes", "--agent", "bot")
        assert done.returncode == 0, done.stderr
        measured = []
        for i in range(runs):
            with connect(settings, "bot") as conn:
                target = remember(conn, "release", f"Tags are signed (run {i})", source="docs/release.md").id
            measured.append(measure(run_session(home, script(target), "How do we deploy?")))
            print(f"run {i + 1}: tools in the first request: {measured[-1]['tools_first']}", flush=True)

    def med(values: list[float]) -> float:
        return statistics.median(values)

    print(f"\nHermes 0.19.0, {runs} runs; medians over the runs whose first request had the tools\n")
    print("| tool | chars handed to the model | cli-org's text | JSON beside it | round trip (s) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for i, name in enumerate(names):
        rows = [r for m in measured if m["tools_first"] for r in m["per_tool"] if r["turn"] == i]
        if not rows:
            continue
        label = name + (" (cold, first call)" if i == 0 else " (warm, again)" if i == len(names) - 1 else "")
        if any(r["error"] for r in rows):
            label += " [error]"
        print(
            f"| {label} | {med([r['handed'] for r in rows]):.0f} | {med([r['text'] for r in rows]):.0f} "
            f"| {med([r['json'] for r in rows]):.0f} | {med([r['round_trip'] for r in rows]):.2f} |"
        )
    firsts = sum(m["tools_first"] for m in measured)
    print(f"\ncli-org's tools in the first request: {firsts} of {runs} runs")
    print(f"start to first request: median {med([m['to_first'] for m in measured]):.2f} s")


if __name__ == "__main__":
    main()
