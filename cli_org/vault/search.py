"""Vault search: BM25 keyword, dense semantic, and their fusion; one hit per note."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg

from ..db.errors import translated
from ..db.queries import sql
from ..errors import ConfigError, InputError
from .embedders import Embedder, query_embedder, vector_literal

if TYPE_CHECKING:
    from ..config import Settings

MODES = ("keyword", "semantic", "hybrid")
# BM25 constants as in common IR toolkits' defaults for short documents.
K1, B = 0.9, 0.4
# Fusion constants, chosen by measurement (benchmarks/RESULTS.md): reciprocal rank fusion
# with the dense ranking weighted above the keyword ranking.
RRF_K = 60
KEYWORD_WEIGHT, SEMANTIC_WEIGHT = 1.0, 1.0
MAX_QUERY = 2000  # characters; a longer query is cut, not refused
SNIPPET = 180


@dataclass
class Hit:
    path: str
    title: str
    heading: str
    snippet: str
    score: float
    keyword_score: float | None = None
    keyword_rank: int | None = None
    matched_terms: int = 0
    query_terms: int = 0
    semantic_score: float | None = None
    semantic_rank: int | None = None
    file_id: int = 0
    chunk_id: int = 0


@dataclass
class SearchResult:
    query: str
    mode: str
    used: str
    hits: list[Hit] = field(default_factory=list)
    notice: str | None = None
    ms: float = 0.0


def search(
    conn: psycopg.Connection,
    query: str,
    *,
    mode: str = "hybrid",
    limit: int = 10,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    exclude: tuple[str, ...] = (),
    depth: int | None = None,
) -> SearchResult:
    """Search the vault; semantic and hybrid fall back to keyword, with a notice, when no
    vectors or no query model are available. `exclude` holds LIKE patterns on the path."""
    started = time.perf_counter()
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}")
    query = query[:MAX_QUERY]
    result = SearchResult(query, mode, mode)
    depth = depth or max(limit * 3, 30)
    patterns = list(exclude)
    with translated(conn):
        if mode != "keyword":
            embedder, result.notice = _usable_embedder(conn, embedder, settings)
            if embedder is None:
                result.used = "keyword"
        keyword = _keyword(conn, query, depth, patterns) if result.used != "semantic" else []
        semantic = []
        if result.used != "keyword":
            try:
                semantic = _semantic(conn, embedder, query, depth, patterns)
            except ConfigError as exc:  # a broken query model must not break keyword search
                result.notice, result.used = f"{exc}; showing keyword results", "keyword"
                if mode == "semantic":
                    keyword = _keyword(conn, query, depth, patterns)
        result.hits = _fuse(keyword, semantic, result.used)[:limit]
        _fill(conn, query, result.hits)
    result.ms = (time.perf_counter() - started) * 1000
    return result


def prefix_pattern(prefix: str) -> str:
    """A LIKE pattern for paths under a literal prefix ('_' and '%' in it match themselves)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _usable_embedder(conn, embedder, settings) -> tuple[Embedder | None, str | None]:
    state = conn.execute(sql("search.has_vectors")).fetchone()
    if not state["yes"]:
        return None, "no embeddings yet (run `cli-org vault embed`); showing keyword results"
    if embedder is None:
        if settings is None:
            return None, "no query embedder configured; showing keyword results"
        embedder, reason = query_embedder(settings)
        if embedder is None:
            return None, f"{reason}; showing keyword results"
    if state["model"] and state["model"] != embedder.name:
        return None, f"vectors were made with {state['model']}, queries use {embedder.name}; showing keyword results"
    return embedder, None


def _keyword(conn, query: str, depth: int, exclude: list[str]) -> list[dict]:
    return conn.execute(
        sql("search.bm25"), {"query": query, "k1": K1, "b": B, "limit": depth, "exclude": exclude}
    ).fetchall()


def _semantic(conn, embedder: Embedder, query: str, depth: int, exclude: list[str]) -> list[dict]:
    if not query.strip():
        return []
    vector = vector_literal(embedder.embed([query])[0])
    with conn.transaction():
        # Chunks, not notes, come back from the index: ask for more so enough notes remain.
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(1000, max(100, depth * 3))),))
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(sql("search.dense"), {"vector": vector, "limit": depth * 3, "exclude": exclude}).fetchall()
    best: dict[int, dict] = {}
    for row in rows:
        if row["file_id"] not in best or row["similarity"] > best[row["file_id"]]["similarity"]:
            best[row["file_id"]] = row
    return sorted(best.values(), key=lambda r: -r["similarity"])[:depth]


def _fuse(keyword: list[dict], semantic: list[dict], used: str) -> list[Hit]:
    hits: dict[int, Hit] = {}
    for rank, row in enumerate(keyword, 1):
        hits[row["file_id"]] = Hit(
            "",
            "",
            "",
            "",
            0.0,
            keyword_score=float(row["score"]),
            keyword_rank=rank,
            matched_terms=row["matched"],
            query_terms=row["terms"],
            file_id=row["file_id"],
        )
    for rank, row in enumerate(semantic, 1):
        hit = hits.setdefault(row["file_id"], Hit("", "", "", "", 0.0, file_id=row["file_id"]))
        hit.semantic_score, hit.semantic_rank, hit.chunk_id = float(row["similarity"]), rank, row["chunk_id"]
    for hit in hits.values():
        if used == "keyword":
            hit.score = hit.keyword_score or 0.0
        elif used == "semantic":
            hit.score = hit.semantic_score or 0.0
        else:
            hit.score = (KEYWORD_WEIGHT / (RRF_K + hit.keyword_rank) if hit.keyword_rank else 0.0) + (
                SEMANTIC_WEIGHT / (RRF_K + hit.semantic_rank) if hit.semantic_rank else 0.0
            )
    return sorted(hits.values(), key=lambda h: (-h.score, h.file_id))


def _fill(conn, query: str, hits: list[Hit]) -> None:
    need = [h.file_id for h in hits if not h.chunk_id]
    if need:
        best = {
            r["file_id"]: r["chunk_id"] for r in conn.execute(sql("search.best_chunks"), {"ids": need, "query": query})
        }
        for hit in hits:
            hit.chunk_id = hit.chunk_id or best.get(hit.file_id, 0)
    rows = {r["chunk_id"]: r for r in conn.execute(sql("search.hit_rows"), {"ids": [h.chunk_id for h in hits]})}
    for hit in hits:
        row = rows[hit.chunk_id]
        hit.path, hit.title, hit.heading = row["path"], row["title"], row["heading"]
        hit.snippet = snippet(row["content"], query)


_WORD = re.compile(r"[A-Za-z0-9]{3,}")


def snippet(content: str, query: str, width: int = SNIPPET) -> str:
    """A one-line window of the chunk around the first query word, else its start."""
    text = " ".join(line for line in content.split("\n") if not line.startswith("#") and not line.startswith("```"))
    text = re.sub(r"\s+", " ", text).strip() or re.sub(r"\s+", " ", content).strip()
    lowered = text.lower()
    positions = [
        m.start() for w in _WORD.findall(query.lower()) for m in [re.search(rf"\b{re.escape(w)}", lowered)] if m
    ]
    start = max(0, min(positions) - width // 4) if positions else 0
    piece = text[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")
