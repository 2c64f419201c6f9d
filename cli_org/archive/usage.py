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
class ToolUsage:
    """Calls a long-lived face (the MCP server) served, under the tool's real name."""

    face: str
    tool: str
    calls: int
    refused: int  # a write check, a right or a cap said no, or the call failed
    agents: int


@dataclass
class Usage:
    days: int
    harnesses: list[HarnessUsage]
    log: LogUsage  # cli-org's own record of recalls and remembers (every face)
    tools: list[ToolUsage]  # per face and tool, from tool_calls


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
        tools = [ToolUsage(**r) for r in conn.execute(sql("usage.by_tool"), params)]
    return Usage(days, harnesses, log, tools)


FACES = ("mcp", "web", "hook")  # the CHECK on tool_calls.face (migration 0016)


@owns_transaction
def log_call(conn: Conn, *, face: str, tool: str, ok: bool, ms: float) -> None:
    """Record one call a face served, as the connected agent (row-level security)."""
    if face not in FACES:
        raise InputError(f"face must be one of {', '.join(FACES)}, not {face!r}")
    with translated(conn):
        conn.execute(sql("usage.log_call_unflushed"))
        conn.execute(sql("usage.log_call"), {"face": face, "tool": tool, "ok": ok, "ms": max(0, round(ms))})
