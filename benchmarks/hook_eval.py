"""The prompt hook on its two sets, both halves: the quiet rate on everyday instructions
(eval/hook-quiet.*) and the needed-fact rate on task prompts that need a team fact
(eval/hook-needed.*), with the median characters of an injection. Each prompt goes through
the hook's own call (cli_org.evaluation.run_hook), as the agent `mara`, with no session.

Two databases: the sample with the Halyard team, as CI loads them, and the TIL vault with
both fact files beside it, as recall_eval loads it (the realistic one: a vault of notes on
everyday tools is what a hook wrongly injects on everyday instructions).

    python -m benchmarks.hook_eval            # load both databases, then measure
    python -m benchmarks.hook_eval --no-load  # reuse them as they are
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from cli_org.db.connect import connect
from cli_org.evaluation import load_hook_cases, run_hook
from cli_org.vault.embed import embed_pending
from cli_org.vault.embedders import index_embedder, query_embedder

from .common import bench_settings
from .recall_eval import AGENT, HALVES, SAMPLE, half, load_sample, load_team, load_til


def measure(settings) -> dict:
    settings = dataclasses.replace(settings, root=str(SAMPLE))  # the sample's memory files, as in CI
    embedder, _ = query_embedder(settings)
    out: dict = {}
    with connect(settings, AGENT) as conn:
        for which in HALVES:
            cases = load_hook_cases(half("hook-quiet", which)) + load_hook_cases(half("hook-needed", which))
            run = run_hook(conn, cases, settings=settings, embedder=embedder)
            out[which] = {
                **dataclasses.asdict(run.overall),
                "needed_by_tag": {t: round(r, 3) for t, r in run.by_tag.items()},
                # What the hook wrongly added, and what it failed to add.
                "quiet_injected": [
                    (r.prompt, r.injected.splitlines()) for r in run.cases if r.expected is None and r.injected
                ],
                "needed_missed": [(r.prompt, r.expected) for r in run.cases if r.expected is not None and not r.found],
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-load", action="store_true", help="reuse the benchmark databases")
    args = parser.parse_args()
    sample = bench_settings("hook_sample")
    til = bench_settings("hook_til")
    if not args.no_load:
        load_sample(sample, facts_only=False)
        load_team(sample)
        load_til(til)
        with connect(til) as conn:
            print("embed:", embed_pending(conn, index_embedder(til)).line(), file=sys.stderr)
    results = [{"set": "sample", **measure(sample)}, {"set": "til", **measure(til)}]
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
