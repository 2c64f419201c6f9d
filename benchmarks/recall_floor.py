"""Measure what separates noise from answers in the vault arm of recall.

For the TIL golden set (answers) and the TIL noise set (no answer), takes the hybrid
candidates recall sees, then replays the shaping rules with different keyword-support
thresholds and similarity floors: how many noise queries still return something, and what
hit@8 and MRR the answers keep.

    python -m benchmarks.recall_floor
"""

from __future__ import annotations

import json

from cli_org.db.connect import connect
from cli_org.evaluation import load_golden, parse_queries
from cli_org.recall import vault_arm
from cli_org.recall.vault_arm import exclusions
from cli_org.shaping import VaultShaping
from cli_org.vault.embedders import query_embedder
from cli_org.vault.search import search

from .common import bench_settings, eval_halves

LIMIT = 8


def shaped_paths(hits, fraction: float, floor: float, keyword_floor: float, cap: int = 99) -> list[str]:
    shaping = VaultShaping(
        min_similarity=floor, keyword_similarity=keyword_floor, share_needed=fraction, max_shared_words=cap
    )
    return [v.hit.path for v in vault_arm.shape(hits, limit=LIMIT, shaping=shaping)]


def main() -> None:
    settings = bench_settings("til")
    embedder, _ = query_embedder(settings)
    golden = [c for f in eval_halves("til-golden") for c in load_golden(f)]
    noise = [q for n in ("til-near", "til-noise") for f in eval_halves(n) for q in parse_queries(f.read_text())]
    with connect(settings) as conn:

        def candidates(q):
            return search(conn, q, mode="hybrid", limit=LIMIT * 2, embedder=embedder, exclude=exclusions([])).hits

        pos = [(c, candidates(c.question)) for c in golden]
        neg = [(q, candidates(q)) for q in noise]
    print("noise queries, best candidates (matched/terms, similarity):")
    for q, hits in neg:
        best = max(hits, key=lambda h: h.matched_terms / max(1, h.query_terms), default=None)
        top_sim = max((h.semantic_score or 0 for h in hits), default=0)
        print(
            f"  {q[:60]:<60} kw {best.matched_terms if best else 0}/{best.query_terms if best else 0}"
            f"  max sim {top_sim:.3f}"
        )
    grid = [
        (f, v, k, 99) for f in (0.34, 0.4, 0.5) for v in (0.3, 0.35, 0.4, 0.45) for k in (0.0, 0.3, 0.33, 0.36, 0.45)
    ]
    grid += [(0.5, v, k, cap) for cap in (2, 3, 4) for v in (0.35, 0.4) for k in (0.3, 0.35, 0.4)]
    for fraction, floor, keyword_floor, cap in grid:
        noisy = sum(1 for _, hits in neg if shaped_paths(hits, fraction, floor, keyword_floor, cap))
        ranks = []
        for case, hits in pos:
            paths = shaped_paths(hits, fraction, floor, keyword_floor, cap)
            ranks.append(next((i for i, p in enumerate(paths, 1) if case.expected in p), None))
        print(
            json.dumps(
                {
                    "keyword_fraction": fraction,
                    "at_most_words": cap,
                    "vector_only_floor": floor,
                    "keyword_floor": keyword_floor,
                    "noise_answered": f"{noisy}/{len(neg)}",
                    "hit@8": round(sum(1 for r in ranks if r) / len(ranks), 3),
                    "mrr": round(sum(1 / r for r in ranks if r) / len(ranks), 3),
                }
            )
        )


if __name__ == "__main__":
    main()
