"""Measure the sameness judge (cli_org/store/sameness.py, issue 36) on hand-written pairs.

    python -m benchmarks.sameness_eval [--half test|tune|fresh] [--data-dir DIR] [--words] [--json] [--show]

eval/sameness.test.txt (held out: written before tuning, never tuned on), eval/sameness.tune.txt
(the constants were chosen on it) or eval/sameness.fresh.txt (80 pairs written after tuning).
The test half was read once with the first version of the judge (paraphrases 82.5 %,
contradictions 80.0 %, false links 2.1 %); two changes followed, each checked on the tune half
(SAME put in the middle of the tune half's gap, and two different counts contradict only
beside the same word), so it is no longer untouched: the fresh set, written after them, is
the honest figure. Similarities come from the shipped
query model (all-MiniLM-L6-v2, ONNX, as `remember` embeds a fact: vectors.fact_text), read
from the data dir (no download); --words judges with the words alone (similarity None).

Printed for the half, with the issue's targets:
- paraphrases caught: `same` pairs judged same (>= 90 %)
- look-alikes merged: look-alike pairs judged same (<= 2 %)
- contradictions linked: `contradicts` pairs judged contradicts (>= 80 %)
- false links: pairs not labelled contradicts judged contradicts (<= 5 %)
- false merges: `distinct` pairs judged same
and the median time of one judge call (the similarity computed beforehand), in microseconds.
--show lists every pair the judge got wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_org.store.sameness import judge

ROOT = Path(__file__).resolve().parent.parent
HALVES = {
    "test": ROOT / "eval" / "sameness.test.txt",
    "tune": ROOT / "eval" / "sameness.tune.txt",
    "fresh": ROOT / "eval" / "sameness.fresh.txt",
}
LABELS = ("same", "contradicts", "distinct")
TARGETS = {  # issue 36
    "paraphrases_caught": (">=", 0.90),
    "lookalikes_merged": ("<=", 0.02),
    "contradictions_linked": (">=", 0.80),
    "false_links": ("<=", 0.05),
}


@dataclass(frozen=True)
class Pair:
    label: str
    tags: frozenset[str]
    a: str
    b: str


def load(path: Path) -> list[Pair]:
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 4 or fields[0] not in LABELS:
            raise SystemExit(f"{path.name}:{n}: want label<TAB>tags<TAB>text<TAB>text")
        pairs.append(Pair(fields[0], frozenset(fields[1].split(",")), fields[2], fields[3]))
    return pairs


def similarities(pairs: list[Pair], data_dir: Path | None) -> list[float]:
    from cli_org.local.places import data_dir_from
    from cli_org.vault.embedders import model_file, query_model

    model = query_model(model_file(data_dir or data_dir_from(os.environ)))
    if model is None:
        raise SystemExit("no query model: install the weights (see the README) or pass --data-dir")
    a = model.embed([p.a for p in pairs])
    b = model.embed([p.b for p in pairs])
    return [float(x) for x in (a * b).sum(axis=1)]


def measure(pairs: list[Pair], sims: list[float | None]) -> dict[str, Any]:
    """The figures for `pairs` judged with `sims` (None: the words alone)."""
    said: list[str] = []
    micros: list[float] = []
    for pair, sim in zip(pairs, sims, strict=True):
        started = time.perf_counter()
        got = judge(pair.a, pair.b, sim)
        micros.append((time.perf_counter() - started) * 1e6)
        said.append(got.relation if got else "distinct")

    def rate(select: Any, relation: str) -> dict[str, Any]:
        rows = [s for p, s in zip(pairs, said, strict=True) if select(p)]
        hits = sum(1 for s in rows if s == relation)
        return {"hits": hits, "of": len(rows), "rate": round(hits / len(rows), 3) if rows else None}

    figures = {
        "paraphrases_caught": rate(lambda p: p.label == "same", "same"),
        "lookalikes_merged": rate(lambda p: "lookalike" in p.tags, "same"),
        "contradictions_linked": rate(lambda p: p.label == "contradicts", "contradicts"),
        "false_links": rate(lambda p: p.label != "contradicts", "contradicts"),
        "false_merges": rate(lambda p: p.label == "distinct", "same"),
    }
    wrong = [
        {"label": p.label, "said": s, "tags": sorted(p.tags), "similarity": None if x is None else round(x, 3),
         "a": p.a, "b": p.b}
        for p, s, x in zip(pairs, said, sims, strict=True) if s != p.label
    ]  # fmt: skip
    return {
        "pairs": len(pairs),
        **figures,
        "targets_met": {k: _met(figures[k]["rate"], *TARGETS[k]) for k in TARGETS},
        "judge_us_median": round(statistics.median(micros), 1),
        "wrong": wrong,
    }


def _met(rate: float | None, op: str, bar: float) -> bool:
    if rate is None:
        return False
    return rate >= bar if op == ">=" else rate <= bar


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sameness_eval", description=__doc__.split("\n")[0])
    parser.add_argument("--half", choices=sorted(HALVES), default="test")
    parser.add_argument("--data-dir", type=Path, help="where the query model is (default: the user's data dir)")
    parser.add_argument("--words", action="store_true", help="judge with the words alone (no model)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show", action="store_true", help="list the pairs judged wrong")
    args = parser.parse_args(argv)
    pairs = load(HALVES[args.half])
    sims: list[float | None] = [None] * len(pairs) if args.words else list(similarities(pairs, args.data_dir))
    out = {"half": args.half, "similarity": "words only" if args.words else "all-MiniLM-L6-v2", **measure(pairs, sims)}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"sameness judge, {args.half} half ({out['pairs']} pairs), {out['similarity']}")
    for key in (*TARGETS, "false_merges"):
        f = out[key]
        target = f"  target {TARGETS[key][0]} {TARGETS[key][1]:.0%}" if key in TARGETS else ""
        mark = ("  ok" if out["targets_met"][key] else "  MISSED") if key in TARGETS else ""
        print(f"  {key.replace('_', ' '):24s} {f['hits']:3d} / {f['of']:3d} = {f['rate']:.1%}{target}{mark}")
    print(f"  judge call median        {out['judge_us_median']} us")
    if args.show:
        for w in out["wrong"]:
            print(
                f"  [{w['label']} -> {w['said']}] {w['similarity']} {','.join(w['tags'])}\n    {w['a']}\n    {w['b']}"
            )


if __name__ == "__main__":
    main()
