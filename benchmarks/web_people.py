"""Server time of the pages of what agents keep (issue 26): Todos, Pins, Sessions (the list,
a search, one session and a deep page of a long one), Vault (the list, a filter, one note)
and an agent's notebook history, with their /api twins.

Over benchmarks/web.py's two databases and its in-process timing (per_page): `sample` (the
shipped sample) and `scale` (web.py's loader with --facts facts, 1,000 archived sessions),
each given what these pages list: todos (half done), pin and unpin cycles, an agent's
notebook edited many times, a vault of small linked notes, and one archived session of
--long messages. Targets: 100 ms on the sample, 300 ms at scale (docs/web.md, Speed).

    python -m benchmarks.web_people [--only sample|scale] [--facts 100000] [--requests 30]

Prints a Markdown table; writes nothing (benchmarks/RESULTS.md is the lead's).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from . import web
from .common import bench_settings

TODOS = 2_000
PIN_CYCLES = 100
NOTEBOOK_EDITS = 300
NOTES = 1_000


def _long_session(folder: Path, n: int) -> None:
    project = folder / "-w-long"
    project.mkdir(parents=True, exist_ok=True)
    start = datetime.now(UTC) - timedelta(days=2)
    lines = [
        web._claude_line("long", f"long-{k}", {"type": "text", "text": f"Step {k}: " + "words " * 50}, start)
        for k in range(n)
    ]
    (project / "long.jsonl").write_text("".join(lines))


def _vault(folder: Path, n: int) -> None:
    for i in range(n):
        path = folder / f"area{i % 20}" / f"note{i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        links = f"[[note{(i + 1) % n:04d}]] and [[note{(i + 7) % n:04d}]]"
        path.write_text(f"# Note {i}\n\nAbout deploys and item {i}. See {links}. #area{i % 20}\n\n## More\n\nText.\n")


def add_kept(settings, agent: str, long: int) -> None:
    """What the pages list, written through the library (todos in one statement)."""
    from cli_org.archive.importer import import_sessions
    from cli_org.db.connect import connect
    from cli_org.store import notebook as nb
    from cli_org.store import pins
    from cli_org.vault.scan import scan

    started = time.perf_counter()
    with connect(settings) as conn:
        conn.execute(
            "INSERT INTO org_todos (text, project, author) SELECT 'todo number ' || g,"
            " CASE WHEN g %% 3 = 0 THEN NULL ELSE 'p' || (g %% 5) END, %s FROM generate_series(1, %s) g",
            (agent, TODOS),
        )
        conn.execute("UPDATE org_todos SET done_at = now(), done_by = author WHERE id % 2 = 0")
        current = "SELECT id FROM memory_facts WHERE valid_to IS NULL ORDER BY id LIMIT 200"
        ids = [r["id"] for r in conn.execute(current)]
        conn.commit()
    with connect(settings, web.AS) as conn:
        for k in range(PIN_CYCLES):
            fid = ids[-1 - (k % min(50, len(ids)))]
            pins.pin(conn, fid)
            pins.unpin(conn, fid)
        nb.add(conn, "memory", "edit 0")
        for k in range(1, NOTEBOOK_EDITS):
            nb.replace(conn, "memory", f"edit {k - 1}", f"edit {k}\nsecond line {k % 3}")
    with tempfile.TemporaryDirectory() as tmp:
        _long_session(Path(tmp) / "claude", long)
        _vault(Path(tmp) / "vault", NOTES)
        with connect(settings) as conn:
            import_sessions(conn, {"claude-code": Path(tmp) / "claude"})
            scan(conn, Path(tmp) / "vault", replace=True)
    took = time.perf_counter() - started
    print(f"added todos, pins, notebook, vault, a long session in {took:.0f} s", file=sys.stderr)


def paths_for(settings, long: int) -> list[str]:
    from cli_org.db.connect import connect

    with connect(settings) as conn:
        row = conn.execute(
            "SELECT external_id FROM archive_sessions WHERE external_id <> 'long' ORDER BY id LIMIT 1"
        ).fetchone()
    one = row["external_id"] if row else "long"
    return [
        "/todos",
        "/todos?state=all&page=20",
        f"/todos?agent={web.AS}&state=done",
        "/api/todos?project=p1",
        "/pins",
        "/pins?page=2",
        "/api/pins/past",
        "/sessions",
        "/sessions?page=15",
        "/sessions?q=tests+pass",
        f"/sessions/{one}",
        "/sessions/long",
        f"/sessions/long?page={max(1, long // 200)}",
        "/api/sessions/long?page=3",
        "/vault",
        "/vault?q=note09&page=1",
        "/vault?tag=area3",
        "/vault/area3/note0003.md",
        "/api/vault/area3/note0003.md",
        f"/agents/{web.AS}/notebook",
        f"/agents/{web.AS}/notebook?page=5",
        f"/api/agents/{web.AS}/notebook",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["sample", "scale"])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--long", type=int, default=5_000, help="messages of the one long archived session")
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--reuse", action="store_true", help="keep the databases a previous run loaded")
    args = parser.parse_args()
    results: dict = {}
    for name in ("sample", "scale"):
        if args.only and name != args.only:
            continue
        if args.reuse:
            settings = bench_settings(f"web_{name}")
        else:
            settings = web.load_sample() if name == "sample" else web.load_scale(args.facts)
            add_kept(settings, web.AS, args.long)
        results[name] = web.per_page(settings, paths_for(settings, args.long), args.warm, args.requests)
    print(json.dumps({"facts": args.facts, "requests": args.requests}))
    print("| page | " + " | ".join(f"{n} median / p95 ms" for n in results) + " |")
    print("| --- |" + " --- |" * len(results))
    for path in next(iter(results.values())):
        cells = [f"{r[path]['median_ms']} / {r[path]['p95_ms']}" for r in results.values()]
        print(f"| `{path}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
