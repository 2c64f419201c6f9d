"""Shared set-up for benchmarks: a named database on the configured server, and scoring."""

from __future__ import annotations

import math
import os
import statistics
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql as pgsql

from cli_org.config import Settings
from cli_org.db.connect import admin_conninfo
from cli_org.store.bootstrap import init

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "corpora"
WORK = Path(os.environ.get("BENCH_WORK") or Path(tempfile.gettempdir()) / "cli-org-bench")


def bench_settings(name: str, fresh: bool = False) -> Settings:
    """Settings for database `bench_<name>` (created, or dropped and created with fresh)."""
    env = dict(os.environ)
    env.setdefault("CLI_ORG_DATA_DIR", str(WORK / "data"))
    env["CLI_ORG_DATABASE"] = f"bench_{name}"
    settings = Settings.from_env(env)
    if fresh and settings.embedded:
        with psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True) as conn:
            conn.execute(
                pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(settings.database_name))
            )
    init(settings, "bench")
    return settings


def eval_halves(name: str) -> list[Path]:
    """Both halves of an evaluation set (eval/NAME.tune.txt and eval/NAME.test.txt, split once
    in issue 13). Scripts that tune constants read only the tuning half (recall_tune)."""
    return [ROOT / "eval" / f"{name}.{half}.txt" for half in ("tune", "test")]


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    hits = sum(1 for doc in ranked[:k] if relevant.get(doc, 0) > 0)
    wanted = sum(1 for rel in relevant.values() if rel > 0)
    return hits / wanted if wanted else 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def median(values: list[float]) -> float:
    return statistics.median(values)


def drop_database(settings: Settings) -> None:
    """Drop the benchmark's database (embedded server only): large runs give their disk back."""
    if settings.embedded:
        with psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True) as conn:
            conn.execute(
                pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(settings.database_name))
            )
