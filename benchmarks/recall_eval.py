"""recall, measured end to end on the tuning and the held-out test half of every set: the
shipped sample, the TIL vault (with the sample's facts, memory files and the invented
Halyard team's facts beside it), the fact golden set, noise and near-topic questions,
characters and latency.

    python -m benchmarks.recall_eval            # both halves, cold latency included
    python -m benchmarks.recall_eval --quick    # no cold-process runs
    python -m benchmarks.recall_eval --no-load  # reuse the benchmark databases as they are

Recall runs as the agent `mara` (an owner of the sample), so the semantic fact pass can
store the fact vectors it computes (migration 0017).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cli_org.db.connect import connect
from cli_org.evaluation import load_golden, parse_queries, run_golden, run_noise
from cli_org.vault.embedders import query_embedder
from cli_org.vault.scan import scan

from .common import ROOT, SHARED, bench_settings, median, percentile

SAMPLE = ROOT / "eval" / "sample"
EVAL = ROOT / "eval"
AGENT = "mara"
HALVES = ("tune", "test")


def half(name: str, which: str) -> Path:
    return EVAL / f"{name}.{which}.txt"


def _env(settings) -> dict[str, str]:
    return {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": settings.database_url or "",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }


def load_sample(settings, facts_only: bool) -> None:
    args = ["bash", str(ROOT / "scripts" / "load-sample.sh")] + (["--facts-only"] if facts_only else [])
    subprocess.run(args, env=_env(settings), check=True, stdout=subprocess.DEVNULL)


def load_team(settings) -> None:
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "load-team.sh")], env=_env(settings), check=True, stdout=subprocess.DEVNULL
    )


def load_til(settings) -> None:
    """The TIL vault, with the sample's facts (and agents) and the Halyard team's facts beside it."""
    with connect(settings) as conn:
        scan(conn, SHARED / "til", replace=True)
    load_sample(settings, facts_only=True)
    load_team(settings)


def cold_latency(settings, questions: list[str], runs: int = 15) -> dict:
    """A fresh process per recall, two commands interleaved on the same questions: this
    checkout (`python -m cli_org` with the checkout first on the path) and the installed
    `cli-org` (whatever tree the venv was installed from: the code before a change, when the
    venv belongs to the main checkout). Reported apart, so one run compares them."""
    env = {**_env(settings), "ORG_ROOT": str(SAMPLE), "ORG_AGENT": AGENT}
    commands = {
        "checkout": ([sys.executable, "-m", "cli_org"], {**env, "PYTHONPATH": str(ROOT)}),
        "installed": ([str(Path(sys.executable).parent / "cli-org")], env),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(runs):
        for name, (command, run_env) in commands.items():
            started = time.perf_counter()
            subprocess.run(
                [*command, "recall", questions[i % len(questions)]],
                env=run_env,
                check=True,
                stdout=subprocess.DEVNULL,
                cwd=str(ROOT),
            )
            times[name].append(time.perf_counter() - started)
    return {
        name: {"runs": runs, "p50_s": round(median(t), 3), "p95_s": round(percentile(t, 0.95), 3)}
        for name, t in times.items()
    }


def figures(run) -> dict:
    return {
        "overall": dataclasses.asdict(run.overall),
        "by_tag": {
            t: {k: round(v, 3) if isinstance(v, float) else v for k, v in dataclasses.asdict(f).items()}
            for t, f in run.by_tag.items()
        },
        "misses": [(c.question, c.expected) for c in run.cases if not c.position],
    }


def measure(conn, settings, embedder, golden: str | None, noise: list[str], near: str | None) -> dict:
    out: dict = {}
    for which in HALVES:
        part: dict = {}
        if golden:
            cases = load_golden(half(golden, which))
            part["golden"] = figures(run_golden(conn, cases, settings=settings, embedder=embedder))
        queries = [q for n in noise for q in parse_queries(half(n, which).read_text())]
        if queries:
            answered = run_noise(conn, queries, settings=settings, embedder=embedder).queries
            part["noise"] = {
                "queries": len(queries),
                "answered": [(n.query, n.hits, n.arms) for n in answered if n.hits],
            }
        if near:
            asked = run_noise(
                conn, parse_queries(half(near, which).read_text()), settings=settings, embedder=embedder
            ).queries
            part["near"] = {
                "queries": len(asked),
                "mean_hits": round(statistics.mean(n.hits for n in asked), 3),
                "answered": sum(1 for n in asked if n.hits),
                "arms": sorted({a for n in asked for a in n.arms}),
            }
        out[which] = part
    return out


def run(name: str, settings, golden: str | None, noise: list[str], near: str | None, cold: bool) -> dict:
    settings = dataclasses.replace(settings, root=str(SAMPLE))
    embedder, _ = query_embedder(settings)
    with connect(settings, AGENT) as conn:
        started = time.perf_counter()
        run_golden(conn, load_golden(half(golden or "golden", "tune"))[:3], settings=settings, embedder=embedder)
        first_ms = round((time.perf_counter() - started) * 1000)  # includes embedding facts lazily
        result = {
            "set": name,
            "first_three_recalls_ms": first_ms,
            **measure(conn, settings, embedder, golden, noise, near),
        }
    if cold and golden:
        result["cold"] = cold_latency(settings, [c.question for c in load_golden(half(golden, "test"))])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the cold-process runs")
    parser.add_argument("--no-load", action="store_true", help="reuse the benchmark databases")
    args = parser.parse_args()
    sample = bench_settings("sample")
    til = bench_settings("til")
    if not args.no_load:
        load_sample(sample, facts_only=False)
        load_til(til)
    results = [
        run("sample", sample, "golden", ["noise"], None, not args.quick),
        run("til", til, "til-golden", ["til-noise", "noise"], "til-near", not args.quick),
        run("facts", til, "facts-golden", [], None, False),
    ]
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
