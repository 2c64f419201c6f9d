"""What the lazy fact vectors cost (migration 0017): one batch per agent that has not yet
computed vectors for the facts it reads, on the TIL benchmark database that `recall_eval`
loads (the sample's 19 facts and the Halyard team's 64), with a warm query model.

    python -m benchmarks.fact_vectors
"""

from __future__ import annotations

import json
import time

from cli_org.db.connect import connect
from cli_org.recall.facts_arm import ensure_fact_vectors
from cli_org.vault.embedders import query_embedder

from .common import bench_settings, median

AGENTS = ("tove", "relay", "probe", "pager", "builder", "reviewer", "ops")


def main() -> None:
    settings = bench_settings("til")
    embedder, _ = query_embedder(settings)
    assert embedder is not None, "run `python -m benchmarks.recall_eval` first"
    embedder.embed(["warm up"])
    rows = []
    for agent in AGENTS:
        with connect(settings, agent) as conn:
            started = time.perf_counter()
            n = ensure_fact_vectors(conn, embedder, cap=500)
            ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            again = ensure_fact_vectors(conn, embedder, cap=500)
            check_ms = (time.perf_counter() - started) * 1000
        rows.append(
            {
                "agent": agent,
                "embedded": n,
                "ms": round(ms),
                "ms_per_fact": round(ms / n, 2) if n else None,
                "next_recall_embedded": again,
                "next_recall_check_ms": round(check_ms, 1),
            }
        )
    done = [r for r in rows if r["embedded"]]
    print(
        json.dumps(
            {
                "batches": rows,
                "median_ms_per_fact": median([r["ms_per_fact"] for r in done]) if done else None,
                "median_check_ms": median([r["next_recall_check_ms"] for r in rows]),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
