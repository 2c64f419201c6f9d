"""What a write costs a new process, against a read in the same run: cold `cli-org remember`
against cold `cli-org facts` and `cli-org recall --arms fact` (spawn to exit, no warm
helper), and the first `org_remember` of a fresh MCP server against its later ones (the
SDK's own stdio client), sent MCP_PAUSE s after the tool list as a harness's model would,
and ("at once") right after the handshake (however soon it comes: the first call's own
wait is timed, and set against the later calls of all those servers). Every variant's runs
are interleaved, so load on the shared machine falls on all alike; medians, and the ratios
that count on a noisy machine (issue 38's targets: remember / facts <= 1.3, at once / later
<= 5, with the model).

    python -m benchmarks.cold_writes [--runs 15] [--model] [--before PATH]

--model makes the query model first (as `cli-org vault embed` does): with it, `remember`
also runs the injection classifier and stores the claim's vector, and `recall` embeds the
question. --before runs the same from another checkout (the code before a change), each
checkout on its own database of the same server.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from .common import ROOT, bench_settings, drop_database, median

AGENT = "writer"
MCP_WRITES = 8
# Seconds between the tool list and the first org_remember: a model's first turn is longer.
MCP_PAUSE = 2.0


def _env(settings, checkout: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": settings.database_url or "",
        "ORG_AGENT": AGENT,
        "CLI_ORG_WARM": "0",  # cold: no helper answers for the command
    }


def _timed(args: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cli_org", *args], env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{cwd}: cli-org {' '.join(args)}: {done.stderr.strip()}")
    return time.perf_counter() - started


async def _mcp_writes(env: dict[str, str], cwd: Path, tag: str, pause: float) -> list[float]:
    """Seconds of each org_remember of one fresh server, the first one first; the first is
    sent `pause` seconds after the handshake and the tool list (a harness's model takes its
    first turn before it calls a tool; 0 measures the server's start-up too)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "cli_org", "mcp"], env=env, cwd=str(cwd))
    times = []
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            await anyio.sleep(pause)
            for i in range(MCP_WRITES):
                claim = f"Nightly run {tag}-{i} of the mcp write benchmark ended on runner {i * 7 + 3}"
                started = time.perf_counter()
                result = await session.call_tool(
                    "org_remember", {"subject": f"mcp bench {tag}", "claim": claim, "source": "benchmarks/x.md"}
                )
                times.append(time.perf_counter() - started)
                assert not result.is_error, result
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--model", action="store_true", help="make the query model first")
    parser.add_argument("--before", type=Path, help="a checkout of the code before the change")
    args = parser.parse_args()
    variants = {"after": ROOT}
    if args.before:
        variants["before"] = args.before.resolve()
    envs = {}
    for n, (name, checkout) in enumerate(variants.items()):
        settings = bench_settings(f"cold_writes_{n}", fresh=True)
        drop_database(settings)  # made again below by the checkout's own `init`
        env = _env(settings, checkout)
        subprocess.run(
            [sys.executable, "-m", "cli_org", "init"], env=env, cwd=checkout, check=True, capture_output=True
        )
        subprocess.run(
            [sys.executable, "-m", "cli_org", "agents", "add", AGENT], env=env, cwd=checkout, capture_output=True
        )
        if args.model:
            from cli_org.vault.embedders import model_files

            model_files(settings)
        envs[name] = (env, checkout)
    times: dict[str, dict[str, list[float]]] = {name: {} for name in variants}
    for r in range(args.runs):
        for name, (env, checkout) in envs.items():
            got = times[name]
            got.setdefault("facts", []).append(_timed(["facts"], env, checkout))
            claim = f"Deploy {r} of the cold write benchmark went out on runner {r * 13 + 5}"
            got.setdefault("remember", []).append(
                _timed(["remember", f"cold bench {r}", claim, "--source", "benchmarks/cold_writes.py"], env, checkout)
            )
            got.setdefault("recall", []).append(_timed(["recall", "deploy runner", "--arms", "fact"], env, checkout))
            if r < 5:
                writes = anyio.run(_mcp_writes, env, checkout, f"{name}{r}", MCP_PAUSE)
                got.setdefault("mcp first", []).append(writes[0])
                got.setdefault("mcp later", []).append(median(writes[1:]))
                at_once = anyio.run(_mcp_writes, env, checkout, f"{name}{r}x", 0.0)
                got.setdefault("mcp at once", []).append(at_once[0])
                got.setdefault("mcp later", []).append(median(at_once[1:]))
    load = Path("/proc/loadavg").read_text().split()[:3]
    model = "with" if args.model else "without"
    print(f"cold commands, {args.runs} interleaved runs, {model} the query model; load average now {' '.join(load)}")
    print(f"{'variant':8} {'facts':>8} {'remember':>9} {'recall':>8} {'remember/facts':>15}"
          f" {'mcp 1st':>8} {'mcp later':>10} {'1st/later':>10} {'mcp at once':>12} {'at once/later':>14}")  # fmt: skip
    for name, got in times.items():
        m = {kind: median(values) for kind, values in got.items()}
        print(
            f"{name:8} {m['facts']:8.3f} {m['remember']:9.3f} {m['recall']:8.3f} {m['remember'] / m['facts']:15.2f}"
            f" {m['mcp first']:8.3f} {m['mcp later']:10.3f} {m['mcp first'] / m['mcp later']:10.1f}"
            f" {m['mcp at once']:12.3f} {m['mcp at once'] / m['mcp later']:14.1f}"
        )


if __name__ == "__main__":
    main()
