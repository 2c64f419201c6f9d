"""Adoption: how many sessions used cli-org's memory, per harness, and from cli-org's own log."""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from .quoted import (
    MIN_CONTENT_WORDS,
    PHRASE_WORDS,
    ArmQuoted,
    RecallVerdict,
    SessionMessage,
    per_arm,
    quoted_in_session,
)

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


# The verdicts of sessions already judged, by what decides them: the server, database and
# reader, the session,
# its newest readable message and their count (the archive only grows by import), and the
# recall call ids an earlier session already claimed. A long-lived process (the web page)
# then reads only sessions it has not judged: 1,000 archived sessions that recalled cost
# about 3 s to judge (benchmarks/usage_scale.py), which the page would pay on every request.
# The web server's workers and its warm-up thread share it: every read, insert and eviction
# holds _JUDGED_LOCK; judging does not.
_JUDGED: OrderedDict[tuple[Any, ...], tuple[int, list[RecallVerdict]]] = OrderedDict()
_JUDGED_MAX = 20_000  # sessions remembered; the oldest is forgotten first
_JUDGED_LOCK = threading.Lock()


def _quoted_pass(conn: Conn, params: dict[str, Any]) -> tuple[Quoted, dict[int, tuple[int, int, int]]]:
    """Apply the rule to every session holding a recall call; read the messages only of
    sessions whose verdicts are not known already."""
    server = (conn.info.host, conn.info.port)
    seen_calls: set[str] = set()
    order: list[tuple[int, tuple[Any, ...]]] = []
    dropped_of: dict[int, frozenset[str]] = {}
    # In the order the sessions started (rule 1: a call id is tied in the first).
    for row in conn.execute(sql("usage.recall_session_keys"), params):
        ids = [i for i in row["recall_ids"] if i]
        # A call id met in an earlier session (a continuation repeats the call) is tied there.
        dropped = frozenset(i for i in ids if i in seen_calls)
        seen_calls.update(ids)
        key = (server, row["db"], row["reader"], row["session_id"], row["newest"], row["messages"], dropped)
        order.append((row["session_id"], key))
        dropped_of[row["session_id"]] = dropped
    # This request's verdicts: those remembered, read under the lock, and the fresh ones.
    known: dict[tuple[Any, ...], tuple[int, list[RecallVerdict]]] = {}
    with _JUDGED_LOCK:
        for _, key in order:
            if key in _JUDGED:
                _JUDGED.move_to_end(key)
                known[key] = _JUDGED[key]
    missing = [sid for sid, key in order if key not in known]
    if missing:
        judged = _judge_sessions(conn, missing, dropped_of)
        fresh = {key: judged[sid] for sid, key in order if sid in judged}
        known.update(fresh)
        with _JUDGED_LOCK:
            _JUDGED.update(fresh)
            while len(_JUDGED) > _JUDGED_MAX:
                _JUDGED.popitem(last=False)
    verdicts: list[RecallVerdict] = []
    per_session: dict[int, tuple[int, int, int]] = {}
    calls = 0
    for sid, key in order:
        n, found = known[key]
        calls += n
        verdicts.extend(found)
        hits = sum(len(v.hits) for v in found)
        per_session[sid] = (len(found), hits, sum(h.quoted for v in found for h in v.hits))
    quoted = Quoted(PHRASE_WORDS, MIN_CONTENT_WORDS, len(order), calls, len(verdicts), per_arm(verdicts))
    return quoted, per_session


# Messages per round trip of the server-side cursor: what is held at once besides the session
# being judged (against 100 and a whole read: benchmarks/JOURNAL.md, "After the review fixes").
MESSAGES_PER_FETCH = 1_000


def _judge_sessions(
    conn: Conn, ids: list[int], dropped_of: dict[int, frozenset[str]]
) -> dict[int, tuple[int, list[RecallVerdict]]]:
    """Read the named sessions' messages, one session at a time, and apply the rule. The
    messages stream through a server-side cursor, MESSAGES_PER_FETCH at a time, so only
    one session's are held whole."""
    judged: dict[int, tuple[int, list[RecallVerdict]]] = {}

    def judge(session_id: int, messages: list[SessionMessage]) -> None:
        for m in messages:
            if m.is_recall and m.tool_call_id in dropped_of.get(session_id, ()):
                m.is_recall = False
        judged[session_id] = quoted_in_session(messages)

    current: int | None = None
    batch: list[SessionMessage] = []
    # A server-side cursor lives in a transaction: the one the caller's statements opened
    # (@owns_transaction ends it), or on a connection in autocommit mode one opened here.
    with conn.transaction() if conn.autocommit else nullcontext(), conn.cursor(name="usage_recall_sessions") as cur:
        cur.itersize = MESSAGES_PER_FETCH
        for row in cur.execute(sql("usage.recall_sessions"), {"ids": ids}):
            if row["session_id"] != current:
                if current is not None:
                    judge(current, batch)
                current, batch = row["session_id"], []
            batch.append(SessionMessage(row["kind"], row["text"], row["tool_call_id"], bool(row["is_recall"])))
    if current is not None:
        judge(current, batch)
    return judged


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
    )
