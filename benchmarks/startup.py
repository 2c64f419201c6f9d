"""`cli-org recall` as a whole process, cold and warm, on the TIL vault (with the sample's
facts and memory files beside it): wall time of `python -m cli_org recall QUESTION` from
spawn to exit, the runs of every variant interleaved so load on the shared machine falls
on all of them alike.

    python -m benchmarks.startup [--runs 25] [--before PATH]

Variants: `python -c pass` (the floor: an interpreter that does nothing), `cold`
(CLI_ORG_WARM=0), `warm` (the first request to a helper just started), `first use` (helper
on but not running: the cold answer plus launching one; it is stopped after each run), `warm,
steady` (a helper that has answered before), and with --before, `cold before`: the cold run
of another checkout (the code before a change). Also the `-X importtime` of a cold and of a
warm run, by package.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_org.evaluation import load_golden
from cli_org.faces.warm.server import status

from .common import ROOT, bench_settings, median, percentile
from .recall_eval import SAMPLE


def _env(settings, **extra) -> dict[str, str]:
    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "CLI_ORG_DATABASE_URL": settings.database_url or "",
        "ORG_ROOT": str(SAMPLE),
        "CLI_ORG_WARM_DIR": str(Path(settings.data_dir).parent / "warm"),
        **extra,
    }
    env.pop("ORG_AGENT", None)
    return env


def _time(args: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(args, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def _wait(predicate, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the helper did not change state in time")
        time.sleep(0.05)


def _stop(env) -> None:
    found = status(env)
    if found.running and found.pid:
        os.kill(found.pid, signal.SIGTERM)
        _wait(lambda: not status(env).running)


def importtime(args: list[str], env, cwd: Path, top: int = 10) -> dict:
    """Import time by package (the sum of each module's own time, so the parts add up)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", *args[1:]], env=env, cwd=cwd, capture_output=True, text=True, check=True
    )
    totals: dict[str, int] = {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _cumulative, name = line[len("import time:") :].split("|")
        package = name.strip().split(".")[0]
        totals[package] = totals.get(package, 0) + int(own)
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    return {
        "modules": sum(1 for line in out.stderr.splitlines() if line.startswith("import time:")) - 1,
        "total_ms": round(sum(totals.values()) / 1000),
        "top_ms": {k: round(v / 1000) for k, v in ranked[:top]},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--before", type=Path, help="another checkout whose cold recall to time alongside")
    opts = parser.parse_args()

    settings = bench_settings("til")  # as `til_search` and `recall_eval` leave it: scanned and embedded
    questions = [c.question for c in load_golden(ROOT / "eval" / "til-golden.test.txt")]
    cold_env = _env(settings, CLI_ORG_WARM="0")
    warm_env = _env(settings, CLI_ORG_WARM="1")
    cmd = [sys.executable, "-m", "cli_org", "recall"]
    variants: dict[str, list[float]] = {"python -c pass": [], "cold": [], "warm": [], "first use": []}
    if opts.before:
        variants["cold before"] = []
        before_env = {**cold_env, "PYTHONPATH": str(opts.before)}

    _stop(warm_env)
    for i in range(opts.runs + 2):
        q = questions[i % len(questions)]
        timed: dict[str, float] = {}
        timed["python -c pass"] = _time([sys.executable, "-c", "pass"], cold_env, ROOT)  # the floor of any process
        timed["cold"] = _time([*cmd, q], cold_env, ROOT)
        if opts.before:
            timed["cold before"] = _time([*cmd, q], before_env, opts.before)
        # First use: no helper; the cold answer launches one, which is then stopped.
        timed["first use"] = _time([*cmd, q], warm_env, ROOT)
        _wait(lambda: status(warm_env).running)
        timed["warm"] = _time([*cmd, q], warm_env, ROOT)
        _stop(warm_env)
        if i >= 2:  # the first rounds fill the page cache
            for name, seconds in timed.items():
                variants[name].append(seconds)
        print(i, {k: round(v, 3) for k, v in timed.items()}, file=sys.stderr, flush=True)

    # A helper that has answered a few times already (its caches warm), timed on its own.
    subprocess.run([*cmd, questions[0]], env=warm_env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    _wait(lambda: status(warm_env).running)
    steady = []
    for i in range(opts.runs + 3):
        seconds = _time([*cmd, questions[i % len(questions)]], warm_env, ROOT)
        if i >= 3:
            steady.append(seconds)
    variants["warm, steady"] = steady
    profiles = {
        "cold": importtime([*cmd, questions[0]], cold_env, ROOT),
        "warm": importtime([*cmd, questions[0]], warm_env, ROOT),
    }
    if opts.before:
        profiles["cold before"] = importtime([*cmd, questions[0]], before_env, opts.before)
    _stop(warm_env)
    result = {
        name: {"runs": len(times), "p50_s": round(median(times), 3), "p95_s": round(percentile(times, 0.95), 3)}
        for name, times in variants.items()
    }
    print(json.dumps({"wall": result, "importtime": profiles}, indent=1))


if __name__ == "__main__":
    main()
