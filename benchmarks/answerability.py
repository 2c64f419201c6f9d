"""Fit the vault arm's answerability gate (issue 13): a logistic model over the question's
profile (`profile` below), trained on the TUNING half only, on the
databases `recall_eval` loaded (read with BENCH_WORK, never reloaded).

    BENCH_WORK=... python -m benchmarks.answerability            # fit on the tuning half
    BENCH_WORK=... python -m benchmarks.answerability --report test  # only scores the test half

Answerable: `til-golden` and `facts-golden`; unanswerable: `til-near`, `til-noise`, `noise`.
(The sample's `golden` asks about the sample's vault, which this database does not hold.)
Prints the coefficients in the features' own units and, per threshold, what the gate would
cost and save on the half: answerable questions whose right note the vault arm returned and
would lose, and the vault hits of unanswerable questions it would remove. Measured and not
kept: held out, the gate never beat the unknown-word floor (benchmarks/RESULTS.md, "Recall by
meaning"); the library code that applied it is in the history (commit 369e2db).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from dataclasses import dataclass

import numpy as np

from cli_org.db.connect import connect
from cli_org.db.queries import sql
from cli_org.evaluation import load_golden, parse_queries
from cli_org.recall.answer import _QueryOnce, foreign_terms
from cli_org.recall.terms import positive_words
from cli_org.recall.vault_arm import shape
from cli_org.shaping import SHAPING
from cli_org.vault.embedders import query_embedder, vector_literal
from cli_org.vault.search import NoteHit, search

from .common import bench_settings
from .recall_eval import AGENT, SAMPLE, half

DEEP = 100
FEATURES = ("best", "z", "gap", "agreement", "coverage", "unknown")
LIMIT = 8


@dataclass(frozen=True)
class QueryProfile:
    """What a question's vault candidates say about whether the vault can answer it at all
    (query-performance prediction), read from the hybrid search's candidates."""

    best: float  # the best cosine among the candidates
    z: float  # how far the best cosine stands above the candidates' own (mean, spread)
    gap: float  # best cosine minus the GAP_RANK-th best
    agreement: float  # share of the keyword side's top notes that the vector side also ranks top
    coverage: float  # the largest share of the question's words one candidate holds
    unknown: bool  # the question names a word the memory has never seen


PROFILE_TOP = 5  # agreement: the two sides' top this-many notes
GAP_RANK = 8  # gap: the best cosine against the this-many-th (recall asks for 2 x limit = 16 candidates)


def profile(hits: list[NoteHit], unknown: bool) -> QueryProfile | None:
    """The question's profile from its hybrid candidates (None without vectors): the
    candidates are the question's own background of similarities, so a flat profile (best
    barely above the rest) says the vault holds nothing in particular about it."""
    cosines = sorted((h.semantic_score for h in hits if h.semantic_score is not None), reverse=True)
    if len(cosines) < 2:
        return None
    mean = sum(cosines) / len(cosines)
    spread = (sum((c - mean) ** 2 for c in cosines) / len(cosines)) ** 0.5
    top_kw = {h.file_id for h in hits if h.keyword_rank is not None and h.keyword_rank <= PROFILE_TOP}
    top_se = {h.file_id for h in hits if h.semantic_rank is not None and h.semantic_rank <= PROFILE_TOP}
    return QueryProfile(
        best=cosines[0],
        z=(cosines[0] - mean) / spread if spread else 0.0,
        gap=cosines[0] - cosines[min(GAP_RANK, len(cosines)) - 1],
        agreement=len(top_kw & top_se) / PROFILE_TOP,
        coverage=max((h.matched_terms / h.query_terms for h in hits if h.query_terms), default=0.0),
        unknown=unknown,
    )


