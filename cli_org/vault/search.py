"""Vault search: BM25 keyword, dense semantic, and their fusion; one hit per note."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

from psycopg.rows import DictRow

from ..db import Conn, first, remembered
from ..db.errors import translated
from ..db.migrate import NO_VECTORS, vectors_ready
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied, ConfigError, InputError
from ..limits import check_query
from .embedders import Embedder, vector_literal

MODES = ("keyword", "semantic", "hybrid")
SNIPPET = 180


@dataclass(frozen=True)
class SearchTuning:
    """The constants of ranking; benchmarks pass variants, nothing patches them."""

    # BM25 constants as in common IR toolkits' defaults for short documents.
    k1: float = 0.9
    b: float = 0.4
    # A term in more notes than this is scored on its densest postings only; it bounds the
    # work of queries made of common words (benchmarks/RESULTS.md measures what it costs).
    per_term: int = 3000
    # Hybrid = a * z(BM25) + (1 - a) * z(cosine): each score standardised over the union of
    # both sides' candidates, every candidate scored by both sides. The keyword weight a is
    # keyword_weight times the share of the query's words the best-matching note contains:
    # BM25 is trusted as far as it explains the query, so a paraphrase (few shared words)
    # leans on meaning. Chosen by measurement on SciFact and paraphrased questions
    # (benchmarks/RESULTS.md, `fusion`).
    keyword_weight: float = 0.7
    # Scores are standardised over each side's top this-many candidates, so a deeper search
    # (a bigger --limit) does not reorder the top of the list.
    stats_depth: int = 30


TUNING = SearchTuning()


@dataclass
class NoteHit:
    path: str
    title: str
    heading: str
    snippet: str
    score: float
    keyword_score: float | None = None
    keyword_rank: int | None = None
    matched_terms: int = 0
    query_terms: int = 0
    # The query's terms (stemmed) the note holds, and every query term's BM25 idf: recall
    # weighs keyword support by rarity with them (benchmarks/JOURNAL.md, "Recall by meaning").
    matched_words: tuple[str, ...] = ()
    term_idf: dict[str, float] = field(default_factory=dict)
    semantic_score: float | None = None
    semantic_rank: int | None = None
    file_id: int = 0
    chunk_id: int = 0


@dataclass
class SearchResult:
    query: str
    mode: str
    used: str
    hits: list[NoteHit] = field(default_factory=list)
    notice: str | None = None
    ms: float = 0.0


@owns_transaction
def search(
    conn: Conn,
    query: str,
    *,
    mode: str = "hybrid",
    limit: int = 10,
    embedder: Embedder | None = None,
    exclude: tuple[str, ...] = (),
    depth: int | None = None,
    private: bool = False,
    tuning: SearchTuning = TUNING,
) -> SearchResult:
    """Search the vault; semantic and hybrid fall back to keyword, with a notice, when no
    vectors or no query embedder are available. The caller opens (and closes) the embedder;
    search never builds one. `exclude` holds LIKE patterns on the path.

    Private notes (org_vault_private, migration 0008) are left out unless `private` is
    asked for by an owner or the admin; row-level security hides them from members anyway."""
    started = time.perf_counter()
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}")
    check_query(query)
    result = SearchResult(query, mode, mode)
    depth = depth or max(limit * 3, tuning.stats_depth)
    patterns = list(exclude)
    with translated(conn):
        if private and not first(conn, sql("search.may_see_private"))["yes"]:
            raise AccessDenied("private notes are for owners; search without --private")
        if mode != "keyword":
            embedder, result.notice = _usable_embedder(conn, embedder)
            if embedder is None:
                result.used = "keyword"
        keyword = _keyword(conn, query, depth, patterns, private, tuning) if result.used != "semantic" else []
        semantic, vector = [], None
        if result.used != "keyword" and embedder is not None and query.strip():
            try:
                vector = vector_literal(embedder.embed([query])[0])
            except ConfigError as exc:  # a broken query model must not break keyword search
                result.notice, result.used = f"{exc}; showing keyword results", "keyword"
                if mode == "semantic":
                    keyword = _keyword(conn, query, depth, patterns, private, tuning)
            else:
                scored = keyword if result.used == "hybrid" else []  # the dense side's notes get BM25 too
                semantic = _semantic(conn, vector, depth, patterns, private, scored, tuning)
        hits = _candidates(keyword, semantic)
        # the text of chunks already read (`dense` and `dense_for` bring their chunks' text)
        texts = {r["chunk_id"]: r for r in semantic}
        if result.used == "hybrid":
            texts |= _complete(conn, hits, keyword, semantic, vector)
        result.hits = _rank(hits, result.used, tuning)[:limit]
        _fill(conn, query, result.hits, texts)
    result.ms = (time.perf_counter() - started) * 1000
    return result


def prefix_pattern(prefix: str) -> str:
    """A LIKE pattern for paths under a literal prefix ('_' and '%' in it match themselves)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _usable_embedder(conn: Conn, embedder: Embedder | None) -> tuple[Embedder | None, str | None]:
    if not vectors_ready(conn):
        return None, f"{NO_VECTORS}; showing keyword results"
    # kept a minute once there are vectors (a rescan or a new model shows within that)
    state = remembered(conn, "vault_vectors", lambda: first(conn, sql("search.has_vectors")), seconds=60.0,
                       keep=lambda s: bool(s["yes"]))  # fmt: skip
    if not state["yes"]:
        return None, "no embeddings yet (run `cli-org vault embed`); showing keyword results"
    if embedder is None:
        from .embedders import missing_reason

        return None, f"{missing_reason()}; showing keyword results"
    if state["model"] and state["model"] != embedder.name:
        return None, f"vectors were made with {state['model']}, queries use {embedder.name}; showing keyword results"
    return embedder, None


