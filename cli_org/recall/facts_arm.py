"""The [fact] arm: strict full text or substring, else a loose word-prefix pass."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from ..db.queries import sql
from .terms import needed, terms, word_start_patterns


@dataclass
class FactHit:
    id: int
    subject: str
    claim: str
    source: str
    author: str
    project: str | None
    kind: str
    confidence: str
    created_at: datetime
    match: str  # strict | loose
    score: float


def recall_facts(conn: psycopg.Connection, query: str, *, project: str | None, limit: int) -> list[FactHit]:
    query = query.strip()
    if not query:
        return []
    rows = conn.execute(
        sql("recall.facts_strict"),
        {
            "query": query,
            "project": project,
            "limit": limit,
            # A substring of two letters matches almost anything.
            "substring": len(query) >= 3,
        },
    ).fetchall()
    if rows:
        return [FactHit(**_fields(r), match="strict", score=float(r["rank"])) for r in rows]
    words = terms(query)
    if not words:
        return []
    rows = conn.execute(
        sql("recall.facts_loose"),
        {
            "patterns": word_start_patterns(words),
            "need": needed(len(words)),
            "project": project,
            "limit": limit,
        },
    ).fetchall()
    return [FactHit(**_fields(r), match="loose", score=r["matched"] / len(words)) for r in rows]


def _fields(row: dict) -> dict:
    return {
        k: row[k] for k in ("id", "subject", "claim", "source", "author", "project", "kind", "confidence", "created_at")
    }
