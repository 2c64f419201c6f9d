"""Adoption: how many sessions used cli-org's memory, per harness, and from cli-org's own log."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from .quoted import ARMS, MIN_CONTENT_WORDS, PHRASE_WORDS, RULE_VERSION, ArmQuoted, share

MAX_DAYS = 3650
DEFAULT_DAYS = 30  # the window `usage` and the Usage page show unless asked for another


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


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {k: float(v) if isinstance(v, Decimal) else v for k, v in row.items()}


def _window(days: int) -> dict[str, Any]:
    """The window's parameter, once `days` is in range (the one check for every usage query)."""
    if not 1 <= days <= MAX_DAYS:
        raise InputError(f"--days must be between 1 and {MAX_DAYS}, not {days}")
    return {"window": f"{days} days"}


@owns_transaction
def usage(conn: Conn, days: int = DEFAULT_DAYS) -> Usage:
    params = _window(days)
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


# --- the Usage page's data: adoption over time, per agent, per session, and the
# hits later quoted (the rule lives in quoted.py) ----------------------------------------------

BUCKETS = ("day", "week")


@dataclass
class AdoptionPoint:
    """One day or week (its first day, UTC) of one harness, from the archive."""

    period: date
    harness: str
    sessions: int  # top-level sessions started then
    sessions_using: int  # of them, those that recalled or remembered (subagents included)
    sessions_recalled: int
    sessions_remembered: int


@dataclass
class AgentPoint:
    """One day or week of one agent, from cli-org's own log."""

    period: date
    agent: str
    recalls: int
    remembers: int


@dataclass
class AgentUsage:
    """One agent over the window, from cli-org's own log."""

    agent: str
    recalls: int
    remembers: int
    days_recalling: int
    chars_mean: int | None  # characters per recall answer (recall_events.chars)
    chars_median: int | None
    chars_p95: int | None


@dataclass
class SessionUsage:
    """One archived session that recalled or remembered (a subagent or continuation on its
    own row, naming its parent)."""

    harness: str
    session: str
    parent: str | None
    project: str | None
    started_at: datetime | None
    recall_calls: int
    remember_calls: int
    results: int  # recall results the transcript holds
    result_chars_median: int | None  # characters of those results
    tied: int = 0  # recalls tied to this session (quoted.py, rule 1)
    hits: int = 0
    quoted: int = 0  # hits later quoted


@dataclass
class Quoted:
    """The hits-later-quoted figures over the window (rule: cli_org/archive/quoted.py)."""

    phrase_words: int  # the rule's constants, so a reader knows what was counted
    min_content_words: int
    sessions: int  # sessions holding a recall call
    recall_calls: int
    tied: int  # recalls whose call and result are both in the session
    arms: list[ArmQuoted]
    # Sessions whose verdicts are not stored for this rule: imported before verdicts were, or
    # judged by an older rule; counted in `sessions` only, until `cli-org archive judge`.
    unjudged: int = 0


@dataclass
class ArchiveSpan:
    """The whole archive, beside the window: how many sessions, when the newest began, and
    the smallest window (in days, at most MAX_DAYS) that would hold it; None when the window
    already does or nothing is archived."""

    sessions: int
    newest: datetime | None
    wider_days: int | None


@dataclass
class UsageDetail(Usage):
    """Everything the Usage page shows: `usage()` plus time, agents, sessions and quotes."""

    bucket: str
    over_time: list[AdoptionPoint]
    agents_over_time: list[AgentPoint]
    agents: list[AgentUsage]
    sessions: list[SessionUsage]
    recalls_per_using_session: float | None  # recall calls / sessions that recalled
    quoted: Quoted
    archive: ArchiveSpan | None = None


def _span(row: dict[str, Any], days: int) -> ArchiveSpan:
    newest = row["newest"]
    wider = None
    if newest is not None:
        age = datetime.now(UTC) - newest
        need = max(1, math.ceil(age / timedelta(days=1)) + 1)  # a day more: the page is read later than it is drawn
        wider = min(need, MAX_DAYS) if need > days and days < MAX_DAYS else None
    return ArchiveSpan(int(row["sessions"]), newest, wider)


def _quoted_pass(conn: Conn, params: dict[str, Any]) -> tuple[Quoted, dict[int, tuple[int, int, int]]]:
    """The hits later quoted over the window, from the verdicts stored at import
    (verdicts.py): the figures, and per session (tied, hits, quoted)."""
    arms = {arm: ArmQuoted(arm, 0, 0, 0, 0, 0, 0, None) for arm in ARMS}
    per_session: dict[int, tuple[int, int, int]] = {}
    calls: dict[int, int] = {}
    unjudged: set[int] = set()
    for r in conn.execute(sql("usage.quoted_per_session"), {**params, "rule": RULE_VERSION}):
        sid = r["session_id"]
        calls[sid] = r["calls"]
        if not r["judged"]:
            unjudged.add(sid)
        tied, hits, later = per_session.get(sid, (r["tied"], 0, 0))
        per_session[sid] = (tied, hits + r["hits"], later + r["quoted"])
        if r["arm"]:
            a = arms[r["arm"]]
            for k in ("recalls", "hits", "quoted", "by_id", "by_path", "by_phrase"):
                setattr(a, k, getattr(a, k) + r[k])
    for a in arms.values():
        a.share = share(a.quoted, a.hits)
    tied_total = sum(t for t, _, _ in per_session.values())
    figures = Quoted(
        PHRASE_WORDS, MIN_CONTENT_WORDS, len(calls), sum(calls.values()), tied_total, list(arms.values()), len(unjudged)
    )
    return figures, per_session


@owns_transaction
def hits_later_quoted(conn: Conn, days: int = 30) -> Quoted:
    """Per arm, for recalls tied to archived sessions started in the window: hits and hits
    later quoted (the rule: cli_org/archive/quoted.py)."""
    params = _window(days)
    with translated(conn):
        return _quoted_pass(conn, params)[0]


@owns_transaction
def usage_detail(conn: Conn, days: int = 30, bucket: str = "day") -> UsageDetail:
    """The Usage page's data: adoption per harness over time (archive), per agent (log),
    per session, characters per recall, and the hits later quoted."""
    params = _window(days)
    if bucket not in BUCKETS:
        raise InputError(f"bucket must be one of {', '.join(BUCKETS)}, not {bucket!r}")
    summary = usage(conn, days)
    timed = {**params, "bucket": bucket}
    with translated(conn):
        over_time = [AdoptionPoint(**r) for r in conn.execute(sql("usage.over_time"), timed)]
        agents_over_time = [AgentPoint(**r) for r in conn.execute(sql("usage.agents_over_time"), timed)]
        agents = [AgentUsage(**r) for r in conn.execute(sql("usage.by_agent"), params)]
        rows = conn.execute(sql("usage.by_session"), params).fetchall()
        quoted, per_session = _quoted_pass(conn, params)
        archive = _span(first(conn, sql("usage.archive_span")), days)
    sessions = []
    for r in rows:
        tied, hits, later = per_session.get(r["id"], (0, 0, 0))
        sessions.append(SessionUsage(**{k: v for k, v in r.items() if k != "id"}, tied=tied, hits=hits, quoted=later))
    recalled = [s for s in sessions if s.recall_calls]
    per_session_calls = round(sum(s.recall_calls for s in recalled) / len(recalled), 2) if recalled else None
    return UsageDetail(
        **vars(summary),
        bucket=bucket,
        over_time=over_time,
        agents_over_time=agents_over_time,
        agents=agents,
        sessions=sessions,
        recalls_per_using_session=per_session_calls,
        quoted=quoted,
        archive=archive,
    )
