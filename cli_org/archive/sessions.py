"""Full-text search over archived messages: newest matching message first, no model call."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import psycopg

from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from ..limits import check_query
from ..recall.terms import positive_words
from .records import HARNESSES

MAX_LIMIT = 50


@dataclass
class MessageHit:
    harness: str
    session: str
    project: str | None
    occurred_at: datetime | None
    kind: str
    tool_name: str | None
    rank: float
    snippet: str


@owns_transaction
def search_messages(
    conn: psycopg.Connection, query: str, *, limit: int = 10, harness: str | None = None
) -> list[MessageHit]:
    """Messages matching every keyword (web-search syntax: "phrase", -word, or)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    if harness is not None and harness not in HARNESSES:
        raise InputError(f"harness {harness!r} is not one of {', '.join(HARNESSES)}")
    if not query.strip():
        raise InputError("give at least one keyword")
    check_query(query)
    if not positive_words(query):
        raise InputError("give at least one keyword that is not excluded with '-'")
    params = {"query": query, "limit": limit, "harness": harness}
    with translated(conn):
        if not conn.execute(sql("archive.search_terms"), params).fetchone()["terms"]:
            raise InputError(f"{query!r} has no searchable words (only stop words or punctuation)")
        rows = conn.execute(sql("archive.search_messages"), params).fetchall()
    return [MessageHit(**{**r, "snippet": re.sub(r"\s+", " ", r["snippet"]).strip()}) for r in rows]
