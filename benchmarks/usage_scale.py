"""The Usage page's data at 1,000 archived sessions: how long `usage_detail()` takes.

Writes N Claude Code transcripts (default 1,000; each 40 messages, half of the sessions with
two recalls whose hits the session partly quotes later), imports them through the real
importer into a fresh benchmark database, then times `usage_detail()` and, on its own, the
quoted pass (`hits_later_quoted()`): median and p95 over runs; and what judging the sessions
(storing their verdicts, archive/verdicts.py) costs on its own, per session.

With `--before DIR` (a checkout of older code, e.g. main), the first Usage page after a
start, before and after in one run: each code imports the same transcripts into its own
database in a child process, then `--cold` times (alternating) a fresh process opens the
web page's pools and times its first `GET /usage` (the server's time for the request, in
process; no warm-up). Prints the medians, the import time of each, and whether both pages
show the same hits-later-quoted figures.

    python -m benchmarks.usage_scale [--sessions 1000] [--runs 20] [--before DIR --cold 7]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from psycopg import sql as pgsql

from cli_org.archive.importer import import_sessions
from cli_org.archive.usage import hits_later_quoted, usage_detail
from cli_org.archive.verdicts import judge_stale
from cli_org.db.connect import admin_conninfo, connect

from .common import ROOT, WORK, bench_settings

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


# Run by a fresh `python -c` under either checkout (only what both codes have): "import"
# creates and fills the database, "page" times the first /usage of a new process.
CHILD = r"""
import json, os, sys, time
from pathlib import Path
from cli_org.config import Settings
settings = Settings.from_env(dict(os.environ))
if sys.argv[1] == "import":
    from cli_org.archive.importer import import_sessions
    from cli_org.db.connect import connect
    from cli_org.store.bootstrap import init
    init(settings, "bench")
    with connect(settings) as conn:
        started = time.perf_counter()
        (summary,) = import_sessions(conn, {"claude-code": Path(sys.argv[2])})
        print(json.dumps({"seconds": time.perf_counter() - started, "sessions": summary.sessions}))
else:
    from fastapi.testclient import TestClient
    from cli_org.faces.web.app import create_app, opened
    from cli_org.faces.web.guard import hosts_for, new_token
    token = new_token()
    with opened(settings, "bench", token=token, hosts=hosts_for("127.0.0.1", 8765)) as web:
        with TestClient(create_app(web), base_url="http://127.0.0.1:8765", follow_redirects=False) as client:
            client.get("/", params={"token": token})
            started = time.perf_counter()
            page = client.get("/usage")
            first = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            client.get("/usage")
            second = (time.perf_counter() - started) * 1000
            assert page.status_code == 200, page.status_code
            quoted = client.get("/api/usage").json()["quoted"]
            quoted.pop("unjudged", None)
            print(json.dumps({"first": first, "second": second, "quoted": quoted}))
"""


def _child(code: Path, database: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1", "CLI_ORG_DATABASE": database}
    env.setdefault("CLI_ORG_DATA_DIR", str(WORK / "data"))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, check=False, cwd=code
    )
    if done.returncode:
        raise SystemExit(f"{code} {args[0]}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _drop(database: str) -> None:
    settings = bench_settings("usage_scale")  # the server, started if need be
    with psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True) as conn:
        conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(database)))


def before_after(before: Path, sessions: int, cold: int, rng: random.Random) -> None:
    """The first Usage page of a fresh process, the code in `before` against this one."""
    codes = {"before": before.resolve(), "after": ROOT}
    databases = {"before": "bench_usage_scale_before", "after": "bench_usage_scale_after"}
    with tempfile.TemporaryDirectory() as tmp:
        _write(Path(tmp), sessions, rng)
        for name, code in codes.items():
            _drop(databases[name])
            done = _child(code, databases[name], "import", tmp)
            print(f"{name}: imported {done['sessions']} sessions in {done['seconds']:.1f} s")
    firsts: dict[str, list[float]] = {name: [] for name in codes}
    seconds: dict[str, list[float]] = {name: [] for name in codes}
    figures = {}
    for _ in range(cold):
        for name, code in codes.items():  # alternating, so both see the same load
            page = _child(code, databases[name], "page")
            firsts[name].append(page["first"])
            seconds[name].append(page["second"])
            figures[name] = page["quoted"]
    for name in codes:
        first, second = sorted(firsts[name]), sorted(seconds[name])
        print(
            f"{name}: first /usage of a new process median {statistics.median(first):.0f} ms"
            f" (min {first[0]:.0f}, max {first[-1]:.0f}; {cold} cold starts); the second"
            f" {statistics.median(second):.0f} ms"
        )
    print(f"same hits-later-quoted figures on both pages: {figures['before'] == figures['after']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--reuse", action="store_true", help="time the archive a previous run imported")
    parser.add_argument("--before", type=Path, metavar="DIR", help="a checkout of the code to compare with")
    parser.add_argument("--cold", type=int, default=7, help="cold starts per code, with --before")
    args = parser.parse_args()
    rng = random.Random(15)
    if args.before:
        before_after(args.before, args.sessions, args.cold, rng)
        return
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
        # What judging at import adds: every session that recalled judged again and stored.
        times = []
        for _ in range(max(1, args.runs // 5)):
            conn.execute("DELETE FROM quoted_sessions")
            conn.commit()
            started = time.perf_counter()
            judged = judge_stale(conn).judged
            times.append((time.perf_counter() - started) * 1000)
        print(
            f"judging and storing {judged} sessions that recalled: median {statistics.median(times):.0f} ms,"
            f" {statistics.median(times) / max(judged, 1):.2f} ms per session ({len(times)} runs)"
        )


if __name__ == "__main__":
    main()
