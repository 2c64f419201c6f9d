"""The web page's speed (issue 15): server time per page, and the page under 16 clients.

Two databases, each its own on the benchmark's embedded server:

- `sample`: the shipped sample (eval/sample), loaded with scripts/load-sample.sh, as the
  demo has it (agents, 21 facts, the vault scanned and embedded).
- `scale`: 100,000 synthetic facts (COPY, as benchmarks/scale.py loads them) and 1,000
  archived sessions (Claude Code transcripts written to a folder and imported with the real
  importer), the sample's vault, and a day's work by its agents through the library (writes,
  supersessions, retirements, pins, notebook edits, todos, logged recalls, two saved
  evaluation runs): what the activity, agent, notebook, todo and evaluation pages read.

Per-page server time: the application in-process (create_app over one pool, as
`cli-org serve` makes it) with a timing middleware outermost, so each figure is the time
from the request reaching the application to its response (the guard, the library call,
the queries and the template), without any network. Every page in PAGES that a router
serves, and the Facts page's heavier forms (a fact's history, text search, all facts, a
deep page), plus their /api twins; --warm requests untimed first, then --requests timed.
Every GET route the routers serve is timed, its path parameters filled from the database
(the newest fact, session, recall, run; the busiest agent). Targets (issues 15, 26): p95
under 100 ms on the sample, under 300 ms at scale.

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
N_FACTS = 100_000  # issue 26: every page <= 300 ms at 100k facts and 1,000 sessions
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
    from cli_org.db.connect import connect

    with connect(settings) as conn:
        ids = [r["id"] for r in conn.execute("SELECT id FROM memory_facts ORDER BY id").fetchall()]
        conn.rollback()
    _day_of_work(settings, AS, "builder", ids, n=10)
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


def load_scale(n_facts: int = N_FACTS):
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
        scale.load_facts(conn, n_facts, scale.Words(15), timings)
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
    started = time.perf_counter()
    _day_of_work(settings, AS, scale.AGENT, ids)
    timings["day_of_work_s"] = round(time.perf_counter() - started, 1)
    print(f"scale: {len(ids)} facts, {N_SESSIONS} sessions loaded {timings}", file=sys.stderr)
    return settings


def _day_of_work(settings, person: str, bot: str, ids: list[int], n: int = 40) -> None:
    """What a day of agents leaves in the store, through the library as each agent: new and
    superseding facts, retirements and a restore, pins, notebook edits, todos, recalls logged
    with their hits; the sample's vault indexed; two saved evaluation runs of different k."""
    from cli_org.db.connect import connect
    from cli_org.evaluation import load_golden, run_golden, save_run
    from cli_org.recall.answer import recall
    from cli_org.store import facts, notebook, todos
    from cli_org.vault.scan import scan

    with connect(settings) as conn:
        scan(conn, ROOT / "eval" / "sample" / "vault")
    with connect(settings, bot) as conn:
        previous = None
        for i in range(n):
            claim = f"Step {i} of the deploy runs after the smoke test."
            supersedes = previous if i % 2 else None  # every other one corrects the one before
            new = facts.remember(conn, f"deploy step {i}", claim, source=f"runbooks/{i}.md", supersedes=supersedes)
            if i % 5 == 0:
                facts.forget(conn, new.id, "replaced by the new runbook")
            if i % 10 == 0:
                facts.restore(conn, new.id, "the new runbook was withdrawn")
            previous = None if i % 10 == 5 else new.id  # a retired fact is not superseded
            notebook.add(conn, "memory", f"note {i}: warm the staging cache")
            todo = todos.add_todo(conn, f"check deploy step {i}", "app")
            if i % 2:
                todos.done_todo(conn, todo.id)
            recall(conn, f"deploy step {i} smoke test", settings=settings, log=True)
    with connect(settings, person) as conn:
        cases = load_golden(ROOT / "eval" / "golden.test.txt")
        for k in (5, 8):
            run = run_golden(conn, cases, settings=settings, limit=k)
            save_run(conn, f"golden-k{k}", run, golden_file="eval/golden.test.txt", project=None)


def _get_routes() -> list[str]:
    """Every GET path template the routers serve (pages and /api), in the routers' order."""
    from cli_org.faces.web.pages import ROUTERS

    return [
        route.path
        for router in ROUTERS
        for route in router.routes
        if "GET" in (getattr(route, "methods", None) or ()) and getattr(route, "path", "")
    ]


