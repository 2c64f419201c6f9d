"""Adoption: how many sessions used cli-org's memory, per harness, and from cli-org's own log."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError

MAX_DAYS = 3650


@dataclass
class HarnessUsage:
    harness: str
    sessions: int
    sessions_using: int
    recall_calls: int
    remember_calls: int
    adoption_pct: float


@dataclass
class LogUsage:
    """From recall_events and memory_facts: calls however the agent spelled them."""

    agents: int
    agents_using: int
    recall_calls: int
    remember_calls: int
    adoption_pct: float | None


@dataclass
class Usage:
    days: int
    harnesses: list[HarnessUsage]
    log: LogUsage  # cli-org's own record of recalls and remembers


def _plain(row: dict) -> dict:
    return {k: float(v) if isinstance(v, Decimal) else v for k, v in row.items()}


@owns_transaction
def usage(conn: Conn, days: int = 30) -> Usage:
    if not 1 <= days <= MAX_DAYS:
        raise InputError(f"--days must be between 1 and {MAX_DAYS}, not {days}")
    params = {"window": f"{days} days"}
    with translated(conn):
        harnesses = [HarnessUsage(**_plain(r)) for r in conn.execute(sql("usage.by_harness"), params)]
        log = LogUsage(**_plain(first(conn, sql("usage.from_log"), params)))
    return Usage(days, harnesses, log)
