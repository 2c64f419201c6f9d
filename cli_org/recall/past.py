"""Past recalls as they were answered: a recall's question, time, arms and the hits it
returned (stored with its log line, migration 0034), read without asking again and without
logging anything; and how often a fact was a hit and later quoted.

The hits are read as the caller, under row-level security: the recalling agent, its team
lead, an owner and the administrator read them (the notebooks' rule); anyone else is told
they are hidden, and sees the question and counts every member reads in recall_events."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..archive.quoted import RULE_VERSION
from ..checks.rules import check_id
from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import NotFound


@dataclass
class StoredHit:
    rank: int  # 1 = first in the answer
    arm: str  # fact, memory, vault
    fact_id: int | None
    path: str | None  # the memory file (notebook:STORE) or the vault note
    line: int | None  # the memory file's line, or the notebook entry's id
    text: str  # the line the agent was shown


@dataclass
class PastRecall:
    id: int
    created_at: datetime
    agent: str | None  # None: the administrator's connection
    project: str | None
    query: str
    arms: list[str]
    hits: int  # how many it returned (recall_events), whether or not they are shown
    chars: int
    ms: int
    readable: bool  # the caller may read its hits
    shown: list[StoredHit] = field(default_factory=list)
    # Why `shown` is empty though `hits` is not: hidden from the caller, or never stored
    # (a recall logged before migration 0034).
    missing: str | None = None


@owns_transaction
def past_recall(conn: Conn, event_id: int) -> PastRecall:
    """The recall `event_id` as it was answered; NotFound for no such recall. Two indexed
    reads (the event by its key, its hits by (event_id, rank)); nothing is written."""
    check_id(event_id, "recall")
    with translated(conn):
        row = conn.execute(sql("recall.event"), {"id": event_id}).fetchone()
        if row is None:
            raise NotFound(f"no recall with id {event_id}")
        past = PastRecall(**row)
        if past.readable:
            past.shown = [StoredHit(**r) for r in conn.execute(sql("recall.event_hits"), {"id": event_id})]
    whose = past.agent or "the administrator"
    if not past.readable and past.hits:
        past.missing = f"hidden: only {whose}, its team lead or an owner may read the hits of its recalls"
    elif past.hits and not past.shown:
        past.missing = "not stored: this recall was logged before its hits were kept (migration 0034)"
    return past


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
        row = first(conn, sql("recall.fact_recalls"), {"id": fact_id, "rule": RULE_VERSION})
    return FactRecalls(fact_id, **row)
