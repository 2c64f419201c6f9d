"""The activity feed at scale (cli_org/store/activity.py): server time of one page, as an
owner and as a member, with each filter, at 100,000 facts.

The database: 100,000 facts (COPY, as benchmarks/scale.py loads them) by one bot, written
over the last 70 days (one every minute) or, with --now, all in the last hour (the worst case
for a `since` span: every fact is in it); a tenth retired, a few hundred superseded and
restored, pins, 2,000 todos (half done), 3,000 notebook versions over 30 agents, 20,000
recall calls and 20,000 tool calls. The archive (sessions) is not a source of the feed and is
not loaded. Each case: --warm untimed calls, then --runs timed calls of feed(); the figure
is the query's own time from EXPLAIN ANALYZE of the same statement (server time), and the
whole call's time in the library (query, rows to dataclasses).

    python -m benchmarks.activity [--facts 100000] [--now] [--runs 20] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from .common import bench_settings, median, percentile

MEMBER = "scale-reader"  # a member who may read no other agent's notebook
OWNER = "mara"


def load(settings, n: int, now: bool) -> None:
    from cli_org.db.connect import connect
    from cli_org.store.agents import add_agent

    from . import scale

    with connect(settings) as conn:
        add_agent(conn, OWNER, person=True, owner=True)
        add_agent(conn, scale.AGENT, lead=OWNER)
        add_agent(conn, MEMBER)
        for i in range(30):
            add_agent(conn, f"nb{i:02d}")
        conn.commit()
        scale.load_facts(conn, n, scale.Words(15), {}, arm=False)
        conn.execute("SET session_replication_role = replica")  # synthetic rows: no triggers
        step = "interval '1 second' * 0.036" if now else "interval '1 minute'"
        conn.execute(f"UPDATE memory_facts SET created_at = now() - (({n} - id) * {step}), valid_from = created_at")
        conn.execute(
            "UPDATE memory_facts SET valid_to = created_at + interval '1 hour', retired_by = author,"
            " retired_reason = 'stale', retired_via = 'codex@box2' WHERE id % 10 = 3"
        )
        conn.execute(
            "INSERT INTO memory_restores (fact_id, retired_at, retired_by, retired_reason, restored_at, restored_by,"
            " why, retired_via, restored_via) SELECT id, created_at + interval '10 minutes', author, 'wrong',"
            " created_at + interval '20 minutes', author, 'right after all', 'codex@box2', 'codex@box2'"
            " FROM memory_facts WHERE id % 200 = 7"
        )
        conn.execute(
            "INSERT INTO memory_pins (fact_id, pinned_by, pinned_at, unpinned_by, unpinned_at, unpin_reason)"
            " SELECT id, author, created_at, author, created_at + interval '1 minute', 'unpinned'"
            " FROM memory_facts WHERE id % 500 = 11"
        )
        conn.execute(
            "INSERT INTO org_todos (text, author, created_at, done_by, done_at, via, done_via)"
            " SELECT 'todo ' || g, %s, now() - g * interval '30 minutes',"
            " CASE WHEN g %% 2 = 0 THEN %s END, CASE WHEN g %% 2 = 0 THEN now() - g * interval '10 minutes' END,"
            " 'claude-code@box1', CASE WHEN g %% 2 = 0 THEN 'claude-code@box1' END FROM generate_series(1, 2000) g",
            (scale.AGENT, scale.AGENT),
        )
        conn.execute(
            "INSERT INTO notebook_entries (id, agent, store, body, version, created_at, changed_at, changed_by)"
            " OVERRIDING SYSTEM VALUE SELECT g, 'nb' || lpad((g % 30)::text, 2, '0'), 'memory', 'note ' || g, 1,"
            " now() - g * interval '20 minutes', now() - g * interval '20 minutes',"
            " 'nb' || lpad((g % 30)::text, 2, '0')"
            " FROM generate_series(1, 3000) g"
        )
        conn.execute(
            "INSERT INTO notebook_versions (entry_id, version, agent, store, action, body, at, by, via)"
            " SELECT id, 1, agent, store, 'added', body, changed_at, changed_by, 'hermes@box3' FROM notebook_entries"
        )
        conn.execute(
            "INSERT INTO recall_events (created_at, agent, query, arms, hits, chars, ms)"
            " SELECT now() - g * interval '3 minutes', %s, 'question ' || g, '{fact}', 3, 300, 40"
            " FROM generate_series(1, 20000) g",
            (scale.AGENT,),
        )
        conn.execute(
            "INSERT INTO tool_calls (created_at, agent, face, tool, ok, ms)"
            " SELECT now() - g * interval '3 minutes', %s, 'mcp', 'org_recall', true, 40"
            " FROM generate_series(1, 20000) g",
            (scale.AGENT,),
        )
        conn.execute("RESET session_replication_role")
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")


CASES = {  # name: (as whom, feed's arguments)
    "owner, since 1d": (OWNER, {"since": "1d"}),
    "owner, since all": (OWNER, {"since": "all"}),
    "member, since all": (MEMBER, {"since": "all"}),
    "owner, a rare agent, all": (OWNER, {"since": "all", "agent": "nb07"}),
    "owner, an agent with nothing, all": (OWNER, {"since": "all", "agent": MEMBER}),
    "owner, via codex, all": (OWNER, {"since": "all", "via": "codex"}),
    "owner, via absent harness, all": (OWNER, {"since": "all", "via": "nothing"}),
    "member, kind notebook, all": (MEMBER, {"since": "all", "kinds": ["notebook"]}),
    "owner, kind notebook, all": (OWNER, {"since": "all", "kinds": ["notebook"]}),
    "owner, reads, 1d": (OWNER, {"since": "1d", "kinds": ["reads"]}),
    "owner, page 20 (cursor), all": (OWNER, {"since": "all", "page": 20}),
}


def run_case(settings, who: str, args: dict, warm: int, runs: int) -> dict:
    from cli_org.db.connect import connect
    from cli_org.db.queries import sql
    from cli_org.store import activity

    args = dict(args)
    page = args.pop("page", 1)
    since = activity.parse_since(args.pop("since"))
    with connect(settings, who) as conn:
        before = None
        for _ in range(page - 1):  # walk to the page with the cursor
            before = activity.feed(conn, since=since, before=before, **args).next
        calls = []
        for i in range(warm + runs):
            started = time.perf_counter()
            result = activity.feed(conn, since=since, before=before, **args)
            if i >= warm:
                calls.append((time.perf_counter() - started) * 1000)
        # the same statement, explained (its parameters as feed() passes them)
        params = activity.query_params(
            since=since,
            agent=args.get("agent"),
            via=args.get("via"),
            kinds=activity.parse_kinds(args.get("kinds")),
            before=before,
            limit=activity.DEFAULT_LIMIT,
        )
        plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql("activity.feed"), params).fetchone()
        conn.rollback()
    explained = plan["QUERY PLAN"][0] if isinstance(plan, dict) else plan[0][0]
    return {
        "events": len(result.events),
        "call_p50_ms": round(median(calls), 2),
        "call_p95_ms": round(percentile(calls, 95), 2),
        "server_ms": round(explained["Execution Time"], 2),
        "planning_ms": round(explained["Planning Time"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--now", action="store_true", help="every fact written in the last hour")
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--reuse", action="store_true", help="keep the database a previous run loaded")
    ns = parser.parse_args()
    name = f"activity_{ns.facts}{'_now' if ns.now else ''}"
    if ns.reuse:
        settings = bench_settings(name)
    else:
        settings = bench_settings(name, fresh=True)
        started = time.perf_counter()
        load(settings, ns.facts, ns.now)
        print(f"loaded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    rows = {case: run_case(settings, who, args, ns.warm, ns.runs) for case, (who, args) in CASES.items()}
    print(
        f"| case ({ns.facts:,} facts{', all in the last hour' if ns.now else ''}) "
        "| events | server ms (EXPLAIN ANALYZE) | call p50 ms | call p95 ms |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    for case, r in rows.items():
        print(f"| {case} | {r['events']} | {r['server_ms']} | {r['call_p50_ms']} | {r['call_p95_ms']} |")
    print(json.dumps(rows), file=sys.stderr)


if __name__ == "__main__":
    main()
