"""Many `cli-org mcp` servers behind PgBouncer in transaction mode: each MCP client (the SDK's
stdio client) spawns its own server whose CLI_ORG_DATABASE_URL is the pooler, logged in as its
own agent (or as one of --agents logins); all of them share at most SERVER_CONNECTIONS server
connections. Each client calls org_recall, org_remember and org_context in a random mix,
pausing THINK seconds on average between calls, for SECONDS after every client is up.

Reports: how long all servers took to start (spawn to the first answered org_context, which
needs the server's pool open), how many opened it, failed calls (target 0), p50/p95 per tool,
calls per second, the most server connections seen (pg_stat_activity), and each server's
start-up cost (CPU, resident and private memory, read from /proc once all are up).

    python -m benchmarks.pooler --clients 200 --seconds 60 --think 20

Think time: 20 s by default (the pause drawn evenly from 0 to 40 s), an agent's turn between
two tool calls: the model reads the answer and writes its next step, often running a command
or an edit between them, which takes seconds to tens of seconds at a hosted model's speed (an
estimate, not a measurement; operations.md's earlier runs used the same 20 s). --think 2 is
a stress test of the pooler, not a team of agents.

Needs Debian's pgbouncer (apt-get install pgbouncer). Each server takes 1.6 to 1.8 s of CPU to
start on this 2-core machine, so 200 starting at once take minutes here (the figures: the
report's `server_start`).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path

import anyio
import psycopg
from mcp import ClientSession, StdioServerParameters, stdio_client
from psycopg import sql as pgsql

from cli_org.db.connect import admin_conninfo, connect
from cli_org.store.agents import add_agent
from cli_org.store.facts import remember

from .common import ROOT, bench_settings, drop_database, median, percentile

PGBOUNCER = "/usr/sbin/pgbouncer"
SERVER_CONNECTIONS = 20
WORDS = "deploy build cache runner queue index backup billing search gateway worker shard".split()  # noqa: SIM905
QUESTIONS = [f"how does the {w} {v}?" for w in WORDS for v in ("fail", "scale", "restart")]


def _free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_pgbouncer(settings, logins: dict[str, str], folder: Path, clients: int) -> tuple[subprocess.Popen, int]:
    """PgBouncer in transaction mode before the embedded server's TCP port. PgBouncer keeps a
    pool per login, and a server connection logs in as its client's login, so an agent's own
    login is its identity in PostgreSQL (row-level security) through the pooler too. With as
    many logins as servers: max_db_connections caps them all at SERVER_CONNECTIONS, and a
    login whose pool is empty gets one by PgBouncer closing another login's idle one (so no
    server_idle_timeout is needed for pools to take turns); each pool holds at most its
    share (default_pool_size), no reserve. With a few shared logins (--agents 4): each one's
    pool is SERVER_CONNECTIONS / agents. (Measured with 4 logins: one shared cap with idle
    connections closed after 10 s made new server connections all run long; each paid the
    write checks' first-write cost again.)"""
    server = psycopg.conninfo.conninfo_to_dict(admin_conninfo(settings))
    port, name = _free_port(), settings.database_name
    (folder / "users.txt").write_text("".join(f'"{r}" "{p}"\n' for r, p in logins.items()))
    (folder / "pgbouncer.ini").write_text(
        f"[databases]\n{name} = host=127.0.0.1 port={server['port']} dbname={name}\n"
        f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = scram-sha-256\nauth_file = {folder / 'users.txt'}\npool_mode = transaction\n"
        f"default_pool_size = {max(1, SERVER_CONNECTIONS // len(logins))}\nreserve_pool_size = 0\n"
        f"max_db_connections = {SERVER_CONNECTIONS}\nmax_client_conn = {clients + 100}\n"
    )
    argv = [PGBOUNCER, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        folder.chmod(0o755)
        for name in ("users.txt", "pgbouncer.ini"):
            os.chown(folder / name, pwd.getpwnam("nobody").pw_uid, -1)
        argv = ["runuser", "-u", "nobody", "--", *argv]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=(folder / "pgbouncer.log").open("w"))
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError((folder / "pgbouncer.log").read_text())


def drop_roles(settings) -> None:
    """The agents' roles of an earlier run (roles outlive the dropped database)."""
    with psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True) as conn:
        for (role,) in conn.execute(
            "SELECT rolname FROM pg_roles WHERE rolname LIKE 'bench\\_pooler\\_pooled%'"
        ).fetchall():
            conn.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(role)))


