"""A database blip under the long-lived faces, as a user meets it: the embedded server
stopped and started again under a running `cli-org serve` and a warm helper.

    python -m benchmarks.blip [--runs 5] [--hooks 5] [--before PATH]

For each checkout (this one, and with --before another, e.g. the code before a change, run
from there, each on a server of its own in a new temporary folder):
- page down: seconds from asking for /facts to its answer with the server stopped (median
  and max of --runs), its status, and whether it names `cli-org db start`;
- next after start: of --runs restarts (`db stop`, `db start`, no request in between), how
  many first requests were served (200);
- hooks: of --hooks restarts, how many first SessionStart hooks delivered the context block
  (the fact's claim) from the warm helper, and how many the helper answered itself.
Checkouts that wait out a pool timeout with the server down take 30 s per page.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from .common import ROOT

CLAIM = "Deploys go out from the release branch on Tuesdays"


class Checkout:
    """One checkout's CLI, on a server of its own in `work`."""

    def __init__(self, code: Path, work: Path) -> None:
        self.code = code
        self.work = work
        self.env = {
            **os.environ,
            "PYTHONPATH": str(code),
            "CLI_ORG_DATA_DIR": str(work / "data"),
            "CLI_ORG_DATABASE": "blip",
            "CLI_ORG_DATABASE_URL": "",
            "CLI_ORG_WARM": "0",
            "CLI_ORG_WARM_DIR": str(work / "w"),
            "HF_HUB_OFFLINE": "1",
            "ORG_AGENT": "boss",
        }

    def cli(self, *args: str, stdin: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli_org", *args],
            cwd=self.code,
            env={**self.env, **extra},
            input=stdin,
            capture_output=True,
            text=True,
            timeout=180,
        )

    def spawn(self, *args: str, **extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "cli_org", *args],
            cwd=self.code,
            env={**self.env, **extra},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def restart(self) -> None:
        for step in ("stop", "start"):
            done = self.cli("db", step)
            assert done.returncode == 0, done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str, token: str) -> tuple[int, str, float]:
    """Status, body and seconds of one GET (a page that never answers counts as 0 after 120 s)."""
    ask = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {token}"})
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(ask, timeout=120) as answer:
            status, body = answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read().decode()
    except OSError:
        status, body = 0, ""
    return status, body, time.perf_counter() - began


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def web(c: Checkout, runs: int) -> dict:
    port, token = _free_port(), secrets.token_urlsafe(24)
    server = c.spawn("serve", "--as", "boss", "--port", str(port), CLI_ORG_WEB_TOKEN=token)
    try:
        deadline = time.monotonic() + 60
        while _get(port, "/api/facts", token)[0] != 200:
            assert server.poll() is None and time.monotonic() < deadline, "the web server did not start"
            time.sleep(0.2)
        down, statuses, named, next_ok = [], [], 0, 0
        for _ in range(runs):
            assert c.cli("db", "stop").returncode == 0
            status, body, seconds = _get(port, "/facts", token)
            down.append(seconds)
            statuses.append(status)
            named += "cli-org db start" in body
            assert c.cli("db", "start").returncode == 0
            c.restart()  # and once more with no request in between: the idle connections die
            next_ok += _get(port, "/api/facts", token)[0] == 200
        return {
            "page_down_s": {"median": round(statistics.median(down), 3), "max": round(max(down), 3)},
            "page_down_status": sorted(set(statuses)),
            "page_down_names_fix": f"{named} of {runs}",
            "next_after_start_ok": f"{next_ok} of {runs}",
        }
    finally:
        _stop(server)


def hooks(c: Checkout, n: int) -> dict:
    helper = c.spawn("warm", "serve", "--idle", "300", CLI_ORG_WARM="1")
    try:
        deadline = time.monotonic() + 60
        while '"running": true' not in c.cli("warm", "status", "--json", CLI_ORG_WARM="1").stdout:
            assert helper.poll() is None and time.monotonic() < deadline, "the warm helper did not start"
            time.sleep(0.2)
        delivered = answered = 0
        for i in range(n):
            c.restart()
            before = json.loads(c.cli("warm", "status", "--json", CLI_ORG_WARM="1").stdout)["requests"]
            start = {"session_id": f"blip-{i}", "cwd": str(c.code), "hook_event_name": "SessionStart"}
            out = c.cli("hook", "claude-code", "session-start", stdin=json.dumps(start), CLI_ORG_WARM="1").stdout
            delivered += CLAIM in out
            answered += json.loads(c.cli("warm", "status", "--json", CLI_ORG_WARM="1").stdout)["requests"] > before
        return {"hooks_delivered": f"{delivered} of {n}", "hooks_answered_by_helper": f"{answered} of {n}"}
    finally:
        _stop(helper)


def measure(code: Path, runs: int, n_hooks: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="cli-org-blip-"))
    c = Checkout(code, work)
    try:
        for args in (("init", "--owner", "boss"), ("remember", "deploy", CLAIM, "--source", "docs/deploy.md")):
            done = c.cli(*args)
            assert done.returncode == 0, done.stderr
        return {"checkout": str(code), **web(c, runs), **hooks(c, n_hooks)}
    finally:
        c.cli("db", "stop")
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hooks", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another checkout to measure the same way, first")
    args = parser.parse_args()
    load = [os.getloadavg()]
    results = [measure(args.before.resolve(), args.runs, args.hooks)] if args.before else []
    results.append(measure(ROOT, args.runs, args.hooks))
    load.append(os.getloadavg())
    print(
        json.dumps(
            {
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "command": "python -m benchmarks.blip " + " ".join(sys.argv[1:]),
                "load_before_after": [[round(x, 2) for x in avg] for avg in load],
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
