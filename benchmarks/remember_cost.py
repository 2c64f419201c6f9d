"""What one warm `remember` costs, what the near-duplicate check (store/facts.py,
remember: the tidy-up's rule) adds to it, and what hashing the cited file (store/sources.py,
as the CLI and MCP faces do before `remember`) adds: the median wall time of a
library `remember` on one connection that has written before (the write checks compiled),
for this checkout and, with --before, another one (the code before a change).

    python -m benchmarks.remember_cost [--writes 200] [--rounds 3] [--others 2000] [--before PATH]

Each variant writes into its own database, filled alike: `--others` facts of the agent under
other subjects (the check reads the agent's current facts of one subject) and 100 facts in a
subject of their own. Per round, each variant is one fresh process (runs interleaved, so load
on the shared machine falls on all alike) that writes, after 3 untimed writes, `--writes`
claims that are no near-duplicates (their numbers differ), alternately into a new subject and
into the crowded one. Variants: `after` (this checkout), `after, allow_duplicate` (no check),
`after, hash N KB` (the source hash of a cited file of N KB, timed with the write; --hash-kb,
default 4 and the 1 MiB bound), `before` (--before). With --model every variant writes as the CLI
and the MCP server do, with the query model: the claim's vector is computed and stored, and
(issue 36) the claim is judged against the nearest facts by meaning as well as by words.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CROWDED = 100  # facts already in the crowded subject


def worker(writes: int, mode: str, tag: str, model: bool = False) -> None:
    """Runs in a fresh process with the checkout under test first on PYTHONPATH. `mode`: "0"
    (as the library is called), "1" (allow_duplicate), or "hN" (hash a cited file of N KB)."""
    import tempfile

    from cli_org.config import Settings
    from cli_org.db.connect import connect
    from cli_org.store.facts import remember

    extra: dict[str, object] = {"allow_duplicate": True} if mode == "1" else {}
    if model:
        from cli_org.vault.embedders import onnx_path, query_model

        extra["embedder"] = query_model(onnx_path(Settings.from_env(dict(os.environ))))  # built once if missing
        assert extra["embedder"] is not None, "the query model could not be built"
    hashing = None
    if mode.startswith("h"):
        from cli_org.store.sources import source_hash_at

        folder = tempfile.TemporaryDirectory()
        root = Path(folder.name)
        (root / "docs").mkdir()
        line = b"A line of the deploy runbook, about as long as a line of prose or code.\n"
        data = line * (int(mode[1:]) * 1024 // len(line) + 1)
        (root / "docs/bench.md").write_bytes(data[: int(mode[1:]) * 1024])
        hashing = str(root)
    fresh: list[float] = []
    crowded: list[float] = []
    with connect(Settings.from_env(dict(os.environ)), "bench") as conn:
        for i in range(3 + writes):
            into = fresh if i % 2 else crowded
            subject = f"new subject {tag} {i}" if into is fresh else "crowded"
            claim = f"Run {tag}-{i} of the nightly deploy finished on runner {i}"
            started = time.perf_counter()
            if hashing is not None:
                extra["source_hash"] = source_hash_at("docs/bench.md", hashing, None)
                assert extra["source_hash"], "the bench's source was not hashed"
            remember(conn, subject, claim, source="docs/bench.md", **extra)  # type: ignore[arg-type]
            if i >= 3:
                into.append(time.perf_counter() - started)
    print(json.dumps({"fresh": fresh, "crowded": crowded}))


def _fill(settings, others: int) -> None:
    """The agent's other facts and the crowded subject, written as the admin in one go."""
    from cli_org.db.connect import connect

    with connect(settings, bounded=False) as conn:
        conn.execute(
            "INSERT INTO memory_facts (subject, claim, source, author) "
            "SELECT 'other subject ' || n, 'Fact ' || n || ' about another part of the system', 'docs/o.md', 'bench' "
            "FROM generate_series(1, %s) n",
            (others,),
        )
        conn.execute(
            "INSERT INTO memory_facts (subject, claim, source, author) "
            "SELECT 'crowded', 'Earlier fact ' || n || ' of the crowded subject', 'docs/c.md', 'bench' "
            "FROM generate_series(1, %s) n",
            (CROWDED,),
        )
        conn.commit()
        conn.execute("ANALYZE memory_facts")  # as autovacuum soon would: the planner's statistics
        conn.commit()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=200, help="timed remembers per variant and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--others", type=int, default=2000, help="the agent's facts under other subjects")
    parser.add_argument("--model", action="store_true", help="write with the query model, as the CLI does")
    parser.add_argument("--before", type=Path, help="a checkout of the code before the change")
    parser.add_argument(
        "--hash-kb", type=int, nargs="*", default=[4, 1024], help="sizes of the cited file hashed (KB; 0: none)"
    )
    parser.add_argument("--worker", nargs=2, metavar=("TAG", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.writes, args.worker[1], args.worker[0], args.model)
        return
    from .common import ROOT, bench_settings, drop_database

    variants = {"after": (ROOT, "0"), "after, allow_duplicate": (ROOT, "1")}
    for kb in (k for k in args.hash_kb if k > 0):
        variants[f"after, hash {kb} KB"] = (ROOT, f"h{kb}")
    if args.before:
        variants["before"] = (args.before.resolve(), "0")
    settings = {}
    for n, name in enumerate(variants):
        settings[name] = bench_settings(f"remember_cost_{n}", fresh=True)
        _fill(settings[name], args.others)
    times: dict[str, dict[str, list[float]]] = {name: {"fresh": [], "crowded": []} for name in variants}
    for r in range(args.rounds):
        for name, (checkout, allow) in variants.items():
            s = settings[name]
            env = {
                **os.environ,
                "PYTHONPATH": str(checkout),
                "CLI_ORG_DATA_DIR": str(s.data_dir),
                "CLI_ORG_DATABASE": s.database_name,
                "CLI_ORG_DATABASE_URL": s.database_url or "",
            }
            done = subprocess.run(
                [sys.executable, __file__, "--writes", str(args.writes), "--worker", f"r{r}", allow]
                + (["--model"] if args.model else []),
                env=env,
                cwd=checkout,
                check=True,
                capture_output=True,
                text=True,
            )
            for kind, values in json.loads(done.stdout).items():
                times[name][kind] += values
    print(f"warm library remember, {args.rounds} rounds x {args.writes} writes; {args.others} other facts of the agent")
    print(f"{'variant':26} {'new subject p50':>16} {'crowded p50':>12}   (ms; the crowded subject holds {CROWDED}+)")
    for name, got in times.items():
        fresh, crowded = (statistics.median(got[kind]) * 1000 for kind in ("fresh", "crowded"))
        print(f"{name:26} {fresh:16.2f} {crowded:12.2f}")
    for s in settings.values():
        drop_database(s)


if __name__ == "__main__":
    main()
