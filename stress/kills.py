"""`kill -9` at seeded random moments during `vault scan`, `vault embed` and `archive
import` (real corpora, read in place); after each kill the command is run again to the
end, and the database must then hold exactly what a clean run leaves (counts and content
hashes of every table the command writes), with no orphan rows.

    python -m stress.kills [--kills 20] [--seed 14] [--vault DIR] [--transcripts DIR]

The kills are spread over the three commands (scan, embed, import in turn). Every kill
gets a fresh database, brought to the state a clean run starts that command from (a scan
before an embed), so the command does its whole work again and the kill lands inside it:
at a seeded moment between 0 and the clean run's measured duration. A run that finishes
before its moment (a loaded machine is uneven) is counted as `finished_first` and tried
again on another fresh database, its next moment drawn within the run just seen; the same
seed gives the same moments while no run finishes first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parents[1]

# Content of every table the three commands write, without generated ids and clock times:
# each row is keyed by what identifies it (a path, a session's external id), so two runs
# that stored the same things hash the same.
SIGNATURES = {
    "vault_files": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', path, title, hash, size, "
    "frontmatter::text, length), E'\\n' ORDER BY path), '')) AS h FROM vault_files",
    "vault_chunks": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', f.path, c.ord, c.heading, "
    "c.content, c.hash, c.tsv::text), E'\\n' ORDER BY f.path, c.ord), '')) AS h "
    "FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id",
    "vault_links": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', f.path, l.target, l.target_path, "
    "l.heading, l.alias, l.kind), E'\\n' ORDER BY f.path, l.target, l.kind, l.heading, l.alias), '')) AS h "
    "FROM vault_links l JOIN vault_files f ON f.id = l.file_id",
    "vault_tags": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', f.path, t.tag), E'\\n' "
    "ORDER BY f.path, t.tag), '')) AS h FROM vault_tags t JOIN vault_files f ON f.id = t.file_id",
    "vault_postings": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', p.term, f.path, p.tf, p.dl), "
    "E'\\n' ORDER BY p.term, f.path), '')) AS h FROM vault_postings p JOIN vault_files f ON f.id = p.file_id",
    "vault_terms": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', term, df), E'\\n' ORDER BY term), "
    "'')) AS h FROM vault_terms WHERE df > 0",
    "vectors": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', f.path, c.ord, c.embed_model), "
    "E'\\n' ORDER BY f.path, c.ord), '')) AS h FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id "
    "WHERE c.embedding IS NOT NULL",
    "archive_sessions": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', s.harness, s.external_id, "
    "p.external_id, s.project, s.cwd, s.git_branch, s.model, s.title, s.started_at, s.ended_at), E'\\n' "
    "ORDER BY s.harness, s.external_id), '')) AS h FROM archive_sessions s "
    "LEFT JOIN archive_sessions p ON p.id = s.parent_session",
    "archive_messages": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', s.harness, s.external_id, "
    "m.source_key, m.position, m.part, m.kind, m.occurred_at, m.text, m.tool_name, m.tool_call_id, m.command, "
    "m.raw::text), E'\\n' ORDER BY s.harness, s.external_id, m.source_key), '')) AS h "
    "FROM archive_messages m JOIN archive_sessions s ON s.id = m.session_id",
    "archive_sources": "SELECT count(*) AS n, md5(coalesce(string_agg(concat_ws('|', harness, path, size, "
    "byte_offset, line_count, last_row_id), E'\\n' ORDER BY harness, path), '')) AS h FROM archive_sources",
}

# Rows that a half-done write would leave and no constraint forbids.
ORPHANS = {
    "terms whose df disagrees with the postings": "SELECT count(*) AS n FROM vault_terms t FULL JOIN "
    "(SELECT term, count(*) AS df FROM vault_postings GROUP BY term) p USING (term) "
    "WHERE coalesce(t.df, 0) <> coalesce(p.df, 0)",
    "notes without chunks": "SELECT count(*) AS n FROM vault_files f WHERE NOT EXISTS "
    "(SELECT 1 FROM vault_chunks c WHERE c.file_id = f.id) AND f.length > 0",
    "notes without postings": "SELECT count(*) AS n FROM vault_files f WHERE f.length > 0 AND NOT EXISTS "
    "(SELECT 1 FROM vault_postings p WHERE p.file_id = f.id)",
    # A parent named by a subagent's file before its own file is read is a placeholder by
    # design (archive/importer.py); any other session without messages is half-written.
    "sessions without messages": "SELECT count(*) AS n FROM archive_sessions s WHERE NOT EXISTS "
    "(SELECT 1 FROM archive_messages m WHERE m.session_id = s.id) AND NOT EXISTS "
    "(SELECT 1 FROM archive_sessions c WHERE c.parent_session = s.id)",
    "vectors without a model": "SELECT count(*) AS n FROM vault_chunks WHERE embedding IS NOT NULL "
    "AND embed_model IS NULL",
}


def commands(vault: Path, transcripts: Path) -> dict[str, list[str]]:
    archive = []
    for option, sub in (("--claude", "claude-code"), ("--codex", "codex"), ("--hermes", "hermes/state.db")):
        if (transcripts / sub).exists():
            archive += [option, str(transcripts / sub)]
    return {
        "scan": ["vault", "scan", str(vault)],
        "embed": ["vault", "embed"],
        "import": ["archive", "import", *archive],
    }


def cli(env: dict[str, str], args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cli_org", *args],
        cwd=ROOT,
        env={**os.environ, **env, "CLI_ORG_WARM": "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(env: dict[str, str], args: list[str]) -> float:
    started = time.perf_counter()
    proc = cli(env, args)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"cli-org {' '.join(args)} exited {proc.returncode}: {err.decode()[-500:]}")
    return time.perf_counter() - started


def signature(conn: psycopg.Connection, tables: list[str] | None = None) -> dict[str, dict]:
    return {name: dict(conn.execute(SIGNATURES[name]).fetchone()) for name in tables or SIGNATURES}


def orphans(conn: psycopg.Connection) -> dict[str, int]:
    return {name: conn.execute(query).fetchone()["n"] for name, query in ORPHANS.items()}


def vectors(conn: psycopg.Connection) -> dict[tuple[str, int], np.ndarray]:
    rows = conn.execute(
        "SELECT f.path, c.ord, c.embedding::text AS v FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id "
        "WHERE c.embedding IS NOT NULL"
    )
    return {(r["path"], r["ord"]): np.array(json.loads(r["v"]), dtype=np.float32) for r in rows}


def min_cosine(a: dict, b: dict) -> float | None:
    """The lowest cosine between the two runs' vectors of the same chunk (batches differ
    after a kill, so the floats may differ in the last bits)."""
    common = set(a) & set(b)
    if not common:
        return None
    return float(min(np.dot(a[k], b[k]) / (np.linalg.norm(a[k]) * np.linalg.norm(b[k])) for k in common))


# The command each command's clean run starts from, and the tables it writes: a killed
# run is compared with the clean run on those tables only.
BEFORE = {"scan": [], "embed": ["scan"], "import": []}
VAULT_TABLES = ["vault_files", "vault_chunks", "vault_links", "vault_tags", "vault_postings", "vault_terms"]
TABLES = {
    "scan": VAULT_TABLES,
    "embed": [*VAULT_TABLES, "vectors"],
    "import": ["archive_sessions", "archive_messages", "archive_sources"],
}
# What a killed run had committed when it died (rows counted before the rerun).
PROGRESS = {"scan": "vault_files", "embed": "vectors", "import": "archive_messages"}
# A run that keeps finishing before its moment is given up after this many tries (reported).
MAX_TRIES = 5


def kill_at(env: dict[str, str], args: list[str], at: float) -> tuple[bool, float]:
    """Start the command and SIGKILL it `at` seconds later: (whether the kill landed, the
    seconds the run lasted); a run that finished first did not land."""
    started = time.perf_counter()
    proc = cli(env, args)
    try:
        proc.wait(timeout=at)
        landed = False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        landed = True
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    return landed, time.perf_counter() - started


def one_kill(fresh, env_for, connect_to, cmds, op: str, longest: float, rng: random.Random, clean: dict) -> dict:
    """A fresh database, the commands before `op`, `op` killed at a seeded moment, `op` run
    again to the end; then its tables against the clean run's, and the orphan checks."""
    moments, finished_first = [], 0
    landed = False
    for _ in range(MAX_TRIES):
        fresh("killed")
        env = env_for("killed")
        for before in BEFORE[op]:
            finish(env, cmds[before])
        at = rng.uniform(0.0, longest)
        moments.append(round(at, 2))
        landed, lasted = kill_at(env, cmds[op], at)
        if landed:
            break
        # It ran faster than the clean run (the machine's load changes): the next moment
        # is drawn within the run just seen.
        finished_first += 1
        longest = min(longest, lasted)
    with connect_to("killed") as conn:
        left = conn.execute(SIGNATURES[PROGRESS[op]]).fetchone()["n"]
    rerun = finish(env, cmds[op])
    with connect_to("killed") as conn:
        sig = signature(conn, TABLES[op])
        out = {
            "op": op,
            "landed": landed,
            "at_s": moments[-1],
            "finished_first": finished_first,
            "left_by_kill": {PROGRESS[op]: left},
            "rerun_s": round(rerun, 1),
            "unequal": [t for t in TABLES[op] if sig[t] != clean["signature"][t]],
            "orphans": {k: v for k, v in orphans(conn).items() if v},
        }
        if op == "embed":
            out["vectors_min_cosine"] = min_cosine(clean["vectors"], vectors(conn))
    out["equal"] = not out["unequal"]
    return out