def _params(settings) -> dict[str, str]:
    """A value for each path parameter a route may take, read from the database: the newest
    of each (the heaviest on a real store is the busiest agent's page and the newest fact)."""
    from cli_org.db.connect import connect

    queries = {
        "fact_id": "SELECT max(id)::text AS v FROM memory_facts",
        "name": "SELECT author AS v FROM memory_facts GROUP BY author ORDER BY count(*) DESC LIMIT 1",
        "session_id": "SELECT external_id AS v FROM archive_sessions ORDER BY started_at DESC NULLS LAST LIMIT 1",
        "event_id": "SELECT max(id)::text AS v FROM recall_events",
        "run_id": "SELECT max(id)::text AS v FROM eval_runs",
        "path": "SELECT path AS v FROM vault_files WHERE NOT private ORDER BY size DESC, path LIMIT 1",
        "run": "SELECT name AS v FROM eval_runs ORDER BY id DESC LIMIT 1",
        "run_author": "SELECT author AS v FROM eval_runs ORDER BY id DESC LIMIT 1",
        "run_before": "SELECT name AS v FROM eval_runs ORDER BY id DESC OFFSET 1 LIMIT 1",
        "word": "SELECT split_part(subject, ' ', 1) AS v FROM memory_facts ORDER BY id LIMIT 1",
        "pages": "SELECT (count(*) / 100 / 2 + 1)::text AS v FROM memory_facts",
    }
    out: dict[str, str] = {}
    with connect(settings) as conn:
        for key, query in queries.items():
            try:
                row = conn.execute(query).fetchone()
            except Exception:  # a table a branch has not made: that parameter is skipped
                conn.rollback()
                continue
            if row and row["v"] is not None:
                out[key] = row["v"]
        conn.rollback()
    return out


# Path parameters by name, and the names the routers give them (each page module names its own).
ALIASES = {"id": ("fact_id", "session_id", "event_id", "run_id"), "agent": ("name",), "note": ("path",)}
# Where a route's parameter means something else than elsewhere: (path prefix, parameter) -> value's key.
BY_PREFIX = {("/evaluation/runs/", "name"): "run", ("/api/eval/runs/", "name"): "run"}
BY_PREFIX |= {("/vault/", "name"): "path", ("/api/vault/", "name"): "path"}
BY_PREFIX |= {(prefix, "author"): "run_author" for prefix in ("/evaluation/runs/", "/api/eval/runs/")}
# Routes that need a query string to answer: the string, from the values' keys.
QUERIES = {"/evaluation/compare": "?a={run_before}&b={run}", "/api/eval/compare": "?a={run_before}&b={run}"}
QUERIES |= {"/api/eval/previous": "?run={run}", "/api/sessions/search": "?q=tests+pass"}


def pages_for(settings) -> tuple[list[str], list[str]]:
    """Every GET route the routers serve, its parameters filled from the database, then the
    Facts page's heavier forms and a question searched; and the routes skipped, with why."""
    import re

    values = _params(settings)
    paths, skipped = [], []
    for template in _get_routes():
        if template.startswith("/static") or template == "/api/openapi.json" or template == "/":
            continue
        names = re.findall(r"{(\w+)(?::\w+)?}", template)
        filled = template
        for name in names:
            keys = [k for (pre, n), k in BY_PREFIX.items() if n == name and template.startswith(pre)]
            special = values.get(keys[0]) if keys else None
            value = special or values.get(name) or next((values[a] for a in ALIASES.get(name, ()) if a in values), None)
            if value is None:
                break
            filled = re.sub(r"{" + name + r"(?::\w+)?}", value, filled)
        if template in QUERIES:
            try:
                filled += QUERIES[template].format(**values)
            except KeyError:
                filled += "{"
        if "{" in filled:
            skipped.append(f"{template} (no value for its parameters)")
            continue
        paths.append(filled)
    word = values.get("word", "deploy")
    paths += [f"/facts?q={word}", "/facts?all=true", f"/facts?page={values.get('pages', '1')}"]
    paths += [f"/search?q={word}+deploy"]
    return list(dict.fromkeys(paths)), skipped


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
                first = client.get(path)
                if first.status_code == 422 and "?" not in path:  # a route that needs a question
                    path = f"{path}?q=deploy"
                    first = client.get(path)
                if first.status_code != 200:  # said, not timed: a page must answer 200 to count
                    out[path] = {"status": first.status_code}
                    print(f"  {path}: answered {first.status_code}, not timed", file=sys.stderr)
                    continue
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
            if "status" in r:
                lines.append(f"| `{path}` | answered {r['status']} | |")
            else:
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
        paths, skipped = pages_for(settings)
        print(f"{name}: {len(paths)} pages; skipped {skipped}", file=sys.stderr)
        data: dict = {"requests": args.requests, "pages": per_page(settings, paths, args.warm, args.requests)}
        if args.clients:
            served = [path for path, r in data["pages"].items() if "status" not in r]
            data["concurrent"] = concurrent(settings, served, args.clients, args.per_client)
        run["databases"][name] = data
    history = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    RESULTS.write_text(json.dumps([*history, run], indent=1) + "\n")
    print(table(run))


if __name__ == "__main__":
    main()