def seed(settings, agents: int) -> dict[str, str]:
    """Agents with logins, and a few facts per word; returns role -> password."""
    drop_roles(settings)
    logins = {}
    with connect(settings) as conn:
        for i in range(agents):
            password = secrets.token_urlsafe(12)
            role = add_agent(conn, f"pooled{i}", password=password).role_name
            logins[role] = password
        conn.commit()
    with connect(settings, "bench") as conn:
        for n, w in enumerate(WORDS):
            remember(conn, w, f"the {w} restarts after {n + 2} failed checks in a row", source="#seed")
    return logins


def _leaf(exc: BaseException) -> str:
    """The exception inside any task-group wrapping, in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _last_line(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "(nothing on stderr)"


async def client(i: int, url: str, stop_at: list[float], ready: list[int], think: float, out: dict, logs: Path):
    env = {**os.environ, "CLI_ORG_DATABASE_URL": url, "ORG_AGENT": "", "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "cli_org", "mcp"], env=env, cwd=str(ROOT))
    rng = random.Random(i)
    log = logs / f"server-{i}.log"
    with log.open("w") as errlog:
        try:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                first = await session.call_tool("org_context", {})  # the server is up, its pool open
                if first.is_error:
                    raise RuntimeError(first.content[0].text)
                out["up"] += 1
                ready[0] += 1
                while not stop_at:
                    await anyio.sleep(0.1)
                n = 0
                while time.monotonic() < stop_at[0]:
                    await anyio.sleep(rng.uniform(0, 2 * think))
                    tool = rng.choice(("org_recall", "org_recall", "org_context", "org_remember"))
                    args = {
                        "org_recall": {"question": rng.choice(QUESTIONS)},
                        "org_context": {},
                        "org_remember": {
                            "subject": rng.choice(WORDS),
                            "claim": f"client {i} saw the {rng.choice(WORDS)} take {n} minutes "
                            f"on try {rng.randint(1, 10**6)}",
                            "source": f"#c{i}",
                        },
                    }[tool]
                    started = time.perf_counter()
                    try:
                        result = await session.call_tool(tool, args)
                        failed = result.is_error and result.content[0].text
                    except Exception as exc:  # a broken session counts as an error
                        failed = _leaf(exc)
                    out["ms"].setdefault(tool, []).append((time.perf_counter() - started) * 1000)
                    if failed:
                        out["errors"].append(f"{tool}: {failed}; server: {_last_line(log)}"[:300])
                    n += 1
        except Exception as exc:
            out["errors"].append(f"client {i}: {_leaf(exc)}; server: {_last_line(log)}"[:300])
            ready[0] += 1


def _servers() -> list[int]:
    """The pids of this process's `cli-org mcp` children."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and argv[1:4] == [b"-m", b"cli_org", b"mcp"]:
            found.append(int(stat.parent.name))
    return found


def server_costs() -> dict:
    """What each running server cost to start: CPU (user + system, its threads included),
    resident memory, and its private part (anonymous: not the page cache's shared copy of
    the model and libraries). Read once every server is up and before any timed call."""
    cpu, rss, anon = [], [], []
    tick = os.sysconf("SC_CLK_TCK")
    for pid in _servers():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            memory = {
                line.split(":")[0]: int(line.split()[1]) / 1024
                for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
            }
        except (OSError, ValueError):
            continue
        cpu.append((int(fields[11]) + int(fields[12])) / tick)
        rss.append(memory["Rss"])
        anon.append(memory["Anonymous"])
    return {
        "servers": len(cpu),
        "cpu_s_p50": round(median(cpu), 2) if cpu else None,
        "cpu_s_p95": round(percentile(cpu, 0.95), 2) if cpu else None,
        "rss_mb_p50": round(median(rss)) if rss else None,
        "private_mb_p50": round(median(anon)) if anon else None,
    }


