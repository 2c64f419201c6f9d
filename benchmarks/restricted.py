"""What a restricted project costs a reader (issue 33, item 8; migration 0035): the fact arm
(semantic and lexical) and the context block at N facts, read as the agent `scale-bot` under four
read rules, taken in turns in one run on one database (so that the machine's load falls on
all of them alike):

  main        the read policies as they were before 0035 (`USING (true)`), put back for the turn
  none        0035's policies, no project restricted (one probe of an empty table per statement)
  hidden      project delta restricted to another agent: the reader's statements hide it
  listed      project delta restricted to the reader: nothing hidden, the rule computed in full

The facts are scale.py's (four projects and the org, one vector each), loaded in bulk.

    python -m benchmarks.restricted --facts 100000 [--queries 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from cli_org.db.connect import connect
from cli_org.recall.facts_arm import recall_facts
from cli_org.session.context import build_context
from cli_org.store.agents import add_agent
from cli_org.store.projects import lift, restrict
from cli_org.vault.embedders import index_embedder, query_embedder

from .common import bench_settings, drop_database, median, percentile
from .scale import AGENT, PROJECTS, WARM, Words, load_facts

# The read policies of 0035 that a reader of facts meets, and main's in their place.
MAIN = {
    "memory_facts": ("facts_read", "true"),
    "memory_fact_vectors": ("fact_vectors_read", "true"),
    "memory_pins": ("pins_read", "true"),
    "org_todos": ("todos_read", "true"),
}


def _policies(conn) -> dict[str, str]:
    return {
        t: conn.execute(
            "SELECT pg_get_expr(polqual, polrelid) AS q FROM pg_policy WHERE polrelid = %s::regclass AND polname = %s",
            (t, name),
        ).fetchone()["q"]
        for t, (name, _) in MAIN.items()
    }


def _set_policies(conn, quals: dict[str, str]) -> None:
    for table, (name, _) in MAIN.items():
        conn.execute(f"ALTER POLICY {name} ON {table} USING ({quals[table]})")
    conn.commit()


def _state(conn, state: str, now: dict[str, str]) -> None:
    lift(conn, "delta")
    _set_policies(conn, {t: q for t, (_, q) in MAIN.items()} if state == "main" else now)
    if state == "hidden":
        restrict(conn, "delta", ["other-bot"])
    elif state == "listed":
        restrict(conn, "delta", [AGENT])


def _timed(conn, call, queries: list[str]) -> tuple[list[float], int]:
    times, found = [], 0
    for q in queries:
        started = time.perf_counter()
        got = call(conn, q)
        times.append((time.perf_counter() - started) * 1000)
        found += len(got) if isinstance(got, list) else got.text.count("\n")
    return times, found


def run(n_facts: int, n_queries: int, rounds: int, keep: bool) -> dict:
    settings = replace(bench_settings(f"restricted_f{n_facts}", fresh=True), root=tempfile.mkdtemp(prefix="rs-root-"))
    index_embedder(settings)  # leaves the ONNX query model
    timings: dict = {}
    with connect(settings, bounded=False) as admin:
        add_agent(admin, AGENT)
        add_agent(admin, "other-bot")
        admin.commit()
        load_facts(admin, n_facts, Words(seed=14), timings)
        now = _policies(admin)
    print("loaded", timings, file=sys.stderr, flush=True)
    embedder, why = query_embedder(settings)
    if embedder is None:
        raise SystemExit(why)
    queries = Words(seed=15).texts(n_queries, 1, 8)
    calls = {
        "fact arm": lambda c, q: recall_facts(
            c, q, project=None, limit=8, embedder=embedder, shaping=settings.fact_shaping
        ),
        "fact arm, lexical": lambda c, q: recall_facts(c, q, project=None, limit=8),
        "context --for": lambda c, q: build_context(c, settings=settings, for_text=q, embedder=embedder),
        "context": lambda c, q: build_context(c, settings=settings, project=PROJECTS[len(q) % len(PROJECTS)]),
    }
    states = ("main", "none", "hidden", "listed")
    samples: dict = {s: {label: [] for label in calls} for s in states}
    hits: dict = {s: {label: 0 for label in calls} for s in states}
    loads = [os.getloadavg()[0]]
    with connect(settings, bounded=False) as admin, connect(settings, AGENT) as reader:
        for _ in range(rounds):
            for state in states:
                _state(admin, state, now)
                for label, call in calls.items():
                    _timed(reader, call, queries[:WARM])
                    times, found = _timed(reader, call, queries)
                    samples[state][label] += times
                    hits[state][label] = found
                print(state, {k: round(median(v), 1) for k, v in samples[state].items()}, file=sys.stderr, flush=True)
            loads.append(os.getloadavg()[0])
        _state(admin, "none", now)
    embedder.close()
    result = {
        "facts": n_facts,
        "queries": n_queries,
        "rounds": rounds,
        "load_s": timings,
        "load_average_1m": {"start": loads[0], "end": loads[-1], "max": max(loads)},
        "latency_ms": {
            s: {
                label: {
                    "p50": round(median(v), 1),
                    "p95": round(percentile(v, 0.95), 1),
                    "n": len(v),
                    "hits_last_round": hits[s][label],
                }
                for label, v in samples[s].items()
            }
            for s in states
        },
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }
    if not keep:
        drop_database(settings)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, help="also write the result here (JSON)")
    args = parser.parse_args()
    result = run(args.facts, args.queries, args.rounds, args.keep)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
