"""What a hostile member's input costs now, and what the member-side guards cost everyone.

    python -m benchmarks.hostile

- The review's attack, 400 negated terms, against `recall --arms fact` and `sessions
  search`: refused before any SQL runs. The largest query still allowed (64 negated terms,
  under 1,000 characters) against 5,000 facts and the real transcripts, beside a plain
  question: medians over repeated runs.
- Row-level security on the vault (private notes hidden from members): keyword search on
  the TIL vault as a member (policies apply) and as the admin (they do not).
"""

from __future__ import annotations

import time
from pathlib import Path

from cli_org.archive import sessions
from cli_org.archive.importer import import_sessions
from cli_org.db.connect import connect
from cli_org.errors import InputError
from cli_org.evaluation import load_golden
from cli_org.recall.answer import recall
from cli_org.store.agents import add_agent
from cli_org.vault.scan import scan
from cli_org.vault.search import search

from .common import SHARED, bench_settings, eval_halves, median

RUNS = 15
TOPICS = ["deploy", "billing", "search", "auth", "queue", "cache", "backup", "ingest", "metrics", "release"]


def _timed(fn, runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return median(times)


def _refused_ms(fn) -> float:
    def attempt():
        try:
            fn()
        except InputError:
            return
        raise AssertionError("the attack was not refused")

    return _timed(attempt)


def main() -> None:
    settings = bench_settings("hostile", fresh=True)
    with connect(settings, bounded=False) as admin:
        add_agent(admin, "bench-bot")
        admin.commit()
    with connect(settings, "bench-bot") as conn:
        for i in range(5000):
            topic = TOPICS[i % len(TOPICS)]
            conn.execute(
                "INSERT INTO memory_facts (subject, claim, source) VALUES (%s, %s, %s)",
                (topic, f"The {topic} job number {i} runs on host h{i % 97} at port {8000 + i % 500}", "docs/x.md"),
            )
        conn.commit()
    with connect(settings, bounded=False) as admin:
        import_sessions(admin, {"claude-code": SHARED / "transcripts" / "claude-code"})
        import_sessions(admin, {"codex": SHARED / "transcripts" / "codex"})
        scan(admin, SHARED / "til")

    attack = " ".join(f"-zz{i}" for i in range(400))
    largest = " ".join(f"-zz{i}" for i in range(64))
    print(f"attack: {len(attack)} characters, 400 terms; largest allowed: {len(largest)} characters, 64 terms")
    with connect(settings, "bench-bot") as conn:

        def fact_arm(q):
            return lambda: recall(conn, q, settings=settings, arms=("fact",), log=False)

        def session_search(q):
            return lambda: sessions.search_messages(conn, q)

        rows = [
            ("recall --arms fact, 400 negated terms (refused)", _refused_ms(fact_arm(attack))),
            ("recall --arms fact, 64 negated terms", _timed(fact_arm(largest))),
            ("recall --arms fact, 'deploy -zz0 ... -zz62' (64 terms)", _timed(fact_arm("deploy " + largest[:-6]))),
            ("recall --arms fact, 'deploy job port'", _timed(fact_arm("deploy job port"))),
            ("sessions search, 400 negated terms (refused)", _refused_ms(session_search(attack))),
            ("sessions search, 'test -zz0 ... -zz62' (64 terms)", _timed(session_search("test " + largest[:-6]))),
            ("sessions search, 'test'", _timed(session_search("test"))),
        ]
        for label, ms in rows:
            print(f"{label:<62} median {ms:8.2f} ms over {RUNS} runs")

    questions = [c.question for c in [c for f in eval_halves("til-golden") for c in load_golden(f)]]
    with connect(settings) as admin, connect(settings, "bench-bot") as member:
        for label, conn in (("admin (no policies)", admin), ("member (row-level security)", member)):
            for q in questions[:3]:
                search(conn, q, mode="keyword")  # warm
            per_query = [_timed(lambda q=q, c=conn: search(c, q, mode="keyword"), runs=5) for q in questions]
            print(
                f"TIL keyword search as {label:<28} median of per-question medians {median(per_query):6.2f} ms "
                f"({len(questions)} questions x 5 runs)"
            )


if __name__ == "__main__":
    assert Path(SHARED).is_dir(), f"{SHARED} is missing"
    main()
