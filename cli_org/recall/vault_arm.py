"""The [vault] arm: vault search, shaped so that vector-only hits never fill the answer."""

from __future__ import annotations

from dataclasses import dataclass

from ..db import Conn
from ..db.session import owns_transaction
from ..shaping import SHAPING, VaultShaping
from ..vault.embedders import Embedder
from ..vault.search import NoteHit, prefix_pattern, search


@dataclass
class VaultHit:
    hit: NoteHit
    support: str  # keyword | vector-only


def exclusions(extra: list[str]) -> tuple[str, ...]:
    """The caller's own ORG_RECALL_EXCLUDE prefixes, on top of the private notes that search
    always leaves out (the rule is org_vault_private, migration 0008)."""
    return tuple(prefix_pattern(p) for p in extra)


def idf_coverage(hit: NoteHit) -> float:
    """The share of the query's summed idf that the note's shared words carry: a shared rare
    word is strong evidence, shared common words weak. Without idfs (keyword-only callers),
    the plain share of words."""
    total = sum(hit.term_idf.values())
    if not total:
        return hit.matched_terms / hit.query_terms if hit.query_terms else 0.0
    return sum(hit.term_idf.get(w, 0.0) for w in hit.matched_words) / total


def has_keyword_support(hit: NoteHit, shaping: VaultShaping, unknown: bool = False) -> bool:
    """The note shares half of the query's words, or three of a long query's (one shared
    common word is noise), or words carrying `idf_share` of the query's rarity, and, where
    vectors exist, is close in meaning too: off-topic questions share words as well."""
    counted = hit.matched_terms >= shaping.words_needed(hit.query_terms)
    # Rarity needs idfs to weigh and a cosine to check: without vectors the count rule alone.
    rare = (
        bool(shaping.idf_share)
        and bool(hit.term_idf)
        and hit.semantic_score is not None
        and hit.semantic_score >= shaping.idf_similarity
        and idf_coverage(hit) >= shaping.idf_share
    )
    shares = hit.matched_terms > 0 and (counted or rare)
    base = shaping.keyword_similarity
    if shaping.all_words_similarity is not None and hit.query_terms and hit.matched_terms == hit.query_terms:
        base = min(base, shaping.all_words_similarity)
    floor = max(base, shaping.unknown_similarity) if unknown else base
    return shares and (hit.semantic_score is None or hit.semantic_score >= floor)


@owns_transaction
def recall_vault(
    conn: Conn,
    query: str,
    *,
    limit: int,
    embedder: Embedder | None,
    exclude: list[str],
    shaping: VaultShaping = SHAPING,
    unknown: bool = False,
) -> tuple[list[VaultHit], str | None]:
    """`unknown`: the question holds a word the memory has never seen (`recall.inputs`, `unknown`)."""
    result = search(conn, query, mode="hybrid", limit=limit * 2, embedder=embedder, exclude=exclusions(exclude))
    return shape(result.hits, limit=limit, shaping=shaping, unknown=unknown), result.notice


def shape(hits: list[NoteHit], *, limit: int, shaping: VaultShaping = SHAPING, unknown: bool = False) -> list[VaultHit]:
    """Keyword-supported hits stay; vector-only hits need one beside them and a similarity
    floor. Same title and snippet twice take one slot; a note with no snippet (nothing but
    boilerplate) none. A question holding a word the memory
    lacks raises every floor to unknown_similarity. Kept hits are ordered by `order_key`
    (merge keeps vector-only hits to at most half of the answer)."""
    if not any(has_keyword_support(h, shaping, unknown) for h in hits):
        return []
    kept: list[VaultHit] = []
    seen: set[tuple[str, str]] = set()
    for hit in hits:
        key = (hit.title.strip().lower(), hit.snippet.strip().lower())
        if key in seen or not hit.snippet.strip():
            # A note of nothing but boilerplate (credit lines, link lists: search.py) is no answer.
            continue
        floor = max(shaping.min_similarity, shaping.unknown_similarity) if unknown else shaping.min_similarity
        if has_keyword_support(hit, shaping, unknown):
            support = "keyword"
        elif (hit.semantic_score or 0.0) >= floor:
            support = "vector-only"
        else:
            continue
        seen.add(key)
        kept.append(VaultHit(hit, support))
        if len(kept) == limit:
            break
    if kept and (shaping.order_cosine or shaping.order_support):
        kept.sort(key=lambda v: -order_key(v.hit, shaping.order_cosine, shaping.order_support))
    return kept


def order_key(hit: NoteHit, cosine_weight: float, support_weight: float) -> float:
    """Where a kept hit sits: the fused score, plus weighted cosine and rarity coverage."""
    return hit.score + cosine_weight * (hit.semantic_score or 0.0) + support_weight * idf_coverage(hit)
