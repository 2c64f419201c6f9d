"""The session context block, timed: from call to block ready in-process (p95, target
< 100 ms) and a cold `cli-org context` process (p50, target < 0.5 s), on the shipped sample
and on the TIL vault with 1,000 generated facts; with and without --for.

    python -m benchmarks.context
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time

from cli_org.checks.rules import KINDS
from cli_org.db.connect import connect
from cli_org.evaluation import load_golden
from cli_org.session.context import build_context
from cli_org.store import notebook, pins, todos
from cli_org.store.agents import add_agent
from cli_org.vault.scan import scan

from .common import ROOT, SHARED, bench_settings, eval_halves, median, percentile
from .recall_eval import SAMPLE, load_sample

RUNS = 30
COLD_RUNS = 20
TOPICS = ("deploy", "build", "auth", "cache", "billing", "search", "queue", "backup")


def _figures(times: list[float]) -> dict:
    return {"runs": len(times), "p50": round(median(times), 1), "p95": round(percentile(times, 0.95), 1)}


def in_process(settings, agent: str, questions: list[str]) -> dict:
    out = {}
    with connect(settings, agent) as conn:
        for label, for_text in (("block", None), ("block --for", "q")):
            times, sizes = [], []
            for i in range(RUNS + 3):
                started = time.perf_counter()
                block = build_context(
                    conn, settings=settings, for_text=questions[i % len(questions)] if for_text else None
                )
                if i >= 3:  # the first calls warm the caches
                    times.append((time.perf_counter() - started) * 1000)
                    sizes.append(block.tokens)
            out[label] = {**_figures(times), "tokens_median": median(sizes)}
    return out


def cold(settings, agent: str, questions: list[str]) -> dict:
    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": settings.database_url or "",
        "ORG_ROOT": str(SAMPLE),
        "ORG_AGENT": agent,
    }
    out = {}
    for label, with_for in (("block", False), ("block --for", True)):
        times = []
        for i in range(COLD_RUNS):
            # `python -m cli_org` from this checkout: the same start-up as the cli-org script.
            args = [sys.executable, "-m", "cli_org", "context"] + (
                ["--for", questions[i % len(questions)]] if with_for else []
            )
            started = time.perf_counter()
            subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
            times.append(time.perf_counter() - started)
        out[label] = {"runs": COLD_RUNS, "p50_s": round(median(times), 3), "p95_s": round(percentile(times, 0.95), 3)}
    return out


def _dress(settings, agent: str) -> None:
    """A notebook, two pins and a todo, as a working agent has."""
    with connect(settings, agent) as conn:
        if not notebook.show(conn).stores[0].entries:
            notebook.add(conn, "memory", "Run the linter and the unit tests before every commit")
            notebook.add(conn, "user", "Prefers short answers with the command first")
        ids = [
            r["id"] for r in conn.execute("SELECT id FROM memory_facts WHERE author = %s ORDER BY id LIMIT 2", (agent,))
        ]
        conn.rollback()
        for fact_id in ids:
            pins.pin(conn, fact_id)
        if not todos.list_todos(conn):
            todos.add_todo(conn, "Migrate the auth tests")


def main() -> None:
    results = {}
    sample = dataclasses.replace(bench_settings("context_sample", fresh=True), root=str(SAMPLE))
    load_sample(sample, facts_only=False)
    _dress(sample, "builder")
    questions = [c.question for c in [c for f in eval_halves("golden") for c in load_golden(f)]]
    results["sample"] = {
        "in_process_ms": in_process(sample, "builder", questions),
        "cold": cold(sample, "builder", questions),
    }
    print(results["sample"], flush=True)

    til = dataclasses.replace(bench_settings("context_til", fresh=True), root=str(SAMPLE))
    with connect(til, bounded=False) as admin:
        add_agent(admin, "bench-bot")
        admin.commit()
    with connect(til, "bench-bot") as conn:
        for i in range(1000):
            topic = TOPICS[i % len(TOPICS)]
            conn.execute(
                "INSERT INTO memory_facts (subject, claim, source, kind) VALUES (%s, %s, %s, %s)",
                (
                    f"{topic} {i}",
                    f"The {topic} job number {i} runs on host h{i % 97}",
                    "docs/x.md",
                    KINDS[i % len(KINDS)],
                ),
            )
        conn.commit()
    with connect(til, bounded=False) as admin:
        scan(admin, SHARED / "til")
    _dress(til, "bench-bot")
    til_questions = [c.question for c in [c for f in eval_halves("til-golden") for c in load_golden(f)]]
    results["til"] = {
        "in_process_ms": in_process(til, "bench-bot", til_questions),
        "cold": cold(til, "bench-bot", til_questions),
    }
    print(results["til"], flush=True)


if __name__ == "__main__":
    main()
