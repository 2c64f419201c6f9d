"""SciFact (BEIR test split): nDCG@10 and recall@100 for keyword, semantic and hybrid.

Each abstract becomes one note (title as heading, abstract as body) in a vault folder
under $BENCH_WORK; the folder is scanned and embedded like any vault, so re-runs reuse
the index. Also sweeps the fusion constants over the same ranked lists.

    python -m benchmarks.scifact [--sweep] [--modes keyword,semantic,hybrid]

nDCG@10 is reported for the tuning half, the held-out half (see `halves`) and all 300.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from cli_org.db.connect import connect
from cli_org.vault import search as vs
from cli_org.vault.embed import embed_pending
from cli_org.vault.embedders import index_embedder, query_embedder
from cli_org.vault.scan import scan

from .common import SHARED, WORK, bench_settings, median, ndcg_at, percentile, recall_at

DATA = SHARED / "scifact"


def write_vault() -> None:
    vault = WORK / "scifact-vault"
    vault.mkdir(parents=True, exist_ok=True)
    for line in (DATA / "corpus.jsonl").open():
        doc = json.loads(line)
        path = vault / f"{doc['_id']}.md"
        text = f"# {doc['title'].strip() or doc['_id']}\n\n{doc['text'].strip()}\n"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def load_queries() -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in (DATA / "qrels-test.tsv").open():
        qid, doc, score = line.rstrip("\n").split("\t")
        if qid == "query-id":
            continue
        qrels.setdefault(qid, {})[doc] = int(score)
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open()) if q["_id"] in qrels}
    return queries, qrels


def halves(qids: list[str]) -> tuple[list[str], list[str]]:
    """The split of SciFact's 300 test claims, made once before any tuning (issue 13): in the
    order of queries.jsonl, odd positions (1st, 3rd, ...) are the tuning half, even positions
    the held-out half. Constants are chosen on the tuning half only."""
    return qids[0::2], qids[1::2]


def ranked_ids(result) -> list[str]:
    return [h.path.rsplit("/", 1)[-1].removesuffix(".md") for h in result.hits]


def fuse(kw: list[str], sem: list[str], k: int, wk: float, ws: float) -> list[str]:
    score: dict[str, float] = {}
    for rank, doc in enumerate(kw, 1):
        score[doc] = score.get(doc, 0) + wk / (k + rank)
    for rank, doc in enumerate(sem, 1):
        score[doc] = score.get(doc, 0) + ws / (k + rank)
    return sorted(score, key=lambda d: -score[d])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep", action="store_true", help="also sweep the fusion constants")
    parser.add_argument("--modes", default="keyword,semantic,hybrid", help="which shipped modes to run")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"SciFact not found at {DATA}")
    write_vault()
    settings = bench_settings("scifact")
    runs = [m for m in args.modes.split(",") if m]
    with connect(settings) as conn:
        summary = scan(conn, WORK / "scifact-vault", replace=True)
        print("scan:", summary.line(), file=sys.stderr)
        done = embed_pending(
            conn, index_embedder(settings), progress=lambda d, t, _: print(f"\rembed {d}/{t}", end="", file=sys.stderr)
        )
        print("\nembed:", done.line(), file=sys.stderr)
        embedder, _ = query_embedder(settings)
        queries, qrels = load_queries()
        lists: dict[str, dict[str, list[str]]] = {name: {} for name in runs}
        times: dict[str, list[float]] = {name: [] for name in runs}
        for qid, text in queries.items():
            for name in runs:
                started = time.perf_counter()
                result = vs.search(conn, text, mode=name, limit=100, embedder=embedder, depth=200)
                times[name].append((time.perf_counter() - started) * 1000)
                lists[name][qid] = ranked_ids(result)
    tune, test = halves(list(queries))
    rows = []
    for name, ranked in lists.items():

        def nd(qids: list[str], ranked=ranked) -> float:
            return round(sum(ndcg_at(ranked[q], qrels[q]) for q in qids) / len(qids), 4)

        rc = sum(recall_at(ranked[q], qrels[q]) for q in queries) / len(queries)
        rows.append(
            {
                "run": name,
                "ndcg@10 tune": nd(tune),
                "ndcg@10 test (held out)": nd(test),
                "ndcg@10 all": nd(list(queries)),
                "recall@100": round(rc, 4),
                "p50_ms": round(median(times[name]), 1),
                "p95_ms": round(percentile(times[name], 0.95), 1),
            }
        )
    print(json.dumps(rows, indent=2))
    if args.sweep and {"keyword", "semantic"} <= set(lists):
        sweep = []
        for k in (5, 10, 20, 30, 60, 100):
            for ws in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0):
                fused = {q: fuse(lists["keyword"][q], lists["semantic"][q], k, 1.0, ws) for q in tune}
                nd = sum(ndcg_at(fused[q], qrels[q]) for q in tune) / len(tune)
                sweep.append({"k": k, "w_semantic": ws, "ndcg@10 tune": round(nd, 4)})
        print(json.dumps(sorted(sweep, key=lambda r: -r["ndcg@10 tune"])[:15], indent=2))
    out = WORK / "scifact-results.json"
    out.write_text(json.dumps({"rows": rows, "lists": lists}, indent=1))
    print(f"lists saved to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
