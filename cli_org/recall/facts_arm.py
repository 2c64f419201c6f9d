"""The [fact] arm: strict full text or substring, else a loose word-prefix pass."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..db import Conn
from ..db.queries import sql
from ..db.session import owns_transaction
from ..facts import Fact
from .terms import needed, positive_words, terms, word_start_patterns


@dataclass
class FactHit:
    fact: Fact
    match: str  # strict | loose
    score: float
    # Everyone who asserts this claim now: each author's copy is its own row (claim
    # squatting, migration 0008), shown once.
    authors: list[str] = field(default_factory=list)


def _once(hits: list[FactHit], limit: int) -> list[FactHit]:
    """One hit per claim (subject, claim, project), naming every author, best first."""
    kept: dict[tuple, FactHit] = {}
    for hit in hits:
        f = hit.fact
        first = kept.setdefault((f.subject, f.claim, f.project), hit)
        if f.author not in first.authors:
            first.authors.append(f.author)
    return list(kept.values())[:limit]


@owns_transaction
def recall_facts(conn: Conn, query: str, *, project: str | None, limit: int) -> list[FactHit]:
    query = query.strip()
    if not positive_words(query):
        # Only exclusions ("-a -b"): they ask for nothing, and as a full-text query they
        # match every fact, each ranked (the review's 400-term attack).
        return []
    rows = conn.execute(
        sql("recall.facts_strict"),
        {
            "query": query,
            "project": project,
            "limit": limit * 2,  # room for copies of one claim by several authors
            # A substring of two letters matches almost anything.
            "substring": len(query) >= 3,
        },
    ).fetchall()
    if rows:
        return _once([FactHit(_fact(r), "strict", float(r["rank"])) for r in rows], limit)
    words = terms(" ".join(positive_words(query)))
    if not words:
        return []
    rows = conn.execute(
        sql("recall.facts_loose"),
        {
            "patterns": word_start_patterns(words),
            "need": needed(len(words)),
            "project": project,
            "limit": limit * 2,
        },
    ).fetchall()
    return _once([FactHit(_fact(r), "loose", r["matched"] / len(words)) for r in rows], limit)


def _fact(row: dict) -> Fact:
    return Fact(**{f.name: row[f.name] for f in fields(Fact)})
