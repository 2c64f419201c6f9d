"""Time of the client's write scan on long adversarial input (issue 21: the secret patterns
backtracked, and a 40 KB source took 28 s).

    python -m benchmarks.write_scan_speed [--size 100000]

For each filler (runs of pieces that made patterns backtrack), the worst of three runs of:
check_fact with the filler as its source (refused by its length before any scan), and
find_secret + find_injection over the filler cut to the longest text the scan reads
(checks.MAX_SCANNED); with --unbounded also over the whole filler (once: what the scan
would cost without the bound).
"""

from __future__ import annotations

import argparse
import time

from cli_org.checks import write as checks
from cli_org.errors import InputError

FILLERS = ["a", "A", "a.", "a-", "a_", ".a", "a1_", "Aa", "/", "://", "a:", "x:", "password ", "ignore ", "a "]


def worst(run, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return max(times)


def scan(text: str) -> None:
    checks.find_secret(text)
    checks.find_injection(text)


def refused(text: str) -> None:
    try:
        checks.check_fact("s", "a fact", text)
    except InputError:
        return
    raise AssertionError("a long source was accepted")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000, help="characters of filler")
    parser.add_argument("--unbounded", action="store_true", help="also scan the whole filler (slow)")
    args = parser.parse_args()
    scan("warm up")  # the first scan imports the detector library
    print(f"{'filler':12} {'check_fact':>11} {'scan ' + str(checks.MAX_SCANNED):>11}")
    for unit in FILLERS:
        text = (unit * (args.size // len(unit) + 1))[: args.size]
        bounded = text[: checks.MAX_SCANNED]
        line = f"{unit!r:12} {worst(lambda t=text: refused(t)) * 1000:9.2f}ms"
        line += f" {worst(lambda t=bounded: scan(t)) * 1000:9.1f}ms"
        if args.unbounded:
            line += f"  whole: {worst(lambda t=text: scan(t), 1) * 1000:.0f}ms"
        print(line)


if __name__ == "__main__":
    main()
