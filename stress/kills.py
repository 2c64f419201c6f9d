"""`kill -9` at seeded random moments during `vault scan`, `vault embed` and `archive
import` (real corpora, read in place); each rerun must complete and leave exactly what a
clean run leaves (counts and content hashes of every table it writes), with no orphan rows.

    python -m stress.kills [--kills 20] [--seed 14] [--vault DIR] [--transcripts DIR]

The kills are spread over the three commands (scan, embed, import in turn). A kill lands
between 0 and the clean run's duration after the start; a command that finished before
its kill counts as `finished`, not as a kill. The same seed gives the same moments.
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
        [sys.executable, "-m", "cli_org", *args], cwd=ROOT, env={**os.environ, **env, "CLI_ORG_WARM": "0"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def finish(env: dict[str, str], args: list[str]) -> float:
    started = time.perf_counter()
    proc = cli(env, args)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"cli-org {' '.join(args)} exited {proc.returncode}: {err.decode()[-500:]}")
    return time.perf_counter() - started


def signature(conn: psycopg.Connection) -> dict[str, dict]:
    return {name: dict(conn.execute(query).fetchone()) for name, query in SIGNATURES.items()}


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


def killed_runs(env: dict[str, str], args: list[str], kills: int, longest: float, rng: random.Random) -> dict:
    """Start the command `kills` times and kill -9 each at a random moment; then run it to the end."""
    landed = finished = 0
    moments = []
    for _ in range(kills):
        at = rng.uniform(0.0, longest)
        proc = cli(env, args)
        try:
            proc.wait(timeout=at)
            finished += 1
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            landed += 1
            moments.append(round(at, 2))
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    rerun = finish(env, args)
    return {"kills": landed, "finished_before_kill": finished, "moments_s": moments, "rerun_s": round(rerun, 1)}


def run(env_for, connect_to, vault: Path, transcripts: Path, kills: int, seed: int, ops=("scan", "embed", "import")):
    """`env_for(name)` gives the CLI environment of database `name`, `connect_to(name)` an
    admin connection to it; "clean" and "killed" are both made fresh by the caller."""
    rng = random.Random(seed)
    cmds = commands(vault, transcripts)
    clean_s = {op: finish(env_for("clean"), cmds[op]) for op in ops}
    per_op = [kills // len(ops) + (1 if i < kills % len(ops) else 0) for i in range(len(ops))]
    report: dict = {"clean_s": {op: round(s, 1) for op, s in clean_s.items()}, "ops": {}}
    for op, n in zip(ops, per_op, strict=True):
        report["ops"][op] = killed_runs(env_for("killed"), cmds[op], n, clean_s[op], rng)
    with connect_to("clean") as clean, connect_to("killed") as killed:
        a, b = signature(clean), signature(killed)
        report["tables"] = {name: {"clean": a[name], "killed": b[name], "equal": a[name] == b[name]} for name in a}
        report["orphans"] = {"clean": orphans(clean), "killed": orphans(killed)}
        if "embed" in ops:
            report["vectors_min_cosine"] = min_cosine(vectors(clean), vectors(killed))
    report["equal"] = all(t["equal"] for t in report["tables"].values())
    report["no_orphans"] = not any(report["orphans"]["killed"].values())
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--vault", type=Path, default=ROOT.parent / "shared" / "corpora" / "til")
    parser.add_argument("--transcripts", type=Path, default=ROOT.parent / "shared" / "corpora" / "transcripts")
    args = parser.parse_args()
    from cli_org.db.connect import admin_conninfo

    from .common import fresh_org

    orgs = {name: fresh_org(f"stress_kill_{name}", []) for name in ("clean", "killed")}

    def env_for(name: str) -> dict[str, str]:
        s = orgs[name].settings
        return {"CLI_ORG_DATA_DIR": str(s.data_dir), "CLI_ORG_DATABASE": s.database_name, "CLI_ORG_DATABASE_URL": ""}

    def connect_to(name: str) -> psycopg.Connection:
        return psycopg.connect(admin_conninfo(orgs[name].settings), row_factory=dict_row)

    out = run(env_for, connect_to, args.vault, args.transcripts, args.kills, args.seed)
    print(json.dumps(out, indent=2, default=str))
    sys.exit(0 if out["equal"] and out["no_orphans"] else 1)


if __name__ == "__main__":
    main()
