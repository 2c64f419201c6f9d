"""The web page's speed (issue 15): server time per page, and the page under 16 clients.

Two databases, each its own on the benchmark's embedded server:

- `sample`: the shipped sample (eval/sample), loaded with scripts/load-sample.sh, as the
  demo has it (agents, 21 facts, the vault scanned and embedded).
- `scale`: 10,000 synthetic facts (COPY, as benchmarks/scale.py loads them) and 1,000
  archived sessions (Claude Code transcripts written to a folder and imported with the real
  importer), with a few pins.

Per-page server time: the application in-process (create_app over one pool, as
`cli-org serve` makes it) with a timing middleware outermost, so each figure is the time
from the request reaching the application to its response (the guard, the library call,
the queries and the template), without any network. Every page in PAGES that a router
serves, and the Facts page's heavier forms (a fact's history, text search, all facts, a
deep page), plus their /api twins; --warm requests untimed first, then --requests timed.
Targets (issue 15): under 100 ms on the sample, under 300 ms at scale.

Concurrency (issue 14's leftover): a real `cli-org serve` process (uvicorn) and 16 client
threads, each making --per-client requests over the same pages over its own keep-alive
connection; requests per second, p50/p95 per request, and the count of errors (anything
but 200), which must be 0. Bounded in count; loopback only.

    python -m benchmarks.web [--only sample|scale] [--requests 100] [--clients 16]

Results are appended to benchmarks/web-results.json; the table is printed as Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .common import ROOT, WORK, bench_settings, median, percentile

RESULTS = ROOT / "benchmarks" / "web-results.json"
AS = "mara"  # the sample's owner; the scale database gets one of the same name
N_FACTS = 10_000
N_SESSIONS = 1_000
TARGET_MS = {"sample": 100, "scale": 300}  # issue 15


def _env(settings) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CLI_ORG_DATA_DIR", str(WORK / "data"))
    env["CLI_ORG_DATABASE"] = settings.database_name
    env.pop("ORG_AGENT", None)
    return env


def load_sample():
    settings = bench_settings("web_sample", fresh=True)
    env = {**_env(settings), "ORG_ROOT": str(ROOT / "eval" / "sample")}
    subprocess.run(["bash", str(ROOT / "scripts" / "load-sample.sh")], env=env, check=True, cwd=ROOT)
    return settings


def _claude_line(session: str, uuid: str, block: dict, at: datetime) -> str:
    message = {"role": "assistant", "id": "msg-" + uuid, "model": "m", "content": [block]}
    record = {"type": "assistant", "sessionId": session, "uuid": uuid, "timestamp": at.isoformat(), "cwd": "/w/app"}
    return json.dumps({**record, "message": message}) + "\n"


def _write_sessions(folder: Path, n: int, fact_ids: list[int]) -> None:
    """n sessions over the last 60 days, each a recall, its result quoted or not, and a few
    ordinary steps (eight messages)."""
    project = folder / "-w-app"
    project.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    for i in range(n):
        start = now - timedelta(hours=1 + (i * 60 * 24) / n)
        sid = f"s{i:05d}"
        fid = fact_ids[i % len(fact_ids)]
        steps = [
            {"type": "text", "text": f"Looking at task {i}."},
            {"type": "tool_use", "id": f"r{i}", "name": "Bash", "input": {"command": f'cli-org recall "task {i}"'}},
            {"type": "text", "text": f"Fact #{fid} applies here." if i % 3 else "Nothing relevant found."},
            {"type": "tool_use", "id": f"b{i}", "name": "Bash", "input": {"command": "make test"}},
            {"type": "text", "text": "Tests pass."},
            {"type": "tool_use", "id": f"m{i}", "name": "mcp__cli-org__org_remember", "input": {"subject": "x"}},
            {"type": "text", "text": "Remembered what was learned."},
            {"type": "text", "text": "Done."},
        ]
        lines = [_claude_line(sid, f"{sid}-{k}", b, start + timedelta(seconds=k)) for k, b in enumerate(steps)]
        (project / f"{sid}.jsonl").write_text("".join(lines))


def load_scale():
    from cli_org.archive.importer import import_sessions
    from cli_org.db.connect import connect
    from cli_org.store.agents import add_agent
    from cli_org.store.pins import pin

    from . import scale

    settings = bench_settings("web_scale", fresh=True)
    with connect(settings) as conn:
        add_agent(conn, AS, person=True, owner=True)
        add_agent(conn, scale.AGENT, lead=AS)
        conn.commit()
        timings: dict = {}
        scale.load_facts(conn, N_FACTS, scale.Words(15), timings)
        ids = [r["id"] for r in conn.execute("SELECT id FROM memory_facts ORDER BY id").fetchall()]
    with connect(settings, AS) as conn:
        for fid in ids[:5]:
            pin(conn, fid)
    with tempfile.TemporaryDirectory() as tmp:
        _write_sessions(Path(tmp), N_SESSIONS, ids)
        started = time.perf_counter()
        with connect(settings) as conn:
            import_sessions(conn, {"claude-code": Path(tmp)})
        timings["sessions_import_s"] = round(time.perf_counter() - started, 1)
    print(f"scale: {len(ids)} facts, {N_SESSIONS} sessions loaded {timings}", file=sys.stderr)
    return settings


def _served() -> set[str]:
    from cli_org.faces.web.pages import ROUTERS

    return {getattr(route, "path", "") for router in ROUTERS for route in router.routes}


def pages_for(settings) -> list[str]:
    """Every served page of the navigation, then the Facts page's heavier forms and the API."""
    from cli_org.db.connect import connect
    from cli_org.faces.web.view import PAGES

    with connect(settings) as conn:
        row = conn.execute(
            "SELECT max(id) AS fid, count(*) AS n, (SELECT split_part(subject, ' ', 1) FROM memory_facts"
            " ORDER BY id LIMIT 1) AS word FROM memory_facts"
        ).fetchone()
    fid, n, word = row["fid"], row["n"], row["word"]
    served = _served()
    paths = [path for path, _ in PAGES if path in served]
    deep = max(1, (n // 100) // 2)
    paths += [f"/facts/{fid}", f"/facts?q={word}", "/facts?all=true", f"/facts?page={deep}"]
    paths += ["/api/facts", f"/api/facts/{fid}", "/api/pins"]
    # A question searched. (A recall is a POST since issue 21; benchmarks/web_agents.py times it.)
    paths += [f"{page}?q={word}+deploy" for page in ("/search",) if page in served]
    return paths


def per_page(settings, paths: list[str], warm: int, requests: int) -> dict[str, dict]:
    from fastapi.testclient import TestClient

    from cli_org.faces.web.app import create_app, opened
    from cli_org.faces.web.guard import hosts_for, new_token

    timings: list[float] = []
    out: dict[str, dict] = {}
    with opened(settings, AS, token=new_token(), hosts=hosts_for("127.0.0.1", 8765)) as web:
        app = create_app(web)

        async def timed(request, call_next):  # outermost: the guard, the route, the template
            started = time.perf_counter()
            response = await call_next(request)
            timings.append(time.perf_counter() - started)
            return response

        app.middleware("http")(timed)
        auth = {"Authorization": f"Bearer {web.token}"}
        with TestClient(app, base_url="http://127.0.0.1:8765", headers=auth) as client:
            for path in paths:
                for _ in range(warm):
                    assert client.get(path).status_code == 200, path
                timings.clear()
                for _ in range(requests):
                    got = client.get(path)
                    assert got.status_code == 200, (path, got.status_code)
                ms = [t * 1000 for t in timings]
                out[path] = {"n": len(ms), "median_ms": round(median(ms), 1), "p95_ms": round(percentile(ms, 0.95), 1)}
                print(f"  {path}: {out[path]}", file=sys.stderr)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def concurrent(settings, paths: list[str], clients: int, per_client: int) -> dict:
    """A real server, `clients` threads each with its own keep-alive connection."""
    import httpx

    from cli_org.faces.web.guard import new_token

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    token = new_token()
    auth = {"Authorization": f"Bearer {token}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli_org", "serve", "--port", str(port), "--as", AS],
        env={**_env(settings), "CLI_ORG_WEB_TOKEN": token},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(urllib.request.Request(base + "/facts", headers=auth), timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("cli-org serve did not start") from None
                time.sleep(0.3)
        latencies: list[list[float]] = [[] for _ in range(clients)]
        errors = [0] * clients
        start = threading.Barrier(clients + 1)

        def client(k: int) -> None:
            with httpx.Client(base_url=base, timeout=60, headers=auth) as http:
                http.get(paths[0])  # connect before the clock starts
                start.wait()
                for i in range(per_client):
                    path = paths[(k + i) % len(paths)]
                    began = time.perf_counter()
                    try:
                        ok = http.get(path).status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    latencies[k].append(time.perf_counter() - began)
                    errors[k] += not ok

        threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
        for t in threads:
            t.start()
        start.wait()
        began = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    ms = [t * 1000 for per in latencies for t in per]
    return {
        "clients": clients,
        "requests": len(ms),
        "rps": round(len(ms) / wall, 1),
        "p50_ms": round(median(ms), 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
        "errors": sum(errors),
    }


def table(run: dict) -> str:
    lines = []
    for name, data in run["databases"].items():
        lines.append(f"\n{name} (target < {TARGET_MS[name]} ms; {data['requests']} timed requests a page)\n")
        lines.append("| page | median ms | p95 ms |")
        lines.append("| --- | ---: | ---: |")
        for path, r in data["pages"].items():
            lines.append(f"| `{path}` | {r['median_ms']} | {r['p95_ms']} |")
        c = data.get("concurrent")
        if c:
            lines.append(
                f"\n{c['clients']} clients, real server: {c['requests']} requests, {c['rps']} requests/s, "
                f"p50 {c['p50_ms']} ms, p95 {c['p95_ms']} ms, errors {c['errors']}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["sample", "scale"])
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--per-client", type=int, default=25)
    parser.add_argument("--reuse", action="store_true", help="keep the databases a previous run loaded")
    args = parser.parse_args()
    run: dict = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "databases": {}}
    for name in ("sample", "scale"):
        if args.only and name != args.only:
            continue
        load = {"sample": load_sample, "scale": load_scale}[name]
        settings = bench_settings(f"web_{name}") if args.reuse else load()
        paths = pages_for(settings)
        print(f"{name}: {len(paths)} pages", file=sys.stderr)
        data: dict = {"requests": args.requests, "pages": per_page(settings, paths, args.warm, args.requests)}
        if args.clients:
            data["concurrent"] = concurrent(settings, paths, args.clients, args.per_client)
        run["databases"][name] = data
    history = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    RESULTS.write_text(json.dumps([*history, run], indent=1) + "\n")
    print(table(run))


if __name__ == "__main__":
    main()
