"""recall, measured end to end: the shipped sample and the TIL vault (with the sample's facts
and memory files beside it), golden sets, noise sets, characters and latency.

    python -m benchmarks.recall_eval
"""

from __future__ import annotations

import dataclasses
import json
import os
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


def load_sample(settings, facts_only: bool) -> None:
    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": settings.database_url or "",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    args = ["bash", str(ROOT / "scripts" / "load-sample.sh")] + (["--facts-only"] if facts_only else [])
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)


def cold_latency(settings, questions: list[str], runs: int = 15) -> dict:
    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "ORG_ROOT": str(SAMPLE),
    }
    cli = Path(sys.executable).parent / "cli-org"
    times = []
    for i in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [str(cli), "recall", questions[i % len(questions)]], env=env, check=True, stdout=subprocess.DEVNULL
        )
        times.append(time.perf_counter() - started)
    return {"runs": runs, "p50_s": round(median(times), 3), "p95_s": round(percentile(times, 0.95), 3)}


def measure(name: str, settings, golden: Path, noise_files: list[Path]) -> dict:
    settings = dataclasses.replace(settings, root=str(SAMPLE))
    embedder, _ = query_embedder(settings)
    cases = load_golden(golden)
    queries = [q for f in noise_files for q in parse_queries(f.read_text())]
    with connect(settings) as conn:
        run_golden(conn, cases[:5], settings=settings, embedder=embedder)  # warm up
        run = run_golden(conn, cases, settings=settings, embedder=embedder)
        noise = run_noise(conn, queries, settings=settings, embedder=embedder).queries
    misses = [(c.question, c.expected) for c in run.cases if not c.position]
    return {
        "set": name,
        "overall": dataclasses.asdict(run.overall),
        "by_tag": {t: dataclasses.asdict(f) for t, f in run.by_tag.items()},
        "misses": misses,
        "noise": {"queries": len(noise), "answered": [dataclasses.asdict(n) for n in noise if n.hits]},
        "cold": cold_latency(settings, [c.question for c in cases]),
    }


def main() -> None:
    sample = bench_settings("sample")
    load_sample(sample, facts_only=False)
    results = [measure("sample", sample, ROOT / "eval" / "golden.txt", [ROOT / "eval" / "noise.txt"])]
    til = bench_settings("til")
    with connect(til) as conn:
        scan(conn, SHARED / "til", replace=True)
    load_sample(til, facts_only=True)
    results.append(
        measure(
            "til", til, ROOT / "eval" / "til-golden.txt", [ROOT / "eval" / "til-noise.txt", ROOT / "eval" / "noise.txt"]
        )
    )
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
