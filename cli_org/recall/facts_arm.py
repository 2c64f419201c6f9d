"""The [fact] arm: strict full text or substring, else a loose word-prefix pass."""

from __future__ import annotations

from dataclasses import dataclass, fields

import psycopg

from ..db.queries import sql
from ..facts import Fact
from .terms import needed, terms, word_start_patterns


@dataclass
class FactHit:
    fact: Fact
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
        return [FactHit(_fact(r), "strict", float(r["rank"])) for r in rows]
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
    return [FactHit(_fact(r), "loose", r["matched"] / len(words)) for r in rows]


def _fact(row: dict) -> Fact:
    return Fact(**{f.name: row[f.name] for f in fields(Fact)})
