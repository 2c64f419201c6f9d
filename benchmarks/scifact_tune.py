"""SciFact fusion research (issue 13): explore ranking variants in memory, on the tuning half.

Reads the index `benchmarks.scifact` built (database bench_scifact) once: every posting, every
chunk vector, the title words of every note, and the 300 claims' words and vectors. Then it
scores each variant over the whole corpus in memory (exact BM25 and exact cosine, as the
search code computes them) so dozens of variants take seconds. This is only the explorer:
a variant worth keeping is then put into `cli_org/vault/search.py` (a `SearchTuning` field)
and measured through the real search code by `python -m benchmarks.scifact`, which reports
the tuning half, the held-out half and all 300 claims.

    BENCH_WORK=... python -m benchmarks.scifact_tune [--half tune|test|all] [--only a,b]

Split rule (written before any tuning, the same as `benchmarks.scifact.halves`): claims in
the order of queries.jsonl; odd positions (1st, 3rd, ...) are the tuning half, even
positions the held-out half.
"""

from __future__ import annotations

import argparse
import math
import pickle
from collections import Counter, defaultdict
from collections.abc import Callable

import numpy as np

from cli_org.db.connect import connect
from cli_org.vault.embedders import query_embedder

from .common import WORK, bench_settings, ndcg_at
from .scifact import halves, load_queries

CACHE = WORK / "scifact-tune.pickle"
K1, B = 0.9, 0.4


def load() -> dict:
    if CACHE.exists():
        return pickle.loads(CACHE.read_bytes())
    settings = bench_settings("scifact")
    queries, qrels = load_queries()
    with connect(settings) as conn:
        files = {
            r["id"]: r["path"].rsplit("/", 1)[-1].removesuffix(".md")
            for r in conn.execute("SELECT id, path FROM vault_files")
        }
        post: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
        for r in conn.execute("SELECT term, file_id, tf, dl FROM vault_postings"):
            post[r["term"]].append((r["file_id"], r["tf"], r["dl"]))
        titles = {
            r["id"]: set(r["words"] or [])
            for r in conn.execute(
                "SELECT id, (SELECT array_agg(lexeme) FROM unnest(to_tsvector('english', title))) AS words"
                " FROM vault_files"
            )
        }
        qterms = {
            q: [
                r["lexeme"]
                for r in conn.execute("SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))", (t,))
            ]
            for q, t in queries.items()
        }
        rows = conn.execute(
            "SELECT file_id, embedding::text AS e FROM vault_chunks WHERE embedding IS NOT NULL"
        ).fetchall()
        chunk_file = np.array([r["file_id"] for r in rows])
        chunk_vec = np.array([np.fromstring(r["e"][1:-1], sep=",", dtype=np.float32) for r in rows])
        embedder, _ = query_embedder(settings)
        assert embedder is not None
        qids = list(queries)
        qvec = dict(zip(qids, embedder.embed([queries[q] for q in qids]), strict=True))
        embedder.close()
    data = dict(
        queries=queries,
        qrels=qrels,
        files=files,
        post=dict(post),
        titles=titles,
        qterms=qterms,
        chunk_file=chunk_file,
        chunk_vec=chunk_vec,
        qvec=qvec,
    )
    CACHE.write_bytes(pickle.dumps(data))
    return data


