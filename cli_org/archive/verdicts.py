"""The stored verdicts of "hits later quoted" (the rule: quoted.py), one set per archived
session that recalled, written as the session is imported; the usage queries only read them
(cli_org/sql/usage.sql, migration 0029).

Rule 1 ties a call id in the session that started first *within the usage window*, so which
of a session's recall call ids count as already tied depends on the window: each session
stores one set of verdicts for every "dropped" set a window can give it (nearly always one).
Only the administrator writes them, inside the transaction that writes the messages.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..checks.rules import check_id
from ..db import Conn, first, locks
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..limits import LOCK_WAIT
from .quoted import RULE_VERSION, SessionMessage, quoted_in_session

Dropped = tuple[str, ...]  # sorted by code point, as COLLATE "C" sorts them in usage.sql

# Messages per round trip of the server-side cursor: what is held at once besides the session
# being judged (against 100 and a whole read: benchmarks/JOURNAL.md, "After the review fixes").
MESSAGES_PER_FETCH = 1_000


@dataclass
class Judged:
    """What `judge_stale` did."""

    sessions: int  # sessions holding a recall call
    judged: int  # of them, those judged now (no verdicts yet, an older rule, new messages)


def judge_sessions(conn: Conn, ids: Collection[int]) -> int:
    """Judge again the sessions `ids` that hold a recall call, and every session sharing a
    recall call id with them, in the caller's transaction (the importer's, beside the
    messages it wrote). Returns how many were judged."""
    if not ids:
        return 0
    affected = [r["session_id"] for r in conn.execute(sql("verdicts.sharing"), {"ids": list(ids)})]
    return _judge(conn, affected)


@owns_transaction
def judge_stale(conn: Conn, lock_wait: float = LOCK_WAIT) -> Judged:
    """`cli-org archive judge`: judge_outdated() under the archive's lock (imports hold it)."""
    with translated(conn), locks.held(conn, locks.ARCHIVE, "archive judging", lock_wait):
        found = judge_outdated(conn)
        conn.commit()
    return found


def judge_outdated(conn: Conn) -> Judged:
    """Judge every session whose stored verdicts are missing (imported before verdicts were
    stored, or restored from such a backup), of an older RULE_VERSION, judged from other
    messages than it holds, or not the sets its windows need: the backfill and the rule
    change. In the caller's transaction, which holds the archive's lock (the end of every
    `archive import`, and judge_stale)."""
    now = {r["session_id"]: (r["newest"], r["messages"]) for r in conn.execute(sql("verdicts.recalling"))}
    stored: dict[int, set[tuple[Dropped, int, int, int]]] = {}
    for r in conn.execute(sql("verdicts.stored")):
        judged = (tuple(r["dropped"]), r["rule_version"], r["newest"], r["messages"])
        stored.setdefault(r["session_id"], set()).add(judged)
    needed = _variants(conn, list(now))
    stale = [sid for sid, at in now.items() if stored.get(sid, set()) != {(d, RULE_VERSION, *at) for d in needed[sid]}]
    _judge(conn, stale)
    return Judged(len(now), len(stale))


def _variants(conn: Conn, ids: list[int]) -> dict[int, set[Dropped]]:
    """Per session, every set of its recall call ids that a window can find already tied in
    an earlier session: none, then those of the closest earlier holders, then further back."""
    holders: dict[int, list[tuple[datetime, set[str]]]] = {}
    for r in conn.execute(sql("verdicts.earlier_holders"), {"ids": ids}):
        holders.setdefault(r["session_id"], []).append((r["started_at"], set(r["shared"])))
    out: dict[int, set[Dropped]] = {}
    for sid in ids:
        found: set[Dropped] = {()}
        dropped: set[str] = set()
        earlier = sorted(holders.get(sid, []), key=lambda h: h[0], reverse=True)
        for i, (started, shared) in enumerate(earlier):
            dropped |= shared
            # A window takes every session started at or after its start: holders that
            # started together come in together.
            if i + 1 == len(earlier) or earlier[i + 1][0] != started:
                found.add(tuple(sorted(dropped)))
        out[sid] = found
    return out


