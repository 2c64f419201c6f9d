"""Choose the hybrid fusion weight by measurement, through the real search code: SciFact
(long technical claims, nDCG@10) and the TIL golden set (paraphrased questions, MRR@10).
`SearchTuning.keyword_weight` is the keyword share when the best note holds every query
word; 0 is semantic alone, and 1.0 still leans on meaning when the words are only partly
matched.

    python -m benchmarks.fusion
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from cli_org.db.connect import connect
from cli_org.evaluation import load_golden
from cli_org.vault import search as vs
from cli_org.vault.embedders import query_embedder

from .common import bench_settings, eval_halves, ndcg_at
from .scifact import load_queries

WEIGHTS = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


def main() -> None:
    queries, qrels = load_queries()
    cases = [c for f in eval_halves("til-golden") for c in load_golden(f)]
    sets = {"scifact": bench_settings("scifact"), "til": bench_settings("til")}
    embedders = {name: query_embedder(s)[0] for name, s in sets.items()}
    rows = []
    for weight in WEIGHTS:
        tuning = replace(vs.TUNING, keyword_weight=weight)
        with connect(sets["scifact"]) as conn:
            nd = []
            for qid, text in queries.items():
                hits = vs.search(conn, text, mode="hybrid", limit=10, embedder=embedders["scifact"], tuning=tuning).hits
                nd.append(ndcg_at([h.path.removesuffix(".md") for h in hits], qrels[qid]))
        with connect(sets["til"]) as conn:
            ranks = []
            for case in cases:
                hits = vs.search(
                    conn, case.question, mode="hybrid", limit=10, embedder=embedders["til"], tuning=tuning
                ).hits
                ranks.append(next((i for i, h in enumerate(hits, 1) if case.expected in h.path), None))
        rows.append(
            {
                "keyword_weight": weight,
                "scifact_ndcg@10": round(sum(nd) / len(nd), 4),
                "til_hit@10": round(sum(1 for r in ranks if r) / len(ranks), 3),
                "til_mrr@10": round(sum(1 / r for r in ranks if r) / len(ranks), 3),
            }
        )
        print(rows[-1], file=sys.stderr)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
