"""The TIL golden set through vault search: hit@10 and MRR per mode and per tag.

Shows whether the fusion serves paraphrased questions as well as dense search alone.

    python -m benchmarks.til_search
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

from cli_org.db.connect import connect
from cli_org.evaluation import load_golden
from cli_org.vault import search as vs
from cli_org.vault.embed import embed_pending
from cli_org.vault.embedders import index_embedder, query_embedder
from cli_org.vault.scan import scan

from .common import SHARED, bench_settings, eval_halves

MODES = ("keyword", "semantic", "hybrid")


def first_hit(paths: list[str], expected: str) -> int | None:
    return next((i for i, p in enumerate(paths, 1) if expected.lower() in p.lower()), None)


def til_index():
    settings = bench_settings("til")
    with connect(settings) as conn:
        print("scan:", scan(conn, SHARED / "til", replace=True).line(), file=sys.stderr)
        print("embed:", embed_pending(conn, index_embedder(settings)).line(), file=sys.stderr)
    return settings


def summarise(ranks: list[int | None]) -> dict:
    n = len(ranks)
    return {
        "n": n,
        "hit@10": round(sum(1 for r in ranks if r) / n, 3),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 3),
    }


def main() -> None:
    cases = [c for f in eval_halves("til-golden") for c in load_golden(f)]
    settings = til_index()
    embedder, _ = query_embedder(settings)
    ranks: dict[str, dict[str, list]] = {m: defaultdict(list) for m in MODES}
    with connect(settings) as conn:
        for case in cases:
            for mode in MODES:
                result = vs.search(conn, case.question, mode=mode, limit=10, embedder=embedder)
                rank = first_hit([h.path for h in result.hits], case.expected)
                ranks[mode][case.tag].append(rank)
                ranks[mode]["all"].append(rank)
    table = [{"mode": m, "tag": tag, **summarise(r)} for m in MODES for tag, r in sorted(ranks[m].items())]
    print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
