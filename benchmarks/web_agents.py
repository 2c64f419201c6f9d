"""Server time of the web page's Agents, Recall and Search pages (issue 15), on the shipped
sample and with synthetic facts, notebook entries and recall calls added.

The sample (eval/sample: four agents, its facts, its vault embedded with the real model, its
bots' memory files) goes into a database of its own; `--facts N` adds N facts spread over
ten more bots, `--recalls M` recall_events lines spread over every agent, and each agent a
few notebook entries; each synthetic recall eight stored hits (recall_hits, migration 0034),
the first of them always the same "hot" fact, so that fact's page counts every recall's hit.
The page is served in-process (FastAPI's TestClient, the app
`cli-org serve` runs, one pool, the real ONNX query model) as the owner `mara`, so row-level
security applies; each figure is the wall-clock time of one request, HTML or JSON rendered,
after --warm untimed requests. Recall and search rotate through a few questions; each
recall is logged as the page logs it.

Beside the pages below: a past recall (/recall/ID, a synthetic one of a bot) and the hot
fact's page (/facts/ID with its recall counts), with their /api twins.

    python -m benchmarks.web_agents [--facts 10000] [--recalls 20000] [--runs 50] [--no-vectors]

--no-vectors skips the synthetic facts' vectors (100k of them take over 12 minutes into the
HNSW index on a loaded 2-core machine) and with them the Recall and Search pages, which read
vectors: for the pages that read none (agents, past recalls, a fact's page).
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import sys
import time
from dataclasses import replace

from cli_org.checks.rules import KINDS
from cli_org.db.connect import connect
from cli_org.store import facts as facts_lib
from cli_org.store import notebook as nb
from cli_org.store.agents import add_agent
from cli_org.vault.embed import embed_pending
from cli_org.vault.embedders import MODEL_NAME, index_embedder
from cli_org.vault.scan import scan

from .common import ROOT, bench_settings, drop_database, median, percentile
from .scale import RANDOM_VECTOR

SAMPLE = ROOT / "eval" / "sample"
BOTS = [f"bench-bot{i:02d}" for i in range(10)]
QUESTIONS = [
    "how do deploys run",
    "rollback a bad release",
    "why does the arm64 build fail",
    "when is the staging refresh",
    "who approves hotfixes during the freeze",
]
PAGES = [
    ("/agents", None),
    ("/api/agents", None),
    ("/agents/builder", None),
    ("/api/agents/builder", None),
    ("/recall", QUESTIONS),
    ("/api/recall", QUESTIONS),
    ("/search", QUESTIONS),
    ("/api/search", QUESTIONS),
]


def load_sample(settings) -> None:
    with connect(settings, bounded=False) as admin:
        add_agent(admin, "mara", person=True, owner=True)
        for bot in ("builder", "reviewer", "ops"):
            add_agent(admin, bot, lead="mara")
        admin.commit()
    rows = [r for r in csv.reader((SAMPLE / "facts.tsv").open(), delimiter="\t") if r and not r[0].startswith("#")]
    for agent, subject, claim, source, project, kind in rows:
        with connect(settings, agent) as conn:
            facts_lib.remember(conn, subject, claim, source=source, project=project or None, kind=kind or "fact")
    with connect(settings, bounded=False) as admin, index_embedder(settings) as indexer:
        scan(admin, SAMPLE / "vault", replace=True)
        embed_pending(admin, indexer)


def load_synthetic(settings, n_facts: int, n_recalls: int, vectors: bool = True) -> None:
    """n_facts facts by ten extra bots (COPY), n_recalls recall lines over every agent (one
    set-based INSERT), and three notebook entries per agent (through the library)."""
    with connect(settings, bounded=False) as admin:
        for bot in BOTS:
            add_agent(admin, bot, lead="mara")
        admin.commit()
        buf = io.StringIO()
        for i in range(n_facts):
            author = BOTS[i % len(BOTS)]
            project = "" if i % 5 == 4 else ("web", "ops", "data", "mobile")[i % 4]
            subject = f"topic {i % 700}"
            claim = f"Synthetic fact {i}: the {subject} service keeps its settings in file {i % 97}.conf."
            buf.write("\t".join([subject, claim, f"docs/{i}.md", author, project or "\\N", KINDS[i % len(KINDS)]]))
            buf.write("\n")
        # Synthetic rows skip the write-time checks (triggers), as benchmarks/scale.py does.
        admin.execute("SET session_replication_role = replica")
        with (
            admin.cursor() as cur,
            cur.copy("COPY memory_facts (subject, claim, source, author, project, kind) FROM STDIN") as copy,
        ):
            copy.write(buf.getvalue())
        # Each fact its vector, as `remember` stores one (random unit vectors, as scale.py).
        if vectors:
            admin.execute(
                "INSERT INTO memory_fact_vectors (fact_id, model, computed_by, embedding) "
                f"SELECT f.id, %s, f.author, {RANDOM_VECTOR.format(ref='f.id')} FROM memory_facts f"
                " WHERE f.author LIKE 'bench-bot%%'",
                (MODEL_NAME,),
            )
        admin.execute("RESET session_replication_role")
        agents = [r["name"] for r in admin.execute("SELECT name FROM org_agents ORDER BY name")]
        admin.execute(
            "INSERT INTO recall_events (created_at, agent, project, query, arms, hits, chars, ms)"
            " SELECT now() - g * interval '1 minute', (%(agents)s::text[])[1 + g %% %(n)s], NULL,"
            " 'synthetic question ' || g, '{fact,vault}', 5, 600, 40 FROM generate_series(1, %(recalls)s) g",
            {"agents": agents, "n": len(agents), "recalls": n_recalls},
        )
        # Eight hits per synthetic recall, stored as recall.log stores them; the first is
        # always the hot fact (the lowest synthetic id), the rest spread over the facts.
        admin.execute(
            "INSERT INTO recall_hits (event_id, agent, rank, arm, fact_id, text)"
            " SELECT e.id, e.agent, r, 'fact',"
            "  CASE WHEN r = 1 THEN b.lo ELSE b.lo + (e.id * 7919 + r * 104729) %% greatest(b.n, 1) END,"
            "  '[fact] synthetic hit ' || r || ' of recall ' || e.id"
            " FROM recall_events e, generate_series(1, %(hits)s) r,"
            "  (SELECT min(id) AS lo, count(*) AS n FROM memory_facts WHERE author LIKE 'bench-bot%%') b"
            " WHERE e.query LIKE 'synthetic question %%' AND b.n > 0",
            {"hits": 8},
        )
        admin.execute("ANALYZE")
        admin.commit()
    for agent in ["mara", "builder", "reviewer", "ops", *BOTS]:
        with connect(settings, agent) as conn:
            for k in range(3):
                nb.add(conn, "memory", f"Note {k} of {agent}: the runner cache is cleared on Fridays.")


def _stored_pages(settings) -> list[tuple[str, None]]:
    """A bot's synthetic past recall and the hot fact, as pages and API paths."""
    with connect(settings, bounded=False) as admin:
        row = admin.execute(
            "SELECT (SELECT max(event_id) FROM recall_hits WHERE agent = 'bench-bot00') AS event,"
            " (SELECT min(id) FROM memory_facts WHERE author LIKE 'bench-bot%%') AS hot"
        ).fetchone()
    if row is None or row["event"] is None:
        return []
    event, hot = row["event"], row["hot"]
    return [
        (f"/recall/{event}", None),
        (f"/api/recall/{event}", None),
        (f"/facts/{hot}", None),
        (f"/api/facts/{hot}", None),
    ]


