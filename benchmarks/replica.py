"""Reads from a streaming replica (CLI_ORG_READ_URL) on one machine: how long a fact stored
on the primary takes to become visible on the replica, and recall's in-process latency on
the primary and on the replica, interleaved call by call (the same questions, keyword arms
only, no recall log: no query model and no write, so the figures are the reads).

    python -m benchmarks.replica [--facts 200] [--recalls 300]

The primary and the replica are the embedded server's own binaries in a temporary folder
(tests/replica_pair.py) in a fresh folder under $BENCH_WORK, removed after; both on this
machine's 2 shared cores.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from cli_org.db.connect import connect
from cli_org.recall.answer import recall
from cli_org.store.facts import remember
from tests.replica_pair import build_pair, stop_pair

from .common import WORK, median, percentile

POLL_SECONDS = 0.0005  # how often the replica is asked whether the fact is there yet

WORDS = [
    "deploy",
    "canary",
    "lane",
    "rollback",
    "schema",
    "migration",
    "cache",
    "queue",
    "backup",
    "restore",
    "index",
    "vacuum",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=200)
    parser.add_argument("--recalls", type=int, default=300)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="replica-", dir=WORK))
    pair = build_pair(base)
    try:
        env = {k: v for k, v in pair.embedded_env().items() if v is not None}
        from cli_org.config import Settings

        cfg = Settings.from_env(env)
        lags = []
        with connect(cfg, "bot") as primary, pair.admin(replica=True) as replica:
            for i in range(args.facts):
                a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
                stored = remember(primary, f"{a} {i}", f"The {a} step {i} runs before the {b} step", source="ops.md")
                written = time.perf_counter()
                while replica.execute("SELECT 1 FROM memory_facts WHERE id = %s", (stored.id,)).fetchone() is None:
                    time.sleep(POLL_SECONDS)
                lags.append((time.perf_counter() - written) * 1000)
        pair.caught_up()
        on = {"primary": [], "replica": []}
        with connect(cfg, "bot") as primary, connect(cfg, "bot", read=True) as replica:
            for i in range(args.recalls):
                question = f"when does the {WORDS[i % len(WORDS)]} step run"
                for name, conn in (("primary", primary), ("replica", replica)):
                    started = time.perf_counter()
                    recall(conn, question, settings=cfg, arms=("fact", "memory"), log=False)
                    on[name].append((time.perf_counter() - started) * 1000)
        print(f"visible on the replica after commit on the primary ({args.facts} facts):")
        print(f"  median {median(lags):.2f} ms, p95 {percentile(lags, 0.95):.2f} ms, max {max(lags):.2f} ms")
        for name, times in on.items():
            print(
                f"recall on the {name} ({args.recalls} calls, fact+memory arms): "
                f"median {median(times):.2f} ms, p95 {percentile(times, 0.95):.2f} ms"
            )
    finally:
        stop_pair(pair)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
