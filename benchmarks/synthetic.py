"""Speed at scale: hybrid search over a synthetic vault of at least 100,000 chunks.

Notes are generated from the TIL vault's own vocabulary with a Zipf-like word frequency,
four sections each, so BM25 sees realistic posting lists. Their vectors are random unit
vectors written straight into the table (embedding 100k chunks with the model would take
hours on two cores); queries are embedded with the real ONNX model, so the timing includes
everything a real query does.

    python -m benchmarks.synthetic [--notes 25000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from dataclasses import replace

from cli_org.db.connect import connect
from cli_org.vault import search as search_module
from cli_org.vault.embedders import MODEL_NAME, index_embedder, query_embedder
from cli_org.vault.scan import scan
from cli_org.vault.search import search

from .common import SHARED, WORK, bench_settings, median, percentile

WORD = re.compile(r"[a-z]{3,}")


def vocabulary() -> tuple[list[str], list[float]]:
    counts = Counter()
    for path in (SHARED / "til").rglob("*.md"):
        counts.update(WORD.findall(path.read_text(errors="ignore").lower()))
    words = [w for w, _ in counts.most_common(20000)]
    weights = [1 / (rank + 10) for rank in range(len(words))]  # Zipf-like
    return words, weights


def generate(n_notes: int, rng: random.Random, words, weights) -> None:
    vault = WORK / f"synthetic-{n_notes}"
    if (vault / ".complete").exists():
        return
    for i in range(n_notes):
        folder = vault / f"topic{i % 200:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        parts = [f"# {' '.join(rng.choices(words, weights, k=4)).title()}"]
        for s in range(4):
            parts.append(f"## Section {s} {' '.join(rng.choices(words, weights, k=2))}")
            parts.append(" ".join(rng.choices(words, weights, k=rng.randint(60, 120))) + ".")
        (folder / f"note{i}.md").write_text("\n\n".join(parts) + "\n")
    (vault / ".complete").write_text("ok")


def fill_random_vectors(conn) -> None:
    """Random unit vectors for every chunk, then the HNSW index built once."""
    if conn.execute("SELECT count(*) AS n FROM vault_chunks WHERE embedding IS NULL").fetchone()["n"] == 0:
        return
    conn.execute("DROP INDEX IF EXISTS vault_chunks_embedding")
    conn.execute(
        """
        UPDATE vault_chunks SET embed_model = %s, embedding = (
            SELECT l2_normalize(array_agg(random() - 0.5)::vector) FROM generate_series(1, 384) WHERE id > 0)
        WHERE embedding IS NULL""",
        (MODEL_NAME,),
    )
    conn.execute(
        "INSERT INTO vault_meta VALUES ('embed_model', %s) ON CONFLICT (key) DO UPDATE SET value = %s",
        (MODEL_NAME, MODEL_NAME),
    )
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute("CREATE INDEX vault_chunks_embedding ON vault_chunks USING hnsw (embedding vector_cosine_ops)")
    conn.commit()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=25000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    words, weights = vocabulary()
    started = time.perf_counter()
    generate(args.notes, rng, words, weights)
    print(f"generated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    settings = bench_settings(f"synthetic_{args.notes}")
    index_embedder(settings)  # makes sure the ONNX query model exists
    with connect(settings) as conn:
        summary = scan(conn, WORK / f"synthetic-{args.notes}", replace=True)
        print("scan:", summary.line(), file=sys.stderr)
        started = time.perf_counter()
        fill_random_vectors(conn)
        print(f"vectors + HNSW in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        chunks = conn.execute("SELECT count(*) AS n FROM vault_chunks").fetchone()["n"]
        embedder, _ = query_embedder(settings)
        embedder.embed(["warm up"])
        kinds = {
            "1-8 terms": [" ".join(rng.choices(words, weights, k=rng.randint(1, 8))) for _ in range(args.queries)],
            "12-20 terms (SciFact-length)": [
                " ".join(rng.choices(words, weights, k=rng.randint(12, 20))) for _ in range(args.queries // 2)
            ],
        }
        rows = []
        for kind, queries in kinds.items():
            for mode in ("keyword", "semantic", "hybrid"):
                for q in queries:  # a first pass reads the index from disk; time the warm one
                    search(conn, q, mode=mode, limit=10, embedder=embedder)
                times = []
                for q in queries:
                    t = time.perf_counter()
                    search(conn, q, mode=mode, limit=10, embedder=embedder)
                    times.append((time.perf_counter() - t) * 1000)
                rows.append(
                    {
                        "queries": kind,
                        "mode": mode,
                        "n": len(queries),
                        "p50_ms": round(median(times), 1),
                        "p95_ms": round(percentile(times, 0.95), 1),
                    }
                )
        # What bounding the work of common terms costs: top-10 overlap with exact BM25.
        overlaps = []
        for q in kinds["1-8 terms"]:
            bounded = [h.file_id for h in search(conn, q, mode="keyword", limit=10).hits]
            exact_bm25 = replace(search_module.TUNING, per_term=10**9)
            exact = [h.file_id for h in search(conn, q, mode="keyword", limit=10, tuning=exact_bm25).hits]
            overlaps.append(len(set(bounded) & set(exact)) / max(1, len(exact)))
    print(
        json.dumps(
            {
                "notes": args.notes,
                "chunks": chunks,
                "rows": rows,
                "keyword_top10_overlap_with_exact": round(sum(overlaps) / len(overlaps), 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