def run(
    fresh, env_for, connect_to, vault: Path, transcripts: Path, kills: int, seed: int, ops=("scan", "embed", "import")
):
    """`fresh(name)` makes database `name` new and initialised (dropping any earlier one),
    `env_for(name)` gives its CLI environment and `connect_to(name)` an admin connection
    to it; the names are "clean" and "killed"."""
    rng = random.Random(seed)
    cmds = commands(vault, transcripts)
    fresh("clean")
    clean_s: dict[str, float] = {}
    for op in ("scan", "embed", "import"):
        if op in ops or any(op in BEFORE[o] for o in ops):
            clean_s[op] = finish(env_for("clean"), cmds[op])
    with connect_to("clean") as conn:
        clean = {"signature": signature(conn), "orphans": orphans(conn)}
        clean["vectors"] = vectors(conn) if "embed" in ops else {}
    per_op = [kills // len(ops) + (1 if i < kills % len(ops) else 0) for i in range(len(ops))]
    runs = []
    for op, n in zip(ops, per_op, strict=True):
        for _ in range(n):
            runs.append(one_kill(fresh, env_for, connect_to, cmds, op, clean_s[op], rng, clean))
            print(json.dumps(runs[-1], default=str), file=sys.stderr, flush=True)
    summary = {
        op: {
            "kills": sum(1 for r in runs if r["op"] == op),
            "landed": sum(1 for r in runs if r["op"] == op and r["landed"]),
            "finished_first": sum(r["finished_first"] for r in runs if r["op"] == op),
            "reruns_equal": sum(1 for r in runs if r["op"] == op and r["equal"]),
            "with_orphans": sum(1 for r in runs if r["op"] == op and r["orphans"]),
        }
        for op in ops
    }
    report = {
        "clean_s": {op: round(s, 1) for op, s in clean_s.items()},
        "clean_counts": {name: v["n"] for name, v in clean["signature"].items()},
        "clean_orphans": {k: v for k, v in clean["orphans"].items() if v},
        "summary": summary,
        "runs": runs,
    }
    report["landed"] = sum(s["landed"] for s in summary.values())
    report["equal"] = all(r["equal"] for r in runs)
    report["no_orphans"] = not any(r["orphans"] for r in runs) and not report["clean_orphans"]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--vault", type=Path, default=ROOT.parent / "shared" / "corpora" / "til")
    parser.add_argument("--transcripts", type=Path, default=ROOT.parent / "shared" / "corpora" / "transcripts")
    parser.add_argument("--ops", default="scan,embed,import", help="which commands to kill, comma-separated")
    args = parser.parse_args()
    from cli_org.db.connect import admin_conninfo

    from .common import fresh_org

    orgs = {}

    def fresh(name: str) -> None:
        orgs[name] = fresh_org(f"stress_kill_{name}", [])

    def env_for(name: str) -> dict[str, str]:
        s = orgs[name].settings
        return {"CLI_ORG_DATA_DIR": str(s.data_dir), "CLI_ORG_DATABASE": s.database_name, "CLI_ORG_DATABASE_URL": ""}

    def connect_to(name: str) -> psycopg.Connection:
        return psycopg.connect(admin_conninfo(orgs[name].settings), row_factory=dict_row)

    out = run(
        fresh, env_for, connect_to, args.vault, args.transcripts, args.kills, args.seed, ops=tuple(args.ops.split(","))
    )
    print(json.dumps(out, indent=2, default=str))
    sys.exit(0 if out["equal"] and out["no_orphans"] else 1)


if __name__ == "__main__":
    main()
