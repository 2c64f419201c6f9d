"""Quality of the write scan on the labelled set, per half, for the client checks
(cli_org/checks/write.py) and for the database trigger (migrations/repeatable/write_checks.sql); the median cost of one
insert (--cost); then the added cost of
the scanner library in a cold `cli-org remember`.

    python -m benchmarks.write_scan [--cold 10] [--misses]

A secret or injection counts as caught when the layer refuses it (for whatever reason); a
benign near miss counts as a false positive of the class whose check refused it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from psycopg import errors as pgerr

from cli_org.checks.write import check_fact
from cli_org.db.connect import connect
from cli_org.errors import InputError

from .common import ROOT, bench_settings, median
from .write_scan_data import HALVES, load

# Written by someone who had not seen the checks, measured once and never tuned on.
BLIND = ROOT / "tests" / "data" / "write_scan_blind.tsv"
CLASSES = {"secret": "looks like it contains", "injection": "prompt-injection"}


def client_verdict(text: str) -> str | None:
    try:
        check_fact("s", text, "a.md")
    except InputError as exc:
        return str(exc)
    return None


def db_verdict(conn: psycopg.Connection, text: str) -> str | None:
    try:
        with conn.transaction():
            conn.execute(
                "INSERT INTO memory_facts (subject, claim, source, author) VALUES ('s', %s, 'a.md', 'bench')", (text,)
            )
            conn.execute("SELECT 1/0")  # undo the insert
    except pgerr.DivisionByZero:
        return None
    except pgerr.CheckViolation as exc:
        return exc.diag.message_primary
    return None


def insert_cost(conn: psycopg.Connection, examples, rounds: int) -> None:
    """Median wall time of one INSERT that the trigger lets through (the benign lines), in a
    warm session: what every fact pays for the database's scan."""
    benign = [e.text for e in examples if e.label == "benign"]
    times = []
    for _ in range(rounds):
        for text in benign:
            started = time.perf_counter()
            db_verdict(conn, text)
            times.append(time.perf_counter() - started)
    print(f"database insert of a benign fact, median of {len(times)}: {median(times) * 1000:.1f} ms")


def report(layer: str, examples, verdicts, show_misses: bool, whole: bool = False) -> None:
    for half in ("all",) if whole else HALVES:
        rows = examples if whole else [e for e in examples if e.half == half]
        for label, marker in CLASSES.items():
            # a set that says which class each benign example is a near miss of counts false
            # positives of a class on its own near misses
            benign = [e for e in rows if e.label == "benign" and e.near in (None, label)]
            positives = [e for e in rows if e.label == label]
            caught = sum(verdicts[e.line] is not None for e in positives)
            false = sum(marker in (verdicts[e.line] or "") for e in benign)
            precision = caught / (caught + false) if caught + false else 1.0
            print(
                f"{layer:8} {half:8} {label:9} n={len(positives):3}  recall {caught / len(positives):6.1%}"
                f"  precision {precision:6.1%}  false positives {false}/{len(benign)} = {false / len(benign):5.1%}"
            )
            if show_misses:
                for e in positives:
                    if verdicts[e.line] is None:
                        print(f"    missed L{e.line}: {e.template}")
                for e in benign:
                    if marker in (verdicts[e.line] or ""):
                        print(f"    refused L{e.line}: {e.template}")


def cold_remember(repeat: int) -> None:
    """Median wall time of `cli-org remember` as a fresh process, with the scanner library
    and with its detectors replaced by an empty list (same code otherwise); runs alternate."""
    settings = bench_settings("write_scan_cold", fresh=True)
    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "ORG_AGENT": "bench",
    }
    run = "import sys; from cli_org.faces.cli import main; sys.argv[0] = 'cli-org'; main()"
    without = "import cli_org.checks as c; c._library_detectors = lambda: []; " + run
    times: dict[str, list[float]] = {"with": [], "without": []}
    for i in range(repeat):
        for name, code in (("with", run), ("without", without)):
            claim = f"cold run {name} {i} {time.time_ns()}"
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", code, "remember", "bench", claim, "--source", "docs/bench.md"],
                env=env,
                cwd=ROOT,  # this checkout's code, not whatever the console script was installed from
                check=True,
                capture_output=True,
            )
            times[name].append(time.perf_counter() - started)
    added = median(times["with"]) - median(times["without"])
    print(
        f"cold `cli-org remember`, median of {repeat}: {median(times['with']) * 1000:.0f} ms with the scanner"
        f" library, {median(times['without']) * 1000:.0f} ms without; added {added * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", type=int, default=10, help="cold remember runs (0 to skip)")
    parser.add_argument("--misses", action="store_true", help="list misses and false positives")
    parser.add_argument(
        "--blind", action="store_true", help=f"the blind set ({BLIND.name}, written without seeing the checks), whole"
    )
    parser.add_argument("--cost", type=int, default=1, help="rounds of timed benign inserts (0 to skip)")
    parser.add_argument("--file", type=Path, help="another labelled file, reported whole (e.g. a new blind set)")
    args = parser.parse_args()
    examples = load(args.file) if args.file else load(BLIND) if args.blind else load()
    args.blind = args.blind or args.file is not None
    client = {e.line: client_verdict(e.text) for e in examples}
    report("client", examples, client, args.misses, args.blind)
    settings = bench_settings("write_scan", fresh=True)
    with connect(settings, "bench") as conn:
        db = {e.line: db_verdict(conn, e.text) for e in examples}
        if args.cost:
            insert_cost(conn, examples, args.cost)
    report("database", examples, db, args.misses, args.blind)
    stricter = [e.line for e in examples if db[e.line] and not client[e.line]]
    print(f"refused by the database but not by the client: {len(stricter)}")
    if args.cold:
        cold_remember(args.cold)


if __name__ == "__main__":
    main()
