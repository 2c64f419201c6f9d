"""The Usage page's data at 1,000 archived sessions: how long `usage_detail()` takes.

Writes N Claude Code transcripts (default 1,000; each 40 messages, half of the sessions with
two recalls whose hits the session partly quotes later), imports them through the real
importer into a fresh benchmark database, then times `usage_detail()` and, on its own, the
quoted pass (`hits_later_quoted()`): median and p95 over runs.

    python -m benchmarks.usage_scale [--sessions 1000] [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cli_org.archive.importer import import_sessions
from cli_org.archive.usage import hits_later_quoted, usage_detail
from cli_org.db.connect import connect

from .common import bench_settings

_WORDS = """deploy billing cache rollback canary staging release ledger window switch image tag queue
worker migration schema index vacuum replica backup restore token secret rotate cron nightly report"""
WORDS = _WORDS.split()


def _sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _record(sid: str, at: datetime, kind: str, content, n: int) -> str:
    role = "assistant" if kind == "assistant" else "user"
    stamp = (at + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
    record = {
        "type": role,
        "sessionId": sid,
        "uuid": f"{sid}-{n}",
        "timestamp": stamp,
        "cwd": "/w/app",
        "message": {"role": role, "model": "m", "content": content},
    }
    return json.dumps(record) + "\n"


def _answer(rng: random.Random) -> list[str]:
    """The labelled lines of one recall answer: 3 facts, 3 vault notes, 2 memory lines."""
    hits = [
        f"[fact #{rng.randint(1, 5000)}] {_sentence(rng, 2)}: {_sentence(rng)} (docs/a.md; bot; 2 days ago)"
        for _ in range(3)
    ]
    hits += [f"[vault] notes/{rng.choice(WORDS)}-{rng.randint(1, 999)}.md: {_sentence(rng)}" for _ in range(3)]
    hits += [f"[memory] .agents/org/memory/bot.md:{rng.randint(1, 80)} {_sentence(rng)}" for _ in range(2)]
    return hits


def _write(root: Path, sessions: int, rng: random.Random) -> None:
    folder = root / "-w-app"
    folder.mkdir(parents=True)
    start = datetime.now(UTC) - timedelta(days=25)
    for s in range(sessions):
        sid = f"s{s:05d}"
        at = start + timedelta(minutes=36 * s)
        lines: list[str] = []
        hits: list[str] = []
        for n in range(40):
            if s % 2 == 0 and n in (3, 21):
                call = f"{sid}-c{n}"
                command = f"cli-org recall '{_sentence(rng, 4)}'"
                use = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}
                lines.append(_record(sid, at, "assistant", [use], n))
                hits = _answer(rng)
                text = [{"type": "text", "text": "\n".join(hits)}]
                result = {"type": "tool_result", "tool_use_id": call, "content": text}
                lines.append(_record(sid, at, "user", [result], n + 100))
            elif n % 5 == 4 and hits and rng.random() < 0.5:
                # Half name a hit (its label and place), half copy seven words from its middle.
                hit = rng.choice(hits)
                quote = hit[:60] if rng.random() < 0.5 else " ".join(hit.split()[3:10])
                lines.append(_record(sid, at, "assistant", [{"type": "text", "text": f"Using {quote}"}], n))
            elif n % 2:
                command = f"grep -r {rng.choice(WORDS)} src/"
                use = {"type": "tool_use", "id": f"{sid}-t{n}", "name": "Bash", "input": {"command": command}}
                lines.append(_record(sid, at, "assistant", [use], n))
            else:
                lines.append(_record(sid, at, "user", _sentence(rng, 30), n))
        (folder / f"{sid}.jsonl").write_text("".join(lines))


def _timed(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, round(0.95 * len(times)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--reuse", action="store_true", help="time the archive a previous run imported")
    args = parser.parse_args()
    rng = random.Random(15)
    settings = bench_settings("usage_scale", fresh=not args.reuse)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.reuse:
            _write(Path(tmp), args.sessions, rng)
            with connect(settings) as conn:
                started = time.perf_counter()
                (summary,) = import_sessions(conn, {"claude-code": Path(tmp)})
                print(
                    f"imported {summary.sessions} sessions, {summary.messages} messages in"
                    f" {time.perf_counter() - started:.1f} s"
                )
    with connect(settings) as conn:
        d = usage_detail(conn, 30, "day")
        q = d.quoted
        print(f"recall calls {q.recall_calls}, tied {q.tied}, sessions listed {len(d.sessions)}")
        for a in q.arms:
            print(
                f"  {a.arm}: hits {a.hits}, quoted {a.quoted} (id {a.by_id}, path {a.by_path},"
                f" phrase {a.by_phrase}), share {a.share}"
            )
        for name, fn in (
            ("usage_detail (everything the Usage page shows)", lambda: usage_detail(conn, 30, "day")),
            ("hits_later_quoted (the quoted pass alone)", lambda: hits_later_quoted(conn, 30)),
        ):
            median, p95 = _timed(fn, args.runs)
            print(f"{name}: median {median:.0f} ms, p95 {p95:.0f} ms ({args.runs} runs)")


if __name__ == "__main__":
    main()