def _keyword(
    conn: Conn, query: str, depth: int, exclude: list[str], private: bool, tuning: SearchTuning
) -> list[DictRow]:
    return conn.execute(
        sql("search.bm25"),
        {
            "query": query,
            "k1": tuning.k1,
            "b": tuning.b,
            "limit": depth,
            "exclude": exclude,
            "private": private,
            "per_term": tuning.per_term,
        },
    ).fetchall()


@contextmanager
def hnsw_scan(conn: Conn, ef_search: int) -> Iterator[None]:
    """The settings of an HNSW scan (its candidate list, and an iterative scan that goes on
    while filters reject rows), in one statement and local to the caller's transaction (an
    autocommit connection gets one of its own around the scan)."""
    with conn.transaction() if conn.autocommit else nullcontext():
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)",
            (str(min(1000, ef_search)),),
        )
        yield


def _semantic(
    conn: Conn,
    vector: str,
    depth: int,
    exclude: list[str],
    private: bool,
    keyword: list[DictRow],
    tuning: SearchTuning,
) -> list[DictRow]:
    """A note's nearest chunk, for the `depth` nearest notes, with its text; and, given the
    keyword side's rows, the BM25 of each of these notes that side did not find."""
    first = keyword[0] if keyword else None
    terms = sorted(first["dfs"] or {}) if first else None
    # Chunks, not notes, come back from the index: ask for more so enough notes remain.
    with hnsw_scan(conn, max(100, depth * 3)):
        params = {
            "vector": vector,
            "limit": depth * 3,
            "exclude": exclude,
            "private": private,
            "depth": depth,
            "scored": [r["file_id"] for r in keyword],
            "terms": terms,
            "dfs": [float(first["dfs"][t]) for t in terms] if first and terms is not None else None,
            "n": first["n"] if first else None,
            "avgdl": first["avgdl"] if first else None,
            "k1": tuning.k1,
            "b": tuning.b,
        }
        rows = conn.execute(sql("search.dense"), params).fetchall()
    best: dict[int, DictRow] = {}
    for row in rows:
        if row["file_id"] not in best or row["similarity"] > best[row["file_id"]]["similarity"]:
            best[row["file_id"]] = row
    return sorted(best.values(), key=lambda r: -r["similarity"])[:depth]


