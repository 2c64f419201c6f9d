"""The Usage page's data on the real transcripts: adoption, recalls tied, hits later quoted.

Imports ../shared/corpora/transcripts (Claude Code, Codex, Hermes) into a fresh benchmark
database, prints what `usage_detail()` finds, and times it (median and p95 over runs).

    python -m benchmarks.quoted_corpora [--runs 30]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time

from cli_org.archive.importer import import_sessions
from cli_org.archive.quoted import SessionMessage, quoted_in_session
from cli_org.archive.quoted import per_arm as per_arm_figures
from cli_org.archive.usage import MAX_DAYS, usage_detail
from cli_org.db.connect import connect

from .common import SHARED, bench_settings


def chance(conn, seed: int = 15, per_arm: int = 8) -> None:
    """The rule's false positives on real sessions: into every real session, right after its
    first message, put a recall whose hits nobody in it ever saw (vault notes and fact-like
    claims from the TIL vault, fact ids drawn from 1..500), then count what the rule calls
    quoted. Every such "quote" is chance."""
    rng = random.Random(seed)
    notes = sorted((SHARED / "til").rglob("*.md"))
    sessions = [r["id"] for r in conn.execute("SELECT id FROM archive_sessions ORDER BY id")]
    verdicts = []
    for sid in sessions:
        rows = conn.execute(
            "SELECT kind, text, tool_call_id FROM archive_messages WHERE session_id = %s ORDER BY position, part, id",
            (sid,),
        ).fetchall()
        if len(rows) < 2:
            continue
        lines = []
        for path in rng.sample(notes, 2 * per_arm):
            body = re.sub(r"\s+", " ", path.read_text("utf-8", errors="replace"))
            rel = path.relative_to(SHARED / "til").as_posix()
            if len(lines) < per_arm:
                lines.append(f"[vault] {rel}: {body[:300]}")
            else:
                lines.append(f"[fact #{rng.randint(1, 500)}] {path.stem}: {body[:300]} (docs; bot; today)")
        messages = [SessionMessage(r["kind"], r["text"], r["tool_call_id"]) for r in rows]
        call = SessionMessage("assistant", "cli-org recall 'x'", "bench-call", is_recall=True)
        result = SessionMessage("tool", "\n".join(lines), "bench-call")
        messages[1:1] = [call, result]
        verdicts += quoted_in_session(messages)[1]
    conn.rollback()
    print(
        f"chance quotes: a recall of {per_arm} vault and {per_arm} fact hits nobody saw, put into each of"
        f" {len(verdicts)} real sessions"
    )
    for a in per_arm_figures(verdicts):
        if a.hits:
            print(
                f"  {a.arm}: hits {a.hits}, called quoted {a.quoted} (id {a.by_id}, path {a.by_path},"
                f" phrase {a.by_phrase}), share {a.share}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    root = SHARED / "transcripts"
    if not root.is_dir():
        sys.exit(f"needs {root}")
    settings = bench_settings("quoted", fresh=True)
    stores = {"claude-code": root / "claude-code", "codex": root / "codex", "hermes": root / "hermes" / "state.db"}
    with connect(settings) as conn:
        summaries = import_sessions(conn, stores)
        for s in summaries:
            print(f"imported {s.harness}: {s.sessions} sessions, {s.messages} messages")
        d = usage_detail(conn, MAX_DAYS, "week")
        shell = conn.execute(
            "SELECT count(*) AS n FROM archive_messages WHERE kind = 'assistant' AND tool_name IS NOT NULL"
        ).fetchone()["n"]
        conn.rollback()
        print(f"tool calls in the archive: {shell}")
        for h in d.harnesses:
            print(
                f"{h.harness}: {h.sessions} sessions, {h.sessions_using} using, {h.recall_calls} recall calls,"
                f" {h.remember_calls} remember calls"
            )
        q = d.quoted
        print(f"sessions with a recall call: {q.sessions}; recall calls {q.recall_calls}; tied {q.tied}")
        for a in q.arms:
            print(f"  {a.arm}: recalls {a.recalls}, hits {a.hits}, quoted {a.quoted}, share {a.share}")
        chance(conn)
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            usage_detail(conn, MAX_DAYS, "week")
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p95 = times[max(0, round(0.95 * len(times)) - 1)]
    print(
        f"usage_detail over the whole archive: median {statistics.median(times):.1f} ms, p95 {p95:.1f} ms"
        f" ({len(times)} runs)"
    )


if __name__ == "__main__":
    main()