def misattributed(settings, agents: int) -> tuple[int, int]:
    """The clients' facts, and how many of them carry another author than the client's own
    login (client i logs in as agent pooled{i % agents})."""
    with psycopg.connect(admin_conninfo(settings), autocommit=True) as conn:
        rows = conn.execute("SELECT source, author FROM memory_facts WHERE source LIKE '#c%'").fetchall()
    return len(rows), sum(author != f"pooled{int(source[2:]) % agents}" for source, author in rows)


def sample_connections(settings, roles: list[str], stop: threading.Event, seen: list[int]) -> None:
    with psycopg.connect(admin_conninfo(settings), autocommit=True) as conn:
        while not stop.is_set():
            n = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND usename = ANY(%s)",
                (roles,),
            ).fetchone()[0]
            seen.append(n)
            time.sleep(0.2)


async def run(urls: list[str], clients: int, seconds: float, think: float, out: dict, logs: Path) -> None:
    stop_at: list[float] = []
    ready = [0]
    async with anyio.create_task_group() as tg:
        started = time.monotonic()  # from the first spawn (one every 50 ms) to the last server up
        for i in range(clients):
            tg.start_soon(client, i, urls[i % len(urls)], stop_at, ready, think, out, logs)
            await anyio.sleep(0.05)
        while ready[0] < clients:
            await anyio.sleep(0.2)
        out["start_s"] = round(time.monotonic() - started, 1)
        out["server_start"] = server_costs()
        stop_at.append(time.monotonic() + seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--agents", type=int, help="logins the clients share (default: one of its own each)")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", type=float, default=20.0, help="mean pause between a client's calls (s)")
    args = parser.parse_args()
    if not os.access(PGBOUNCER, os.X_OK):
        sys.exit("pgbouncer is not installed: apt-get install -y pgbouncer")
    args.agents = min(args.agents or args.clients, args.clients)
    settings = bench_settings("pooler", fresh=True)
    logins = seed(settings, args.agents)
    folder = Path(tempfile.mkdtemp(prefix="cli-org-bench-pgbouncer-"))
    proc, port = start_pgbouncer(settings, logins, folder, args.clients)
    urls = [f"postgresql://{r}:{p}@127.0.0.1:{port}/{settings.database_name}" for r, p in logins.items()]
    out: dict = {"ms": {}, "errors": [], "up": 0}
    stop, seen = threading.Event(), []
    sampler = threading.Thread(target=sample_connections, args=(settings, list(logins), stop, seen))
    sampler.start()
    try:
        began = time.monotonic()
        anyio.run(run, urls, args.clients, args.seconds, args.think, out, folder)
        wall = time.monotonic() - began - out.get("start_s", 0)
    finally:
        stop.set()
        sampler.join()
        proc.terminate()
        proc.wait()
        (folder / "users.txt").unlink()  # the logins' passwords
        if not out["errors"]:
            shutil.rmtree(folder, ignore_errors=True)
    calls = sum(len(v) for v in out["ms"].values())
    written, wrong = misattributed(settings, args.agents)
    report = {
        "clients": args.clients,
        "agents": args.agents,
        "pool": f"transaction, max_db_connections {SERVER_CONNECTIONS}, default_pool_size "
        f"{max(1, SERVER_CONNECTIONS // args.agents)} per login",
        "seconds": args.seconds,
        "think_s": args.think,
        "all_clients_up_s": out.get("start_s"),
        "servers_with_pool_open": out["up"],
        "server_start": out.get("server_start"),
        "calls": calls,
        "calls_per_s": round(calls / max(wall, 1e-9), 1),
        "errors": len(out["errors"]),
        "first_errors": out["errors"][:5],
        "servers_stderr": str(folder) if out["errors"] else None,
        "tools": {
            t: {"n": len(v), "p50_ms": round(median(v), 1), "p95_ms": round(percentile(v, 0.95), 1)}
            for t, v in sorted(out["ms"].items())
        },
        "server_connections_max": max(seen, default=0),
        "facts_written": written,
        "facts_with_another_author": wrong,
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    print(json.dumps(report, indent=2))
    drop_database(settings)
    drop_roles(settings)


if __name__ == "__main__":
    main()