def _candidates(keyword: list[DictRow], semantic: list[DictRow]) -> dict[int, NoteHit]:
    hits: dict[int, NoteHit] = {}
    for rank, row in enumerate(keyword, 1):
        hits[row["file_id"]] = NoteHit(
            "",
            "",
            "",
            "",
            0.0,
            keyword_score=float(row["score"]),
            keyword_rank=rank,
            matched_terms=row["matched"],
            query_terms=row["terms"],
            matched_words=tuple(row["words"] or ()),
            term_idf={t: float(v) for t, v in (row["idfs"] or {}).items()},
            file_id=row["file_id"],
        )
    for rank, row in enumerate(semantic, 1):
        hit = hits.setdefault(row["file_id"], NoteHit("", "", "", "", 0.0, file_id=row["file_id"]))
        hit.semantic_score, hit.semantic_rank, hit.chunk_id = float(row["similarity"]), rank, row["chunk_id"]
    return hits


def _complete(
    conn: Conn, hits: dict[int, NoteHit], keyword: list[DictRow], semantic: list[DictRow], vector: str | None
) -> dict[int, DictRow]:
    """Score every candidate on both sides, so fusion never has to guess a missing score: the
    notes only the dense side found were scored by `dense` (a note holding no query term: 0).
    Returns the rows of the chunks it read, by chunk id, with their text."""
    only_dense = [fid for fid, h in hits.items() if h.keyword_score is None]
    found = {r["file_id"]: r for r in semantic if r["keyword_score"] is not None}
    for fid in only_dense:
        row = found.get(fid)
        hits[fid].keyword_score = float(row["keyword_score"]) if row else 0.0
        hits[fid].matched_terms = row["keyword_matched"] if row else 0
        hits[fid].query_terms = keyword[0]["terms"] if keyword else 0
        hits[fid].matched_words = tuple(row["keyword_words"] or ()) if row else ()
        hits[fid].term_idf = {t: float(v) for t, v in (keyword[0]["idfs"] or {}).items()} if keyword else {}
    only_keyword = [fid for fid, h in hits.items() if h.semantic_score is None]
    read: dict[int, DictRow] = {}
    if only_keyword and vector:
        for row in conn.execute(sql("search.dense_for"), {"vector": vector, "ids": only_keyword}):
            hit = hits[row["file_id"]]
            hit.semantic_score, hit.chunk_id = float(row["similarity"]), row["chunk_id"]
            read[row["chunk_id"]] = row
    return read


def _rank(hits: dict[int, NoteHit], used: str, tuning: SearchTuning) -> list[NoteHit]:
    if used == "hybrid":
        depth = tuning.stats_depth
        basis = {f for f, h in hits.items() if min(h.keyword_rank or depth + 1, h.semantic_rank or depth + 1) <= depth}
        kw = _standardise({f: h.keyword_score or 0.0 for f, h in hits.items()}, basis)
        se = _standardise({f: h.semantic_score or 0.0 for f, h in hits.items()}, basis)
        coverage = max((h.matched_terms / h.query_terms for h in hits.values() if h.query_terms), default=0.0)
        weight = tuning.keyword_weight * coverage
    for fid, hit in hits.items():
        if used == "keyword":
            hit.score = hit.keyword_score or 0.0
        elif used == "semantic":
            hit.score = hit.semantic_score or 0.0
        else:
            hit.score = weight * kw[fid] + (1 - weight) * se[fid]
    return sorted(hits.values(), key=lambda h: (-h.score, h.file_id))


def _standardise(scores: dict[int, float], basis: set[int]) -> dict[int, float]:
    values = [scores[k] for k in basis]
    mean = sum(values) / len(values) if values else 0.0
    spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 if values else 0.0
    return {k: (v - mean) / spread if spread else 0.0 for k, v in scores.items()}


