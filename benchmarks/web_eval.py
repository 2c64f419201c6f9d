"""The Evaluation page's server time: each page and API call of /evaluation, timed in-process
through the ASGI application (no network, no browser), p50 and p95 over many requests.

Two databases: a small one like the demo's (2 saved runs of the sample's 29 held-out cases)
and a large one (1,000 saved runs of 100 cases each: the history pages 100 runs at a time,
a run page and a comparison read two runs' cases).

    python -m benchmarks.web_eval [--runs 60]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from contextlib import ExitStack

from cli_org.db.connect import connect
from cli_org.evaluation import CaseResult, GoldenRun, figures, save_run

from .common import bench_settings, median, percentile

AGENT = "bench"


def _golden(rng: random.Random, cases: int, k: int = 8) -> GoldenRun:
    results = [
        CaseResult(
            f"generated question number {i} about subject {i % 17}",
            f"expected phrase {i}",
            rng.choice(["fact", "memory", "vault", "vault-paraphrase"]),
            rng.choice([None, 1, 1, 1, 2, 3, 5]),
            rng.randint(200, 2500),
            round(rng.uniform(40, 120), 1),
        )
        for i in range(cases)
    ]
    return GoldenRun(k, figures(results), {}, results)


def _fill(name: str, runs: int, cases: int):
    settings = bench_settings(name, fresh=True)
    rng = random.Random(15)
    with connect(settings, AGENT) as conn:
        for i in range(runs):
            save_run(conn, f"run-{i:04d}", _golden(rng, cases), golden_file="eval/golden.test.txt", project=None)
    return settings


def _time(client, path: str, runs: int) -> dict:
    times = []
    for i in range(runs + 3):
        started = time.perf_counter()
        response = client.get(path)
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (path, response.status_code, response.text[:200])
        if i >= 3:  # the first requests warm the templates and the pool
            times.append(elapsed)
    return {"runs": len(times), "p50_ms": round(median(times), 1), "p95_ms": round(percentile(times, 0.95), 1)}


def measure(settings, runs: int, last: int) -> dict:
    from fastapi.testclient import TestClient

    from cli_org.faces.web.app import create_app, opened
    from cli_org.faces.web.guard import hosts_for, new_token

    a, b = f"run-{last - 1:04d}", f"run-{last:04d}"
    paths = [
        "/evaluation",
        "/api/eval/runs",
        f"/evaluation/runs/{a}",
        f"/api/eval/runs/{a}",
        f"/evaluation/compare?a={a}&b={b}",
        f"/api/eval/compare?a={a}&b={b}",
    ]
    with ExitStack() as stack:
        web = stack.enter_context(opened(settings, AGENT, token=new_token(), hosts=hosts_for("127.0.0.1", 8765)))
        auth = {"Authorization": f"Bearer {web.token}"}
        client = stack.enter_context(TestClient(create_app(web), base_url="http://127.0.0.1:8765", headers=auth))
        return {path: _time(client, path, runs) for path in paths}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=60, help="requests timed per path")
    args = parser.parse_args()
    out = {}
    for label, (saved, cases) in {"2 runs x 29 cases": (2, 29), "1,000 runs x 100 cases": (1000, 100)}.items():
        settings = _fill(f"web_eval_{saved}", saved, cases)
        out[label] = measure(settings, args.runs, saved - 1)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
