"""Past recalls as they were answered: a recall's question, time, arms and the hits it
returned (stored with its log line, migration 0034), read without asking again and without
logging anything (how often a fact was a hit and later quoted: archive/verdicts.py).

The hits are read as the caller, under row-level security: the recalling agent, its team
lead, an owner and the administrator read them (the notebooks' rule); anyone else is told
they are hidden, and sees the question and counts every member reads in recall_events."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..checks.rules import check_id
from ..db import Conn
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