def _judge(conn: Conn, ids: list[int]) -> int:
    """Forget the sessions' verdicts, read their messages (one session at a time, through a
    server-side cursor), apply the rule once per dropped set and store what it found."""
    if not ids:
        return 0
    variants = _variants(conn, ids)
    conn.execute(sql("verdicts.forget"), {"ids": ids})
    sessions: list[dict[str, Any]] = []
    found: list[list[tuple[int, int, list[Any]]]] = []  # per stored set: (call id, result id, hits)

    def judge(session_id: int, rows: list[dict[str, Any]]) -> None:
        for dropped in sorted(variants[session_id]):
            # Rule 1: a call id an earlier session holds is not a recall here.
            messages = [
                SessionMessage(
                    r["kind"], r["text"], r["tool_call_id"], r["is_recall"] and (r["tool_call_id"] not in dropped)
                )
                for r in rows
            ]
            calls, verdicts = quoted_in_session(messages)
            newest = max(r["id"] for r in rows)
            sessions.append(
                {
                    "session_id": session_id,
                    "dropped": list(dropped),
                    "rule_version": RULE_VERSION,
                    "newest": newest,
                    "messages": len(rows),
                    "calls": calls,
                }
            )
            found.append([(rows[v.call]["id"], rows[v.result]["id"], v.hits) for v in verdicts])

    current: int | None = None
    batch: list[dict[str, Any]] = []
    # A server-side cursor lives in a transaction: the caller's, or on a connection in
    # autocommit mode one opened here.
    with conn.transaction() if conn.autocommit else nullcontext(), conn.cursor(name="judged_messages") as cur:
        cur.itersize = MESSAGES_PER_FETCH
        for row in cur.execute(sql("verdicts.messages"), {"ids": ids}):
            if row["session_id"] != current:
                if current is not None:
                    judge(current, batch)
                current, batch = row["session_id"], []
            batch.append(row)
    if current is not None:
        judge(current, batch)
    _store(conn, sessions, found)
    return len({s["session_id"] for s in sessions})


def _store(conn: Conn, sessions: list[dict[str, Any]], found: list[list[tuple[int, int, list[Any]]]]) -> None:
    if not sessions:
        return
    with conn.cursor() as cur:
        cur.executemany(sql("verdicts.store_session"), sessions, returning=True)
        judged = []
        while True:
            judged.append(cur.fetchone()["id"])  # type: ignore[index]
            if not cur.nextset():
                break
    recalls: dict[str, list[Any]] = {"judged": [], "call": [], "result": []}
    columns = ("judged", "call", "ordinal", "arm", "key", "quoted", "how", "evidence")
    hits: dict[str, list[Any]] = {k: [] for k in columns}
    for jid, tied in zip(judged, found, strict=True):
        for call, result, verdicts in tied:
            recalls["judged"].append(jid)
            recalls["call"].append(call)
            recalls["result"].append(result)
            for n, h in enumerate(verdicts):
                for k, v in zip(hits, (jid, call, n, h.arm, h.key, h.quoted, h.how, h.evidence), strict=True):
                    hits[k].append(v)
    if recalls["judged"]:
        conn.execute(sql("verdicts.store_recalls"), recalls)
    if hits["judged"]:
        conn.execute(sql("verdicts.store_hits"), hits)


@dataclass
class FactRecalls:
    """How a fact fared in recalls: `hits` times returned (in the recalls the caller may read),
    to `agents` distinct agents, the last at `last_hit`; of the archived sessions' recalls
    that returned it and were judged, how many later quoted it (cli_org/archive/quoted.py)."""

    fact_id: int
    hits: int
    agents: int
    last_hit: datetime | None
    judged: int
    quoted: int


@owns_transaction
def fact_recalls(conn: Conn, fact_id: int) -> FactRecalls:
    """The recall and quoting counts of one fact (migrations 0034 and 0029), one statement
    over two indexes (recall_hits_fact, quoted_hits_fact)."""
    check_id(fact_id)
    with translated(conn):
        row = first(conn, sql("verdicts.fact_recalls"), {"id": fact_id, "rule": RULE_VERSION})
    return FactRecalls(fact_id, **row)
