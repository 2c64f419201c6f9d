"""Racing writers: `remember` from many sessions of the same agents (nothing lost, nothing
stored twice), notebook adds racing the cap, pins racing the pin caps (never exceeded).

    python -m stress.races [--agents 4] [--threads 7] [--claims 500] [--seed 14]

Each agent logs in over TCP as its own role. The default `remember` race is 4 agents x 7
sessions x 500 claims = 14,000 calls, every claim written by the 7 sessions of its agent.
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable

import psycopg

from cli_org.checks.rules import NOTEBOOK_CAPS, PIN_CAP_ORG, PIN_CAP_PROJECT
from cli_org.errors import InputError, OrgError
from cli_org.store import facts, notebook, pins

Login = Callable[[str], psycopg.Connection]


def _run(workers: list[Callable[[], None]]) -> list[BaseException]:
    """Start every worker at once (a barrier), wait for all; the exceptions they raised."""
    barrier = threading.Barrier(len(workers))
    errors: list[BaseException] = []

    def wrap(work: Callable[[], None]) -> None:
        try:
            barrier.wait()
            work()
        except BaseException as exc:  # noqa: BLE001 - reported, the race goes on
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _watched(
    workers: list[Callable[[], None]], watch: Callable[[], None], stop: threading.Event
) -> list[BaseException]:
    """Run the workers while `watch` reads the live state, until they are done."""
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        return _run(workers)
    finally:
        stop.set()
        watcher.join()


def race_claim(agent: str, i: int) -> str:
    return f"Race claim {i} written by {agent}"


def remember_race(
    login: Login,
    admin: Callable[[], psycopg.Connection],
    agents: list[str],
    threads: int,
    claims: int,
    seed: int = 14,
    text: Callable[[str, int], str] = race_claim,
) -> dict:
    """Every session of an agent writes the same `claims` claims in its own order; claim i of
    an agent is `text(agent, i)`."""
    returned: dict[tuple[str, int], set[int]] = {}
    lock = threading.Lock()
    timings: list[float] = []

    def worker(agent: str, n: int) -> Callable[[], None]:
        def work() -> None:
            order = list(range(claims))
            random.Random(seed * 1000 + n).shuffle(order)
            with login(agent) as conn:
                for i in order:
                    started = time.perf_counter()
                    got = facts.remember(conn, "race", text(agent, i), source="docs/race.md")
                    with lock:
                        timings.append((time.perf_counter() - started) * 1000)
                        returned.setdefault((agent, i), set()).add(got.id)

        return work

    workers = [worker(a, k * len(agents) + j) for j, a in enumerate(agents) for k in range(threads)]
    started = time.perf_counter()
    errors = _run(workers)
    seconds = time.perf_counter() - started
    with admin() as conn:
        rows = conn.execute(
            "SELECT author, claim, count(*) AS n FROM memory_facts WHERE subject = 'race' AND valid_to IS NULL "
            "GROUP BY author, claim"
        ).fetchall()
    stored = {(r["author"], r["claim"]): r["n"] for r in rows}
    wanted = {(a, text(a, i)) for a in agents for i in range(claims)}
    return {
        "calls": len(workers) * claims,
        "errors": [repr(e)[:200] for e in errors],
        "lost": len(wanted - set(stored)),
        "duplicated": sum(1 for n in stored.values() if n > 1),
        "ids_disagree": sum(1 for ids in returned.values() if len(ids) != 1),
        "seconds": round(seconds, 1),
        "ms": _figures(timings),
    }


def notebook_race(
    login: Login, admin: Callable[[], psycopg.Connection], agent: str, threads: int, writes: int, seed: int = 14
) -> dict:
    """Sessions of one agent add entries of random size and now and then remove one, so the
    memory store is at its cap again and again; a watcher reads the live total meanwhile."""
    cap = NOTEBOOK_CAPS["memory"]
    outcomes: Counter = Counter()
    added: set[str] = set()
    removed: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()
    seen_max = [0]

    def watch() -> None:
        with admin() as conn:
            conn.autocommit = True
            while not stop.is_set():
                used = conn.execute(
                    "SELECT coalesce(sum(length(body)), 0) AS n FROM notebook_entries "
                    "WHERE agent = %s AND store = 'memory' AND removed_at IS NULL",
                    (agent,),
                ).fetchone()["n"]
                seen_max[0] = max(seen_max[0], used)

    def worker(n: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(seed * 100 + n)
            with login(agent) as conn:
                for i in range(writes):
                    if rng.random() < 0.25:
                        with lock:
                            mine = sorted(added - removed)
                        if mine:
                            body = rng.choice(mine)
                            try:
                                notebook.remove(conn, "memory", body)
                                with lock:
                                    removed.add(body)
                                outcomes["removed"] += 1
                            except InputError:
                                outcomes["remove refused"] += 1  # another session removed it first
                            continue
                    body = f"entry {n}-{i} " + "x" * rng.randrange(20, 600)
                    try:
                        notebook.add(conn, "memory", body)
                        with lock:
                            added.add(body)
                        outcomes["added"] += 1
                    except notebook.NotebookFull:
                        outcomes["full"] += 1

        return work

    errors = _watched([worker(n) for n in range(threads)], watch, stop)
    with admin() as conn:
        live = {
            r["body"]
            for r in conn.execute(
                "SELECT body FROM notebook_entries WHERE agent = %s AND store = 'memory' AND removed_at IS NULL",
                (agent,),
            )
        }
    return {
        "cap": cap,
        "outcomes": dict(outcomes),
        "errors": [repr(e)[:200] for e in errors],
        "max_seen": seen_max[0],
        "final": sum(len(b) for b in live),
        "lost": len((added - removed) - live),
        "ghosts": len(live - (added - removed)),
    }


def pins_race(
    login: Login, admin: Callable[[], psycopg.Connection], agents: list[str], threads: int, moves: int, seed: int = 14
) -> dict:
    """Sessions of several agents pin and unpin random facts org-wide and in two projects; a
    watcher counts live pins per scope meanwhile; afterwards the pin history is replayed."""
    # Pinning takes the rights of forget (the author, their lead, an owner): each agent pins
    # its own facts, and the caps are shared by all of them.
    org_ids: dict[str, list[int]] = {}
    project_ids: dict[tuple[str, str], list[int]] = {}
    for agent in agents:
        with login(agent) as conn:
            org_ids[agent] = [
                facts.remember(conn, "pins", f"Org pin candidate {i} of {agent}", source="docs/p.md").id
                for i in range(PIN_CAP_ORG * 2)
            ]
            for p in ("alpha", "beta"):
                project_ids[agent, p] = [
                    facts.remember(conn, "pins", f"{p} pin candidate {i} of {agent}", source="docs/p.md", project=p).id
                    for i in range(PIN_CAP_PROJECT * 2)
                ]
    outcomes: Counter = Counter()
    stop = threading.Event()
    seen: Counter = Counter()

    def watch() -> None:
        with admin() as conn:
            conn.autocommit = True
            while not stop.is_set():
                for r in conn.execute(
                    "SELECT coalesce(project, '(org)') AS scope, count(*) AS n FROM memory_pins "
                    "WHERE unpinned_at IS NULL GROUP BY 1"
                ):
                    seen[r["scope"]] = max(seen[r["scope"]], r["n"])

    def worker(n: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(seed * 10 + n)
            agent = agents[n % len(agents)]
            with login(agent) as conn:
                for _ in range(moves):
                    scope = rng.choice([None, "alpha", "beta"])
                    fact_id = rng.choice(org_ids[agent] if scope is None else project_ids[agent, scope])
                    try:
                        if rng.random() < 0.3:
                            pins.unpin(conn, fact_id)
                            outcomes["unpinned"] += 1
                        else:
                            pins.pin(conn, fact_id, scope)
                            outcomes["pinned"] += 1
                    except OrgError as exc:
                        outcomes["full" if "already holds" in str(exc) else type(exc).__name__] += 1

        return work

    errors = _watched([worker(n) for n in range(threads)], watch, stop)
    with admin() as conn:
        final = {
            r["scope"]: r["n"]
            for r in conn.execute(
                "SELECT coalesce(project, '(org)') AS scope, count(*) AS n FROM memory_pins WHERE unpinned_at IS NULL "
                "GROUP BY 1"
            )
        }
    caps = {"(org)": PIN_CAP_ORG, "alpha": PIN_CAP_PROJECT, "beta": PIN_CAP_PROJECT}
    return {
        "caps": caps,
        "outcomes": dict(outcomes),
        "errors": [repr(e)[:200] for e in errors],
        "max_seen": dict(seen),
        "final": final,
        "exceeded": sorted(s for s in caps if max(seen[s], final.get(s, 0)) > caps[s]),
    }


def _figures(values: list[float]) -> dict:
    from .common import figures

    return figures(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--threads", type=int, default=7)
    parser.add_argument("--claims", type=int, default=500)
    parser.add_argument("--notebook-writes", type=int, default=300)
    parser.add_argument("--pin-moves", type=int, default=300)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    from .common import fresh_org

    names = [f"racer{i}" for i in range(args.agents)]
    org = fresh_org("stress_races", names)
    out = {
        "remember": remember_race(org.login, org.admin, names, args.threads, args.claims, args.seed),
        "notebook": notebook_race(org.login, org.admin, names[0], 8, args.notebook_writes, args.seed),
        "pins": pins_race(org.login, org.admin, names, 8, args.pin_moves, args.seed),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
