"""Scan and query speed on the TIL vault: full scan, rescan with nothing changed, embedding
throughput, and `cli-org search --mode hybrid` as a whole cold process. Medians of repeats.

    python -m benchmarks.scan_speed [--repeat 5]

sentence-transformers (torch) is the reference here, which no test or command needs:
install it with `pip install torch==2.13.0 -e '.[reference]'` (the CPU build named first).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.reference import SentenceTransformerEmbedder
from cli_org.db.connect import connect
from cli_org.vault.embed import embed_pending
from cli_org.vault.scan import scan

from .common import SHARED, bench_settings, median, percentile

QUERIES = [
    "squash several commits into one",
    "change the psql time zone",
    "tmux split pane",
    "find which process listens on a port",
    "rename a git branch",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    til = SHARED / "til"
    full, rescan = [], []
    for _ in range(args.repeat):
        settings = bench_settings("scan_speed", fresh=True)
        with connect(settings) as conn:
            full.append(scan(conn, til).seconds)
            rescan.append(scan(conn, til).seconds)
    # Embedding throughput on a fixed sample of chunks of the embedded TIL index.
    til_settings = bench_settings("til")
    with connect(til_settings) as conn:
        texts = [r["content"] for r in conn.execute("SELECT content FROM vault_chunks ORDER BY id LIMIT 512")]
    embedder = SentenceTransformerEmbedder()
    embedder.embed(texts[:16])
    started = time.perf_counter()
    embedder.embed(texts)
    rate = len(texts) / (time.perf_counter() - started)
    env = {**os.environ, "CLI_ORG_DATA_DIR": str(til_settings.data_dir), "CLI_ORG_DATABASE": til_settings.database_name}
    cli = Path(sys.executable).parent / "cli-org"
    cold = []
    for i in range(args.repeat * 4):
        started = time.perf_counter()
        subprocess.run(
            [str(cli), "search", QUERIES[i % len(QUERIES)], "--mode", "hybrid"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cold.append(time.perf_counter() - started)
    with connect(til_settings) as conn:
        embed_pending(conn, embedder)  # nothing to do; keeps the index complete
    print(
        json.dumps(
            {
                "full_scan_s": {"median": round(median(full), 2), "runs": [round(x, 2) for x in full]},
                "rescan_s": {"median": round(median(rescan), 3), "runs": [round(x, 3) for x in rescan]},
                "embed_chunks_per_s": round(rate, 1),
                "cold_search_hybrid_s": {
                    "p50": round(median(cold), 3),
                    "p95": round(percentile(cold, 0.95), 3),
                    "runs": len(cold),
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