def rows(conn, embedder, which: str) -> list[dict]:
    cases: list[tuple[str, str | None, str]] = []
    for name in ("til-golden", "facts-golden"):
        cases += [
            (c.question, c.expected if name == "til-golden" else None, name) for c in load_golden(half(name, which))
        ]
    for name in ("til-near", "til-noise", "noise"):
        cases += [(q, None, name) for q in parse_queries(half(name, which).read_text())]
    out = []
    once = _QueryOnce(embedder)
    for question, expected, name in cases:
        wanted = " ".join(positive_words(question))
        unknown = bool(foreign_terms(conn, wanted, once, SHAPING))
        hits = search(conn, wanted, mode="hybrid", limit=LIMIT * 2, embedder=once).hits
        deep = background(conn, once, wanted)
        p = profile(hits, unknown)
        kept = shape(hits, limit=LIMIT, shaping=SHAPING, unknown=unknown)
        plain = shape(hits, limit=LIMIT, shaping=SHAPING, unknown=False)  # without the unknown-word floor
        out.append(
            {
                "set": name,
                "question": question,
                "label": 1 if name in ("til-golden", "facts-golden") else 0,
                "features": [float(getattr(p, f)) for f in FEATURES] if p else None,
                "vault_hits": len(kept),
                "vault_right": bool(expected) and any(expected in v.hit.path for v in kept),
                "deep": deep,
                "plain_hits": len(plain),
                "plain_right": bool(expected) and any(expected in v.hit.path for v in plain),
            }
        )
    return out


def background(conn, embedder, query: str) -> dict:
    """The brief's deeper background: the best cosine against the top DEEP notes of the vector
    index (z-score and gap), an extra query recall would have to make; measured beside the
    candidates-only profile to see whether it separates better."""
    vector = vector_literal(embedder.embed([query])[0])
    with conn.transaction():
        conn.execute("SELECT set_config('hnsw.ef_search', '300', true)")
        rows = conn.execute(sql("search.dense"), {"vector": vector, "limit": DEEP * 3, "exclude": [], "private": False})
        best: dict[int, float] = {}
        for r in rows:
            best[r["file_id"]] = max(best.get(r["file_id"], -1.0), float(r["similarity"]))
    sims = np.array(sorted(best.values(), reverse=True)[:DEEP])
    return {
        "z100": float((sims[0] - sims.mean()) / sims.std()) if sims.std() else 0.0,
        "gap10": float(sims[0] - sims[min(9, len(sims) - 1)]),
        "gap100": float(sims[0] - sims[-1]),
    }


def auc(pos: list[float], neg: list[float]) -> float:
    """The chance an answerable question scores above an unanswerable one (ties half)."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton's method on standardised features, with an L2 penalty
    (not on the intercept); returns the weights and intercept in the features' own units."""
    mean, spread = x.mean(axis=0), x.std(axis=0)
    spread[spread == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / spread])
    w = np.zeros(z.shape[1])
    penalty = np.eye(z.shape[1]) * l2
    penalty[0, 0] = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ w))
        grad = z.T @ (p - y) + penalty @ w
        hess = z.T @ (z * (p * (1 - p))[:, None]) + penalty
        w -= np.linalg.solve(hess, grad)
    weights = w[1:] / spread
    return weights, float(w[0] - (weights * mean).sum())


