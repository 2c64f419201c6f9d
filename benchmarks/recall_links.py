"""A warm recall's cost with typed links (issue 36): in-process p50 and p95 of `recall` (every
arm, keyword only) over 1,000 facts, a third of the hits linked (confirms, contradicts,
depends-on), and the statements one warm recall sends (libpq's trace, as
tests/test_answer_shape.py counts them).

    python -m benchmarks.recall_links            # this checkout
    PYTHONPATH=OTHER python -m benchmarks.recall_links   # another checkout's cli_org, same data
"""

from __future__ import annotations

import dataclasses
import json
import time

from cli_org.db.connect import connect
from cli_org.recall.answer import recall
from cli_org.store import links
from cli_org.store.agents import add_agent

from .common import bench_settings, median, percentile
from .recall_eval import SAMPLE

RUNS = 300
FACTS = 1000
TOPICS = ("deploy", "build", "auth", "cache", "billing", "search", "queue", "backup")
QUESTIONS = [f"{t} job host" for t in TOPICS]


def _load(settings) -> None:
    with connect(settings, bounded=False) as admin:
        for name in ("builder", "scout"):
            add_agent(admin, name)
        admin.commit()
    ids: list[int] = []
    with connect(settings, "builder") as conn:
        for i in range(FACTS):
            topic = TOPICS[i % len(TOPICS)]
            row = conn.execute(
                "INSERT INTO memory_facts (subject, claim, source) VALUES (%s, %s, 'docs/x.md') RETURNING id",
                (f"{topic} {i}", f"The {topic} job number {i} runs on host h{i % 97}"),
            ).fetchone()
            ids.append(row["id"])
        conn.commit()
    with connect(settings, "scout") as conn:
        for n, fact_id in enumerate(ids[: FACTS // 3]):
            kind = ("confirms", "contradicts", "depends-on")[n % 3]
            other = ids[-1 - n]
            if kind == "confirms" and n % 2:
                links.link(conn, None, "confirms", fact_id)  # type: ignore[arg-type]  # an own confirmation
            else:
                links.link(conn, fact_id, kind, other)
    with connect(settings, bounded=False) as admin:  # the planner's figures, as autovacuum keeps them
        admin.execute("ANALYZE memory_facts")
        admin.execute("ANALYZE memory_links")
        admin.commit()


def _statements(conn, call) -> int:
    from tests.helpers import sent

    return len([s for s in sent(conn, call) if s.strip(' "') not in ("BEGIN", "COMMIT")])


def main() -> None:
    settings = dataclasses.replace(bench_settings("recall_links", fresh=True), root=str(SAMPLE))
    _load(settings)
    times: list[float] = []
    with connect(settings, "builder") as conn:
        for q in QUESTIONS * 2:  # warm every connection memo and plan
            recall(conn, q, settings=settings, log=False)
        for i in range(RUNS):
            started = time.perf_counter()
            recall(conn, QUESTIONS[i % len(QUESTIONS)], settings=settings, log=False)
            times.append((time.perf_counter() - started) * 1000)
        count = _statements(conn, lambda: recall(conn, QUESTIONS[0], settings=settings))
        text = recall(conn, QUESTIONS[0], settings=settings, log=False).text
    print(
        json.dumps(
            {
                "runs": RUNS,
                "p50_ms": round(median(times), 2),
                "p95_ms": round(percentile(times, 0.95), 2),
                "statements": count,
                "answer_chars": len(text),
            }
        )
    )


if __name__ == "__main__":
    main()
