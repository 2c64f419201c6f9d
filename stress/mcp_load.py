"""The MCP server under concurrent clients: N official-SDK stdio clients at once, each with
its own `cli-org mcp --as AGENT` process (as each agent's harness runs it), each calling
org_recall, org_remember, org_notebook and org_facts in turn (after one untimed call of
each, which loads the write checks and the query model). No call may fail, every
remembered fact must be stored once; round trips p50/p95 per tool.

    python -m stress.mcp_load [--clients 16] [--calls 40]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from .kills import ROOT


def _params(env: dict[str, str], agent: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "cli_org", "mcp", "--as", agent],
        env={**os.environ, **env, "CLI_ORG_WARM": "0", "HF_HUB_OFFLINE": "1"},
        cwd=str(ROOT),
    )


def _call(i: int, agent: str) -> tuple[str, dict]:
    kind = ("org_recall", "org_remember", "org_notebook", "org_facts")[i % 4]
    if kind == "org_recall":
        return kind, {"question": "how do we deploy the checklist"}
    if kind == "org_remember":
        return kind, {
            "subject": "load",
            "claim": f"Load claim {i} from {agent} under concurrent clients",
            "source": "docs/load.md",
        }
    if kind == "org_notebook":
        return kind, {}
    return kind, {"subject": "load"}


async def _client(env: dict[str, str], agent: str, calls: int, out: dict, barrier: anyio.Event) -> None:
    with open(os.devnull, "w") as quiet:
        async with stdio_client(_params(env, agent), errlog=quiet) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            for i in range(4):  # one call of each kind first: the first loads the write checks, the model
                await s.call_tool(*_call(calls + i, agent))
            out["ready"] += 1
            await barrier.wait()
            for i in range(calls):
                kind, arguments = _call(i, agent)
                started = time.perf_counter()
                try:
                    result = await s.call_tool(kind, arguments)
                except Exception as exc:  # noqa: BLE001 - counted
                    out["errors"].append(f"{agent} {kind}: {exc!r}"[:300])
                    continue
                out["ms"].setdefault(kind, []).append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    out["errors"].append(f"{agent} {kind}: {result.content}"[:300])
                elif kind == "org_remember":
                    out["remembered"][agent] += 1
    out["remembered"][agent] += 1  # the warm-up's own


async def _all(env: dict[str, str], agents: list[str], calls: int) -> dict:
    out: dict = {"ready": 0, "errors": [], "ms": {}, "remembered": Counter()}
    go = anyio.Event()

    async def release() -> None:
        while out["ready"] < len(agents) and not out["errors"]:
            await anyio.sleep(0.05)
        out["started"] = time.perf_counter()
        go.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(release)
        for agent in agents:
            tg.start_soon(_client, env, agent, calls, out, go)
    out["seconds"] = time.perf_counter() - out.pop("started")
    return out


def run(env: dict[str, str], agents: list[str], calls: int) -> dict:
    from .common import figures

    out = anyio.run(_all, env, agents, calls)
    return {
        "clients": len(agents),
        "calls": sum(len(v) for v in out["ms"].values()) + len(out["errors"]),
        "errors": len(out["errors"]),
        "first_errors": out["errors"][:5],
        "seconds": round(out["seconds"], 1),
        "ms": {k: figures(v) for k, v in sorted(out["ms"].items())},
        "all_ms": figures([x for v in out["ms"].values() for x in v]),
        "remembered": dict(out["remembered"]),
    }


def stored(admin, agents: list[str]) -> dict[str, int]:
    with admin() as conn:
        return {
            r["author"]: r["n"]
            for r in conn.execute(
                "SELECT author, count(*) AS n FROM memory_facts WHERE subject = 'load' GROUP BY author"
            )
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    from .common import fresh_org
    from .isolation import seed

    agents = [f"client{i}" for i in range(args.clients)]
    org = fresh_org("stress_mcp", agents)
    seed(org.login, agents)
    env = {"CLI_ORG_DATA_DIR": str(org.settings.data_dir), "CLI_ORG_DATABASE": org.dbname, "CLI_ORG_DATABASE_URL": ""}
    out = run(env, agents, args.calls)
    out["stored_equals_remembered"] = stored(org.admin, agents) == out["remembered"]
    print(json.dumps(out, indent=2))
    sys.exit(0 if out["errors"] == 0 and out["stored_equals_remembered"] else 1)


if __name__ == "__main__":
    main()
