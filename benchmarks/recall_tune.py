"""Candidate settings of recall's shaping, each measured through the real recall path on one
half of the sets (the databases `recall_eval` loaded): TIL golden, fact golden, near-topic
and noise questions. Tune on `--half tune`; the test half is read only to report.

    python -m benchmarks.recall_tune --half tune
    python -m benchmarks.recall_tune --half test --only today,chosen
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics

from cli_org.db.connect import connect
from cli_org.evaluation import load_golden, parse_queries, run_golden, run_noise
from cli_org.shaping import FACT_SHAPING, SHAPING
from cli_org.vault.embedders import query_embedder

from .common import bench_settings
from .recall_eval import AGENT, SAMPLE, half

# The fact shaping before i13-facts: no fact leads, every fact held to the unknown-word floor.
BEFORE = dataclasses.replace(
    FACT_SHAPING, unknown_exempt_shared=0, lead_similarity=2.0, lead_beats_vault=False, shared_bonus=0.0
)
OFF = dataclasses.replace(BEFORE, min_similarity=2.0, shared_similarity=2.0)  # no semantic fact passes


# name -> (fact shaping, vault shaping)
def fact(**kw):
    return dataclasses.replace(BEFORE, **kw)


# The vault shaping before the rarity rule and the new order (helper i13-vault): every row
# measured before it runs on this, so the table's rows stay reproducible.
PLAIN = dataclasses.replace(
    SHAPING,
    idf_share=0.0,
    idf_similarity=0.0,
    all_words_similarity=None,
    order_cosine=0.0,
    order_support=0.0,
)


def vault(**kw):
    return dataclasses.replace(PLAIN, **kw)


OLD_VAULT = vault(unknown_similarity=0.0, unknown_needs_foreign=False)  # before issue 13: no unknown-word floor

# Every direction tried (benchmarks/JOURNAL.md, "Recall by meaning"). "f" is the fact pass:
# floors without / with a shared word, z = the second signal of a vector-only fact, u = the
# fact floor for a question holding a word the memory lacks; "v" = that floor for the vault.
CANDIDATES = {
    "today": (OFF, OLD_VAULT),
    "f40/30": (fact(min_similarity=0.40, shared_similarity=0.30, min_z=0.0, unknown_similarity=0.0), OLD_VAULT),
    "f36/30": (fact(min_similarity=0.36, shared_similarity=0.30, min_z=0.0, unknown_similarity=0.0), OLD_VAULT),
    "f34/27": (fact(min_similarity=0.34, shared_similarity=0.27, min_z=0.0, unknown_similarity=0.0), OLD_VAULT),
    "f36/30 gap.1": (
        fact(min_similarity=0.36, shared_similarity=0.30, min_z=0.0, unknown_similarity=0.0, within_best=0.1),
        OLD_VAULT,
    ),
    "f36/30 z3": (fact(min_similarity=0.36, shared_similarity=0.30, min_z=3.0, unknown_similarity=0.0), OLD_VAULT),
    "f34/27 z2 u40": (fact(unknown_similarity=0.40), OLD_VAULT),
    "f34/27 z2 u42": (fact(), OLD_VAULT),
    "f34/27 z2 u45": (fact(unknown_similarity=0.45), OLD_VAULT),
    "f34/27 z2 u42 v35": (fact(), vault(unknown_similarity=0.35)),
    "f34/27 z2 u42 v40 (chosen)": (BEFORE, PLAIN),
    "f34/27 z2 u42 v45": (fact(), vault(unknown_similarity=0.45)),
    "f32/27 z2 u42 v40": (fact(min_similarity=0.32), PLAIN),
    "f34/27 z2 u42 v40, any unknown word": (fact(), vault(unknown_needs_foreign=False)),
    # Ordering facts for MRR (i13-facts): a loose or semantic fact at cosine >= L and z >= Z
    # "leads" (comes before the vault's best note); "x2" = a fact sharing two words with the
    # question is not held to the unknown-word floor.
    "lead40 z2": (fact(lead_similarity=0.40, lead_z=2.0), PLAIN),
    "lead45 z2": (fact(lead_similarity=0.45, lead_z=2.0), PLAIN),
    "lead50 z2": (fact(lead_similarity=0.50, lead_z=2.0), PLAIN),
    "lead45 z3": (fact(lead_similarity=0.45, lead_z=3.0), PLAIN),
    "lead40 z3": (fact(lead_similarity=0.40, lead_z=3.0), PLAIN),
    "x2": (fact(unknown_exempt_shared=2), PLAIN),
    # ">v": a fact leads only when at least as close as the vault's best note.
    "lead40 z2 >v": (fact(lead_similarity=0.40, lead_z=2.0, lead_beats_vault=True), PLAIN),
    "lead35 z2 >v": (fact(lead_similarity=0.35, lead_z=2.0, lead_beats_vault=True), PLAIN),
    "lead30 z2 >v": (fact(lead_similarity=0.30, lead_z=2.0, lead_beats_vault=True), PLAIN),
    "x2 lead40 z2 >v": (fact(unknown_exempt_shared=2, lead_similarity=0.4, lead_z=2.0, lead_beats_vault=True), PLAIN),
    "x2 lead50 z2": (fact(unknown_exempt_shared=2, lead_similarity=0.50, lead_z=2.0), PLAIN),
    # "+b": facts found by meaning ordered by cosine + b per shared word.
    "x2 lead40 z2 >v +.03": (dataclasses.replace(FACT_SHAPING, shared_bonus=0.03), PLAIN),
    "x2 lead40 z2 >v +.05 (chosen)": (FACT_SHAPING, PLAIN),
    "x2 lead40 z2 >v +.08": (dataclasses.replace(FACT_SHAPING, shared_bonus=0.08), PLAIN),
    # Dropped, the setting removed (commit 984d92b has it): "one lead", "two leads" (a cap).
    # The vault's second signal (issue 13, helper i13-vault): "idf X" = keyword support also
    # when the shared words carry X of the query's summed idf;
    # "ord cN/sM" = kept hits ordered by fused score + N * cosine + M * coverage.
    **{f"idf {x}": (BEFORE, vault(idf_share=x)) for x in (0.3, 0.4, 0.5, 0.6)},
    # "idf X cY": the rarity rule asks a cosine of Y as well (the word count keeps its 0.30).
    **{
        f"idf {x} c{y}": (BEFORE, vault(idf_share=x, idf_similarity=y))
        for x in (0.25, 0.3, 0.35, 0.2, 0.15, 0.1, 0.01)
        for y in (0.45, 0.5, 0.55, 0.6)
    },
    **{
        f"idf 0.25 c0.5 ord c{c}/s{m}": (
            BEFORE,
            vault(idf_share=0.25, idf_similarity=0.5, order_cosine=c, order_support=m),
        )
        for c in (0, 1, 2, 4, 8)
        for m in (0, 0.5, 1, 2)
        if c or m
    },
    # "all Y": a note holding every query word needs only cosine Y.
    **{
        f"idf 0.25 c0.5 all{y}": (BEFORE, vault(idf_share=0.25, idf_similarity=0.5, all_words_similarity=y))
        for y in (0.2, 0.25)
    },
    **{
        f"idf 0.25 c0.5 all0.25 ord c{c}/s{m}": (
            BEFORE,
            vault(idf_share=0.25, idf_similarity=0.5, all_words_similarity=0.25, order_cosine=c, order_support=m),
        )
        for c, m in ((8, 0.5), (8, 1), (12, 0.5), (12, 1), (16, 0.5), (16, 1), (24, 1), (100, 0))
    },
    "vault idf 0.25 c0.5 all0.25 ord c12/s0.5 (chosen)": (BEFORE, SHAPING),
    # Dropped, their settings removed (commit da37494 has them): "idf-only X", "tX" (title
    # words), "kw-first", "ordq".
    # Both kept changes together: the defaults now.
    "facts + vault (the defaults)": (FACT_SHAPING, SHAPING),
}


def evaluate(conn, settings, embedder, which: str) -> dict:
    def golden(name):
        run = run_golden(conn, load_golden(half(name, which)), settings=settings, embedder=embedder)
        tags = {t: f"{f.hit_rate:.3f}/{f.mrr:.3f}" for t, f in run.by_tag.items()}
        return {
            "hit": round(run.overall.hit_rate, 3),
            "mrr": round(run.overall.mrr, 3),
            "chars": run.overall.chars_median,
            "tags": tags,
        }

    def noise(names):
        queries = [q for n in names for q in parse_queries(half(n, which).read_text())]
        res = run_noise(conn, queries, settings=settings, embedder=embedder).queries
        return {
            "answered": sum(1 for r in res if r.hits),
            "of": len(res),
            "mean_hits": round(statistics.mean(r.hits for r in res), 3),
            "which": [r.query for r in res if r.hits][:6],
        }

    return {
        "til": golden("til-golden"),
        "facts": golden("facts-golden"),
        "noise": noise(["til-noise", "noise"]),
        "near": noise(["til-near"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--half", choices=("tune", "test"), default="tune")
    parser.add_argument("--only", help="comma-separated candidate names")
    args = parser.parse_args()
    base = dataclasses.replace(bench_settings("til"), root=str(SAMPLE))
    embedder, _ = query_embedder(base)
    names = args.only.split(",") if args.only else list(CANDIDATES)
    with connect(base, AGENT) as conn:
        for name in names:
            fact, vault = CANDIDATES[name]
            settings = dataclasses.replace(base, fact_shaping=fact, vault_shaping=vault)
            print(
                json.dumps({"candidate": name, "half": args.half, **evaluate(conn, settings, embedder, args.half)}),
                flush=True,
            )


if __name__ == "__main__":
    main()