class Index:
    def __init__(self, d: dict):
        self.d = d
        self.ids = sorted(d["files"])
        self.pos = {f: i for i, f in enumerate(self.ids)}
        self.n = len(self.ids)
        dl = np.zeros(self.n)
        for plist in d["post"].values():
            for f, _tf, length in plist:
                dl[self.pos[f]] = length
        self.avgdl = max(dl.mean(), 1.0)
        self.cf = np.array([self.pos[f] for f in d["chunk_file"]])
        self.title_words = d["titles"]

    def idf(self, term: str) -> float:
        df = len(self.d["post"].get(term, ()))
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    k1, b = K1, B

    def bm25(self, weights: dict[str, float], title_boost: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """BM25 of every note for weighted terms; title_boost adds that many extra occurrences
        of a term that is in the note's title (a BM25F-like field weight)."""
        score, matched = np.zeros(self.n), np.zeros(self.n)
        for term, w in weights.items():
            idf = self.idf(term)
            for f, tf, length in self.d["post"].get(term, ()):
                t = tf + (title_boost if title_boost and term in self.title_words[f] else 0)
                k1, b = self.k1, self.b
                score[self.pos[f]] += w * idf * t * (k1 + 1) / (t + k1 * (1 - b + b * length / self.avgdl))
                matched[self.pos[f]] += 1
        return score, matched

    def cosine(self, vec: np.ndarray, mix: float = 0.0) -> np.ndarray:
        """Best chunk similarity per note; with mix, plus mix times the mean over its chunks."""
        sims = self.d["chunk_vec"] @ vec
        best = np.full(self.n, -1.0)
        np.maximum.at(best, self.cf, sims)
        if mix:
            total, count = np.zeros(self.n), np.zeros(self.n)
            np.add.at(total, self.cf, sims)
            np.add.at(count, self.cf, 1)
            best = best + mix * total / np.maximum(count, 1)
        return best


def zscore(x: np.ndarray, basis: np.ndarray) -> np.ndarray:
    v = x[basis]
    sd = v.std()
    return (x - v.mean()) / sd if sd else np.zeros_like(x)


def minmax(x: np.ndarray, basis: np.ndarray) -> np.ndarray:
    v = x[basis]
    lo, hi = v.min(), v.max()
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def top(x: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-x, kind="stable")[:k]


def ranks_of(x: np.ndarray) -> np.ndarray:
    r = np.empty(len(x), dtype=int)
    r[np.argsort(-x, kind="stable")] = np.arange(1, len(x) + 1)
    return r


Variant = Callable[["Index", str], np.ndarray]


def hybrid(
    kw_weight: float = 0.7,
    stats_depth: int = 30,
    pool: int = 200,
    norm: str = "z",
    coverage: bool = True,
    title_boost: float = 0.0,
    rm3: tuple[int, int, float] | None = None,
    rocchio: tuple[int, float] | None = None,
    agree: float = 0.0,
    cov_power: float = 1.0,
    sem_mix: float = 0.0,
    idf_cov: bool = False,
    cov_cap: int = 0,
    long_from: int = 0,
    prf_fused: tuple[int, float] | None = None,
    prf_agree: int = 0,
) -> Variant:
    def run(ix: Index, q: str) -> np.ndarray:
        terms = ix.d["qterms"][q]
        kw, matched = ix.bm25({t: 1.0 for t in terms}, title_boost)
        qv = ix.d["qvec"][q]
        se = ix.cosine(qv, sem_mix)
        if rocchio:
            k, beta = rocchio
            best = top(se, k)
            centroid = np.zeros_like(qv)
            for i in best:
                vecs = ix.d["chunk_vec"][ix.cf == i]
                centroid += vecs[np.argmax(vecs @ qv)]
            v = qv + beta * centroid / k
            se = ix.cosine(v / np.linalg.norm(v))
        if rm3:
            k, nterms, lam = rm3
            fb: Counter = Counter()
            for i in top(kw, k):
                f = ix.ids[i]
                for t, tf, length in ix.doc_index[f]:
                    fb[t] += tf / length * ix.idf(t)
            exp = {t: w for t, w in fb.most_common(nterms + len(terms)) if t not in terms}
            exp = dict(list(exp.items())[:nterms])
            total = sum(exp.values()) or 1.0
            weights = {t: lam / len(terms) for t in terms} if terms else {}
            for t, w in exp.items():
                weights[t] = weights.get(t, 0) + (1 - lam) * w / total
            scale = len(terms) / lam if terms else 1.0
            kw, _ = ix.bm25({t: w * scale for t, w in weights.items()}, title_boost)
        kr, sr = ranks_of(kw), ranks_of(se)
        cand = (kr <= pool) | (sr <= pool)
        basis = np.flatnonzero((kr <= stats_depth) | (sr <= stats_depth))
        if norm == "rrf":
            score = kw_weight / (60 + kr) + (1 - kw_weight) / (60 + sr)
        else:
            nf = zscore if norm == "z" else minmax
            a = kw_weight
            if coverage:
                nt = len(terms)
                cov = float((matched[cand] / nt).max()) if nt else 0.0
                if cov_cap and nt:
                    cov = min(1.0, float(matched[cand].max()) / min(nt, cov_cap))
                if idf_cov and nt:
                    idfs = {t: ix.idf(t) for t in terms}
                    mass = np.zeros(ix.n)
                    for t, w in idfs.items():
                        for f, _tf, _dl in ix.d["post"].get(t, ()):
                            mass[ix.pos[f]] += w
                    cov = float(mass[cand].max()) / sum(idfs.values())
                a = kw_weight * cov ** (cov_power if nt >= long_from else 1.0)
            score = a * nf(kw, basis) + (1 - a) * nf(se, basis)
            if agree:
                score = score + agree * np.minimum(nf(kw, basis), nf(se, basis))
        score = np.where(cand, score, -np.inf)
        if prf_fused and (
            not prf_agree or all(kr[i] <= prf_agree and sr[i] <= prf_agree for i in top(score, prf_fused[0]))
        ):
            k, beta = prf_fused
            centroid = np.zeros_like(qv)
            for i in top(score, k):
                vecs = ix.d["chunk_vec"][ix.cf == i]
                centroid += vecs[np.argmax(vecs @ qv)]
            v = qv + beta * centroid / k
            ix2 = ix.d["qvec"]
            saved = ix2[q]
            ix2[q] = v / np.linalg.norm(v)
            try:
                return hybrid(kw_weight, stats_depth, pool, norm, coverage, title_boost, cov_power=cov_power)(ix, q)
            finally:
                ix2[q] = saved
        return score

    return run


def evaluate(ix: Index, variant: Variant, qids: list[str]) -> float:
    total = 0.0
    for q in qids:
        ranked = [ix.d["files"][ix.ids[i]] for i in top(variant(ix, q), 10)]
        total += ndcg_at(ranked, ix.d["qrels"][q])
    return total / len(qids)


def keyword_only(title_boost: float = 0.0) -> Variant:
    return lambda ix, q: ix.bm25({t: 1.0 for t in ix.d["qterms"][q]}, title_boost)[0]


def semantic_only() -> Variant:
    return lambda ix, q: ix.cosine(ix.d["qvec"][q])


CANDIDATES: dict[str, Variant] = {
    "keyword": keyword_only(),
    "semantic": semantic_only(),
    "today (z, a=0.7*cov, depth 30)": hybrid(),
}
for w in (0.5, 0.6, 0.8, 0.9):
    CANDIDATES[f"z a={w}*cov"] = hybrid(kw_weight=w)
for d in (10, 20, 50, 100, 200):
    CANDIDATES[f"z depth {d}"] = hybrid(stats_depth=d)
for w in (0.3, 0.4, 0.5):
    CANDIDATES[f"z a={w} fixed"] = hybrid(kw_weight=w, coverage=False)
for w in (0.5, 0.6, 0.7, 0.8):
    CANDIDATES[f"minmax a={w}*cov"] = hybrid(kw_weight=w, norm="minmax")
for w in (0.4, 0.5, 0.6):
    CANDIDATES[f"rrf wk={w}"] = hybrid(kw_weight=w, norm="rrf")
for p in (0.5, 2.0):
    CANDIDATES[f"z cov^{p}"] = hybrid(cov_power=p)
for ag in (0.1, 0.2, 0.3, 0.5):
    CANDIDATES[f"z agree {ag}"] = hybrid(agree=ag)
for tb in (1, 2, 3, 5):
    CANDIDATES[f"title +{tb}"] = hybrid(title_boost=tb)
    CANDIDATES[f"keyword title +{tb}"] = keyword_only(tb)
for k, beta in ((3, 0.5), (5, 0.5), (5, 1.0), (10, 0.5), (3, 1.0)):
    CANDIDATES[f"rocchio {k}/{beta}"] = hybrid(rocchio=(k, beta))
for m in (0.25, 0.5, 1.0):
    CANDIDATES[f"sem max+{m}*mean"] = hybrid(sem_mix=m)
for w in (0.5, 0.6, 0.7, 0.8):
    for p in (0.25, 0.5, 0.75):
        CANDIDATES[f"grid a={w}*cov^{p}"] = hybrid(kw_weight=w, cov_power=p)
for extra, kw in (
    ("agree 0.2", dict(agree=0.2)),
    ("title +3", dict(title_boost=3)),
    ("rocchio 3/0.5", dict(rocchio=(3, 0.5))),
    ("depth 200", dict(stats_depth=200)),
):
    CANDIDATES[f"combo cov^0.5 {extra}"] = hybrid(cov_power=0.5, **kw)  # type: ignore[arg-type]
for w in (0.6, 0.7, 0.8):
    for p in (0.5, 1.0):
        CANDIDATES[f"idfcov a={w}*cov^{p}"] = hybrid(kw_weight=w, cov_power=p, idf_cov=True)
for w in (0.6, 0.7, 0.8):
    for cap in (5, 6, 8, 10):
        CANDIDATES[f"covcap a={w} cap {cap}"] = hybrid(kw_weight=w, cov_cap=cap)
for p in (0.5, 0.25):
    for long in (6, 7, 8, 10):
        CANDIDATES[f"long a=0.7*cov^{p} from {long} terms"] = hybrid(cov_power=p, long_from=long)
for k in (1, 2, 3, 5):
    for beta in (0.25, 0.5, 1.0):
        CANDIDATES[f"prf fused {k}/{beta}"] = hybrid(prf_fused=(k, beta))
for k, beta in ((1, 0.5), (2, 0.5), (2, 1.0)):
    for r in (1, 3, 5, 10):
        CANDIDATES[f"prf agree {k}/{beta} ranks<={r}"] = hybrid(prf_fused=(k, beta), prf_agree=r)
for k, n, lam in ((5, 10, 0.7), (10, 10, 0.7), (5, 20, 0.6), (10, 20, 0.8), (3, 10, 0.8)):
    CANDIDATES[f"rm3 {k}/{n}/{lam}"] = hybrid(rm3=(k, n, lam))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--half", choices=("tune", "test", "all"), default="tune")
    parser.add_argument("--k1", type=float, default=K1)
    parser.add_argument("--b", type=float, default=B)
    parser.add_argument("--only", default="", help="comma-separated candidate names (prefix match)")
    args = parser.parse_args()
    d = load()
    ix = Index(d)
    ix.k1, ix.b = args.k1, args.b
    ix.doc_index = defaultdict(list)  # type: ignore[attr-defined]
    for t, plist in d["post"].items():
        for f, tf, length in plist:
            ix.doc_index[f].append((t, tf, length))  # type: ignore[attr-defined]
    tune, test = halves(list(d["queries"]))
    qids = {"tune": tune, "test": test, "all": list(d["queries"])}[args.half]
    wanted = [w for w in args.only.split(",") if w]
    for name, variant in CANDIDATES.items():
        if wanted and not any(name.startswith(w) for w in wanted):
            continue
        print(f"{name:40s} {args.half} nDCG@10 {evaluate(ix, variant, qids):.4f}", flush=True)


if __name__ == "__main__":
    main()