def _fill(conn: Conn, query: str, hits: list[NoteHit], texts: dict[int, DictRow]) -> None:
    """Each hit's path, title, heading and snippet; `texts`: rows of chunks already read (a
    row whose `content` is NULL brought no text)."""
    need = [h.file_id for h in hits if not h.chunk_id]
    if need:
        best = {
            r["file_id"]: r["chunk_id"] for r in conn.execute(sql("search.best_chunks"), {"ids": need, "query": query})
        }
        for hit in hits:
            hit.chunk_id = hit.chunk_id or best.get(hit.file_id, 0)
    rows = {h.chunk_id: texts[h.chunk_id] for h in hits if h.chunk_id in texts and texts[h.chunk_id]["path"]}
    unread = [h.chunk_id for h in hits if h.chunk_id not in rows]
    if unread:
        rows |= {r["chunk_id"]: r for r in conn.execute(sql("search.hit_rows"), {"ids": unread})}
    for hit in hits:
        row = rows[hit.chunk_id]
        hit.path, hit.title, hit.heading = row["path"], row["title"], row["heading"]
        hit.snippet = snippet(row["content"], query)
    empty = [h for h in hits if not h.snippet]
    if empty:
        # A chunk of nothing but boilerplate (a lone "h/t" line) has no snippet: the note's
        # first chunk that has one stands in for it.
        chunks = conn.execute(sql("search.note_chunks"), {"ids": [h.file_id for h in empty]}).fetchall()
        for hit in empty:
            for row in chunks:
                if row["file_id"] == hit.file_id and (text := snippet(row["content"], query)):
                    hit.chunk_id, hit.heading, hit.snippet = row["chunk_id"], row["heading"], text
                    break


_WORD = re.compile(r"[A-Za-z0-9]{3,}")
# Lines that are no content of a note, never a snippet: a credit ("h/t Name"; "via @x" or
# "thanks to Ann" in a short line), a labelled source or see-also line, and a line of links
# with under three words besides them (a link list). On the TIL vault a credit line was once
# a whole snippet.
_CREDIT = re.compile(r"^\W*(h/t|hat tip)\b", re.I)
_SHORT_CREDIT = re.compile(r"^\W*(via|credits?|thanks to|props to)\b", re.I)
_SHORT_CREDIT_WORDS = 8
_LABEL = re.compile(r"^\W*(sources?|references?|see also|related)\s*:", re.I)
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LINKS = re.compile(r"!?\[[^\]]*\]\([^)]*\)|<?https?://\S+")
_LINK_LIST_WORDS = 3


def boilerplate(line: str) -> bool:
    """A credit, source or link-list line (see _CREDIT)."""
    if _CREDIT.match(line) or _LABEL.match(line):
        return True
    if _SHORT_CREDIT.match(line) and len(line.split()) <= _SHORT_CREDIT_WORDS:
        return True
    return bool(_LINKS.search(line)) and len(re.findall(r"[A-Za-z]{2,}", _LINKS.sub(" ", line))) < _LINK_LIST_WORDS


def snippet(content: str, query: str, width: int = SNIPPET) -> str:
    """A one-line window of the chunk's content around the first query word, else its start:
    headings, code fences and boilerplate lines left out, a markdown link shown as its text.
    A chunk of nothing else gives "" (search then shows another chunk of the note, and
    recall leaves out a note that has none)."""
    lines = [line for line in content.split("\n") if not line.startswith(("#", "```")) and not boilerplate(line)]
    text = re.sub(r"\s+", " ", _MD_LINK.sub(r"\1", " ".join(lines))).strip()
    lowered = text.lower()
    positions = [
        m.start() for w in _WORD.findall(query.lower()) for m in [re.search(rf"\b{re.escape(w)}", lowered)] if m
    ]
    start = max(0, min(positions) - width // 4) if positions else 0
    piece = text[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")