def table(data: list[dict], score, floor: bool = True) -> None:
    """Per threshold: right vault answers lost, unanswerable questions' vault hits left; with
    the unknown-word floor (as today) or without it (the gate instead of the floor)."""
    if not floor:
        data = [{**r, "vault_hits": r["plain_hits"], "vault_right": r["plain_right"]} for r in data]
    print("with the unknown-word floor" if floor else "without the unknown-word floor")
    scored = [(score(r), r) for r in data if r["features"]]
    base_right = sum(r["vault_right"] for r in data)
    base_bad = sum(r["vault_hits"] for r in data if not r["label"])
    print(f"  without the gate: {base_right} right vault answers; {base_bad} vault hits on unanswerable questions")
    for t in (-3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0):
        lost = [r for s, r in scored if s < t and r["vault_right"]]
        left = sum(r["vault_hits"] for s, r in scored if s >= t and not r["label"])
        near = [r for s, r in scored if r["set"] == "til-near"]
        near_left = sum(r["vault_hits"] for s, r in scored if s >= t and r["set"] == "til-near")
        print(
            f"  threshold {t:+.1f}: right answers lost {len(lost)} {[r['question'][:40] for r in lost][:4]}; "
            f"unanswerable vault hits left {left}; near-topic mean vault hits {near_left / max(1, len(near)):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", choices=("tune", "test"), default="tune")
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--weights", help="JSON list: intercept then the weights (score a half with them)")
    args = parser.parse_args()
    base = dataclasses.replace(bench_settings("til"), root=str(SAMPLE))
    embedder, _ = query_embedder(base)
    with connect(base, AGENT) as conn:
        data = rows(conn, embedder, args.report)
    usable = [r for r in data if r["features"]]
    x = np.array([r["features"] for r in usable])
    y = np.array([r["label"] for r in usable], dtype=float)
    print(f"{args.report} half: {len(usable)} questions ({int(y.sum())} answerable)")
    for i, f in enumerate(FEATURES):
        a, u = x[y == 1, i], x[y == 0, i]
        print(
            f"  {f:10} answerable median {statistics.median(a):.3f}   unanswerable median {statistics.median(u):.3f}"
            f"   AUC {auc(list(a), list(u)):.3f}"
        )
    for f in ("z100", "gap10", "gap100"):
        a = [r["deep"][f] for r in usable if r["label"]]
        u = [r["deep"][f] for r in usable if not r["label"]]
        print(
            f"  {f:10} answerable median {statistics.median(a):.3f}   unanswerable median {statistics.median(u):.3f}"
            f"   AUC {auc(a, u):.3f}  (top {DEEP} of the vector index; not in the model)"
        )
    if args.weights:
        given = json.loads(args.weights)
        intercept, weights = given[0], np.array(given[1:])
    else:
        if args.report != "tune":
            raise SystemExit("fit on the tuning half only; pass --weights to score the test half")
        weights, intercept = fit(x, y, args.l2)
        print("fitted (features' own units): intercept", round(intercept, 3))
        for f, w in zip(FEATURES, weights, strict=True):
            print(f"  {f:10} {w:+.3f}")
        print("  as --weights:", json.dumps([round(intercept, 3), *[round(float(w), 3) for w in weights]]))

    def score(r):
        return intercept + float(np.dot(weights, r["features"]))

    model_auc = auc([score(r) for r in usable if r["label"]], [score(r) for r in usable if not r["label"]])
    til = [r for r in usable if r["set"] == "til-golden"]
    near = [r for r in usable if r["set"] == "til-near"]
    print(
        f"model AUC {model_auc:.3f}; TIL golden against near-topic only:",
        ", ".join(
            f"{f} {auc([r['features'][i] for r in til], [r['features'][i] for r in near]):.3f}"
            for i, f in enumerate(FEATURES)
        ),
        f"gap100 {auc([r['deep']['gap100'] for r in til], [r['deep']['gap100'] for r in near]):.3f}",
        f"model {auc([score(r) for r in til], [score(r) for r in near]):.3f}",
    )
    table(data, score)
    table(data, score, floor=False)
    for name in ("til-golden", "facts-golden", "til-near", "til-noise", "noise"):
        got = sorted(score(r) for r in data if r["set"] == name and r["features"])
        print(
            f"  score {name:12} min {got[0]:+.2f} p10 {got[len(got) // 10]:+.2f}"
            f" median {statistics.median(got):+.2f} max {got[-1]:+.2f}"
        )
    right = sorted((score(r), r["question"][:50]) for r in data if r["plain_right"])[:5]
    print("  lowest-scoring right vault answers:", right)
    bad = sorted(
        ((score(r), r["plain_hits"], r["question"][:50]) for r in data if not r["label"] and r["plain_hits"]),
        reverse=True,
    )
    print("  unanswerable questions with vault hits (no unknown floor), best score first:", bad)
    for f in ("best", "z", "gap"):  # the hand-set single-feature gates beside the model
        i = FEATURES.index(f)
        low = min((r["features"][i] for r in usable if r["plain_right"]), default=None)
        bad = sorted((round(r["features"][i], 3) for r in usable if not r["label"] and r["plain_hits"]), reverse=True)
        print(f"single feature {f}: lowest among right vault answers {low:.3f}; unanswerable with vault hits {bad}")


if __name__ == "__main__":
    main()