def measure(settings, runs: int, warm: int, vectors: bool = True) -> dict[str, dict[str, float]]:
    from fastapi.testclient import TestClient

    from cli_org.faces.web.app import create_app, opened
    from cli_org.faces.web.guard import hosts_for, new_token

    out: dict[str, dict[str, float]] = {}
    with opened(settings, "mara", token=new_token(), hosts=hosts_for("127.0.0.1", 8765)) as web:
        auth = {"Authorization": f"Bearer {web.token}"}
        client = TestClient(create_app(web), base_url="http://127.0.0.1:8765", headers=auth)
        with client:
            pages = PAGES if vectors else [(p, q) for p, q in PAGES if q is None]
            for path, questions in pages + _stored_pages(settings):
                asked = itertools.cycle(questions or [None])
                times = []
                for i in range(warm + runs):
                    q = next(asked)
                    params = {"q": q} if q else {}
                    started = time.perf_counter()
                    if path == "/api/recall":  # a recall is logged: a POST (issue 21)
                        response = client.post(path, json=params)
                    elif path == "/recall":
                        response = client.post(path, data={**params, "csrf": web.csrf()})
                    else:
                        response = client.get(path, params=params)
                    spent = (time.perf_counter() - started) * 1000
                    if response.status_code != 200:
                        raise SystemExit(f"{path} {params}: {response.status_code} {response.text[:200]}")
                    if i >= warm:
                        times.append(spent)
                out[path] = {"median": round(median(times), 1), "p95": round(percentile(times, 95), 1)}
                print(path, out[path], file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=0, help="synthetic facts added to the sample")
    parser.add_argument("--recalls", type=int, default=0, help="synthetic recall_events lines added")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--no-vectors", action="store_true", help="no fact vectors; pages that read none")
    args = parser.parse_args()
    settings = replace(bench_settings(f"web_agents_f{args.facts}", fresh=True), root=str(SAMPLE))
    load_sample(settings)
    if args.facts or args.recalls:
        load_synthetic(settings, args.facts, args.recalls, vectors=not args.no_vectors)
    result = {
        "facts_added": args.facts,
        "recalls_added": args.recalls,
        "runs": args.runs,
        "ms": measure(settings, args.runs, args.warm, vectors=not args.no_vectors),
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }
    print(json.dumps(result, indent=1))
    if not args.keep:
        drop_database(settings)


if __name__ == "__main__":
    main()
