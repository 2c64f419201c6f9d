"""Isolation under load: agents logged in over TCP as their own roles ask at once (recall,
their notebook, the recall log, the context block), and no answer holds another agent's
private notebook line or, under --project, another project's fact.

    python -m stress.isolation [--agents 10] [--queries 1000] [--seed 14]

Each agent's notebook holds a line with its own marker word; each project holds facts with
the project's marker word; every question uses the words all of those lines share, so a
leak would be found. Every answer is checked whole (its repr, every field).
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

from cli_org.config import Settings
from cli_org.recall.answer import recall
from cli_org.session.context import build_context
from cli_org.store import facts, notebook

PROJECTS = ("alpha", "beta", "gamma")
WORDS = "deploy checklist rollback"


def note_marker(agent: str) -> str:
    return f"nbmark{agent.replace('-', '').replace('_', '')}"


def project_marker(project: str) -> str:
    return f"pjmark{project}"


def foreign_markers(agent: str, project: str | None, agents: list[str], text: str) -> list[str]:
    """The markers in `text` that `agent` asking under `project` must never see."""
    found = [note_marker(a) for a in agents if a != agent and note_marker(a) in text]
    if project is not None:
        found += [project_marker(p) for p in PROJECTS if p != project and project_marker(p) in text]
    return found


def seed(login: Callable[[str], psycopg.Connection], agents: list[str]) -> None:
    for i, agent in enumerate(agents):
        with login(agent) as conn:
            notebook.add(conn, "memory", f"The {WORDS} note of {agent} is {note_marker(agent)}")
            project = PROJECTS[i % len(PROJECTS)]
            facts.remember(
                conn,
                "deploy",
                f"The {WORDS} of {project} is {project_marker(project)} {i}",
                source="docs/deploy.md",
                project=project,
            )
            facts.remember(conn, "deploy", f"The org-wide {WORDS} step {i}", source="docs/deploy.md")


def run(
    login: Callable[[str], psycopg.Connection],
    settings: Settings,
    agents: list[str],
    queries: int,
    sessions_per_agent: int = 2,
    seed_: int = 14,
) -> dict:
    """`queries` calls in all, spread over `sessions_per_agent` concurrent logins of each agent."""
    leaks: list[dict] = []
    kinds: Counter = Counter()
    own: Counter = Counter()
    recalls: Counter = Counter()
    timings: dict[str, list[float]] = {}
    errors: list[str] = []
    lock = threading.Lock()
    sessions = [(a, k) for a in agents for k in range(sessions_per_agent)]
    per_session = max(1, queries // len(sessions))
    barrier = threading.Barrier(len(sessions))

    def check(agent: str, project: str | None, kind: str, answer: object) -> None:
        text = repr(answer)
        foreign = foreign_markers(agent, project, agents, text)
        with lock:
            kinds[kind] += 1
            # The control: the agent's own line and its project's facts do come back.
            own[kind] += note_marker(agent) in text
            own["project"] += project is not None and project_marker(project) in text
            if foreign:
                leaks.append({"agent": agent, "kind": kind, "project": project, "found": foreign})

    def session(agent: str, k: int) -> None:
        rng = random.Random(f"{seed_}-{agent}-{k}")
        try:
            with login(agent) as conn:
                barrier.wait()
                for _ in range(per_session):
                    kind = rng.choice(["recall", "recall", "notebook", "notebook_sql", "recall_log", "context"])
                    project = rng.choice([None, *PROJECTS])
                    started = time.perf_counter()
                    if kind == "recall":
                        answer: object = recall(conn, WORDS, settings=settings, project=project)
                        with lock:
                            recalls[agent] += 1
                    elif kind == "notebook":
                        answer = notebook.show(conn)
                    elif kind == "notebook_sql":  # straight at the table: row-level security alone
                        answer = conn.execute("SELECT agent, body FROM notebook_entries").fetchall()
                        conn.rollback()
                    elif kind == "recall_log":
                        answer = conn.execute("SELECT agent, query, project FROM recall_events").fetchall()
                        conn.rollback()
                    else:
                        answer = build_context(conn, settings=settings, project=project, for_text=WORDS)
                    with lock:
                        timings.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
                    check(agent, project, kind, answer)
        except Exception as exc:  # noqa: BLE001 - counted and shown
            with lock:
                errors.append(f"{agent}: {exc!r}"[:300])

    threads = [threading.Thread(target=session, args=s) for s in sessions]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    from .common import figures

    return {
        "agents": len(agents),
        "sessions": len(sessions),
        "calls": sum(kinds.values()),
        "by_kind": dict(kinds),
        "own_seen": dict(own),
        "leaks": len(leaks),
        "first_leaks": leaks[:5],
        "errors": errors[:5],
        "seconds": round(seconds, 1),
        "ms": {k: figures(v) for k, v in sorted(timings.items())},
        "recalls_by_agent": dict(recalls),
    }


def logged_as_asked(admin: Callable[[], psycopg.Connection], recalls: dict[str, int]) -> bool:
    """Each agent's recalls were logged under its own name, one row each (the recall log).
    Context blocks log their own recalls too, so an agent may have more rows, never fewer."""
    with admin() as conn:
        logged = {
            r["agent"]: r["n"] for r in conn.execute("SELECT agent, count(*) AS n FROM recall_events GROUP BY agent")
        }
    return all(logged.get(a, 0) >= n for a, n in recalls.items()) and set(logged) <= set(recalls) | {None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    from .common import fresh_org

    names = [f"agent{i}" for i in range(args.agents)]
    org = fresh_org("stress_isolation", names)
    seed(org.login, names)
    out = run(org.login, org.settings, names, args.queries, seed_=args.seed)
    out["logged_as_asked"] = logged_as_asked(org.admin, out["recalls_by_agent"])
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
