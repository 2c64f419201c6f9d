"""`db backup` / `db restore` on the TIL vault with a vector in every chunk: time and size.

The vectors are random unit vectors (384 dimensions, as the model's): they compress like
real ones, and computing real ones would take minutes of a shared machine for nothing a
backup can tell apart. Per repeat: a backup, a restore --force over the same database (the
staged load and the swap), and, for comparison, the same file loaded straight into an
empty database in one transaction (`pg_restore --single-transaction`), the alternative to
the staging database. Once: a restore into a fresh data folder (initdb and start included).

    python -m benchmarks.backup_restore [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time

import psycopg
from psycopg import sql as pgsql

from cli_org.config import Settings
from cli_org.db import embedded
from cli_org.db.backup import backup, restore
from cli_org.db.connect import admin_conninfo, connect
from cli_org.vault.scan import scan

from .common import SHARED, WORK, bench_settings, median, percentile

RANDOM_UNIT_VECTORS = """
WITH r AS (
    SELECT id, ARRAY(SELECT random() - 0.5 FROM generate_series(1, 384) WHERE id IS NOT NULL) AS a
    FROM vault_chunks
)
UPDATE vault_chunks c
SET embedding = (SELECT array_agg(v / sqrt((SELECT sum(w * w) FROM unnest(r.a) w)))::vector FROM unnest(r.a) v)
FROM r WHERE r.id = c.id
"""


def _drop_kept(settings: Settings) -> None:
    with psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True) as conn:
        pattern = settings.database_name + "\\_replaced\\_%"
        for (name,) in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (pattern,)).fetchall():
            conn.execute(pgsql.SQL("DROP DATABASE {} WITH (FORCE)").format(pgsql.Identifier(name)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    settings = bench_settings("backup", fresh=True)
    with connect(settings) as conn:
        scan(conn, SHARED / "til")
        conn.execute(RANDOM_UNIT_VECTORS)
        conn.commit()
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM vault_files) AS files, (SELECT count(*) FROM vault_chunks) AS chunks,"
            " (SELECT count(*) FROM vault_chunks WHERE embedding IS NOT NULL) AS vectors,"
            " pg_database_size(current_database()) AS bytes"
        ).fetchone()
    print(
        f"TIL: {counts['files']} notes, {counts['chunks']} chunks, {counts['vectors']} vectors, "
        f"database {counts['bytes'] / 1e6:.1f} MB"
    )
    WORK.mkdir(parents=True, exist_ok=True)
    dump = WORK / "til.dump"
    backups, restores, single, sizes = [], [], [], []
    pg_restore = embedded.tool_path("pg_restore")
    for _ in range(args.repeat):
        started = time.perf_counter()
        made = backup(settings, dump)
        backups.append(time.perf_counter() - started)
        sizes.append(made.bytes)
        started = time.perf_counter()
        restore(settings, dump, force=True)
        restores.append(time.perf_counter() - started)
        _drop_kept(settings)
        # The alternative: straight into an empty database, in one transaction.
        with psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS bench_backup_single WITH (FORCE)")
            conn.execute("CREATE DATABASE bench_backup_single TEMPLATE template0")
        started = time.perf_counter()
        subprocess.run(
            [
                str(pg_restore),
                "--no-owner",
                "--single-transaction",
                "--exit-on-error",
                "-d",
                admin_conninfo(settings, "bench_backup_single"),
                str(dump),
            ],
            check=True,
        )
        single.append(time.perf_counter() - started)
    with psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_backup_single WITH (FORCE)")
    fresh_dir = WORK / "restore-fresh"
    shutil.rmtree(fresh_dir, ignore_errors=True)
    fresh = Settings.from_env({"CLI_ORG_DATA_DIR": str(fresh_dir), "CLI_ORG_DATABASE": settings.database_name})
    started = time.perf_counter()
    restore(fresh, dump)
    into_fresh = time.perf_counter() - started
    embedded.stop(fresh_dir)
    shutil.rmtree(fresh_dir, ignore_errors=True)

    def row(what: str, values: list[float]) -> str:
        return f"| {what} | {median(values):.2f} s | {percentile(values, 0.95):.2f} s | {len(values)} |"

    print(f"backup file: {median(sizes) / 1e6:.1f} MB (database {counts['bytes'] / 1e6:.1f} MB)")
    print("| step | median | p95 | runs |\n| --- | --- | --- | --- |")
    print(row("`db backup`", backups))
    print(row("`db restore --force` (staging database, then renamed into place)", restores))
    print(row("for comparison: `pg_restore --single-transaction` into an empty database", single))
    print(f"| `db restore` into a fresh data folder (initdb and start included) | {into_fresh:.2f} s | | 1 |")


if __name__ == "__main__":
    main()
