"""The [fact] arm: strict full text or substring, else a loose word-prefix pass (the
specification's three lexical passes, unchanged), then a semantic pass over fact vectors
whose hits must clear the floor and second signal of FactShaping."""

from __future__ import annotations

import itertools
from contextlib import nullcontext
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from psycopg.rows import DictRow

from ..db import Conn, first, remembered
from ..db.queries import sql
from ..db.session import owns_transaction
from ..shaping import FACT_SHAPING, FactShaping
from ..store.facts import Fact
from ..vault.search import hnsw_scan
from .inputs import read_inputs
from .terms import needed, positive_words, terms, word_start_patterns, word_start_regex

if TYPE_CHECKING:
    from ..vault.embedders import Embedder


@dataclass
class FactHit:
    fact: Fact
    match: str  # strict | loose | semantic
    score: float  # strict: full-text rank; loose: share of terms; semantic: cosine similarity
    # Everyone who asserts this claim now: each author's copy is its own row (claim
    # squatting, migration 0008), shown once.
    authors: list[str] = field(default_factory=list)
    why: str = ""  # semantic hits: the signals that let it in
    # Close in meaning and standing out (FactShaping.leads): merge puts it before the
    # vault's best note.
    lead: bool = False
    similarity: float | None = None  # cosine to the question, where the semantic pass scored it
    vector_only: bool = False  # found by meaning alone, sharing no word with the question
    z: float | None = None  # standard deviations above the question's background over facts in scope


def settle_leads(hits: list[FactHit], best_note: float | None, shaping: FactShaping) -> None:
    """A fact leads only over a vault note it is at least as close to in meaning (when the
    shaping asks for it and the vault's best note has a cosine)."""
    if not shaping.lead_beats_vault or best_note is None:
        return
    for hit in hits:
        hit.lead = hit.lead and hit.similarity is not None and hit.similarity >= best_note


def _once(hits: list[FactHit], limit: int) -> list[FactHit]:
    """One hit per claim (subject, claim, project), naming every author, best first."""
    kept: dict[tuple[str, str, str | None], FactHit] = {}
    for hit in hits:
        f = hit.fact
        first = kept.setdefault((f.subject, f.claim, f.project), hit)
        if f.author not in first.authors:
            first.authors.append(f.author)
    return list(kept.values())[:limit]


@owns_transaction
def recall_facts(
    conn: Conn,
    query: str,
    *,
    project: str | None,
    limit: int,
    embedder: Embedder | None = None,
    shaping: FactShaping = FACT_SHAPING,
    unknown: bool = False,
    pieces: tuple[list[list[str]], int] | None = None,
    scan_set: bool = False,
) -> list[FactHit]:
    """The lexical passes, then (given an embedder) semantic hits the lexical ones missed:
    lexical hits first, semantic ones after them, at most `limit` in all; facts that lead
    (FactShaping.leads) come first after the strict ones, closest first.

    `pieces`: `lexical_texts(query)` already cut by `recall.inputs`, with its `top` (else
    read here);
    `scan_set`: the HNSW settings for `candidates(limit)` are set in this transaction."""
    lexical = _lexical(conn, query, project=project, limit=limit, pieces=pieces)
    if embedder is None or not positive_words(query):
        return lexical
    if len(lexical) >= limit and all(h.match == "strict" for h in lexical):
        return lexical
    nearest = _nearest(conn, query, project, limit, embedder, shaping, scan_set=scan_set)
    scored = {row["id"]: (sim, z) for row, sim, z in nearest}
    words = terms(" ".join(positive_words(query)))
    patterns = word_start_regex(words)
    shared = {
        row["id"]: sum(1 for p in patterns if p.search(f"{row['subject']} {row['claim']}")) for row, _, _ in nearest
    }

    def rank(h: FactHit) -> float:
        return -shaping.order(scored[h.fact.id][0], shared[h.fact.id])

    for hit in lexical:
        if hit.fact.id in scored:
            sim, z = scored[hit.fact.id]
            hit.similarity, hit.z = sim, z
            hit.lead = hit.match != "strict" and shaping.leads(sim, z)
    have = {h.fact.id for h in lexical}
    semantic = [
        h
        for h in _semantic_hits(nearest, query, limit=limit, shaping=shaping, unknown=unknown)
        if h.fact.id not in have
    ]
    hits = _once(lexical + semantic, limit)
    strict = [h for h in hits if h.match == "strict"]
    lead = sorted((h for h in hits if h.match != "strict" and h.lead), key=rank)
    loose = [h for h in hits if h.match == "loose" and not h.lead]
    found = sorted((h for h in hits if h.match == "semantic" and not h.lead), key=rank)
    return strict + lead + loose + found


def lexical_texts(query: str) -> list[str] | None:
    """The texts the lexical passes cut into word pieces: the question and each of its terms
    (None: a question of exclusions only, which asks for nothing)."""
    query = query.strip()
    if not positive_words(query):
        return None
    return [query, *terms(" ".join(positive_words(query)))]


def _lexical(
    conn: Conn, query: str, *, project: str | None, limit: int, pieces: tuple[list[list[str]], int] | None = None
) -> list[FactHit]:
    texts = lexical_texts(query)
    if texts is None:
        # Only exclusions ("-a -b"): they ask for nothing, and as a full-text query they
        # match every fact, each ranked (the review's 400-term attack).
        return []
    query, words = texts[0], texts[1:]
    # One round trip cuts the query and its terms into the word pieces of migration 0020,
    # and reads where the passes' tiers start (recall sends it with its other inputs).
    (query_words, *term_words), top = pieces if pieces is not None else _pieces(conn, texts)
    tiers = {"cap": RANK_CAP, "newest": top - TIER_NEWEST}
    rows = conn.execute(
        sql("recall.facts_strict"),
        {
            "query": query,
            "project": project,
            "limit": limit * 2,  # room for copies of one claim by several authors
            # A substring of two letters matches almost anything.
            "substring": len(query) >= 3,
            "pieces": _all_of([w for w in query_words if len(w) >= PIECE_MIN]),
            **tiers,
        },
    ).fetchall()
    if rows:
        return _once([FactHit(_fact(r), "strict", float(r["rank"])) for r in rows], limit)
    if not words:
        return []
    need = needed(len(words))
    rows = conn.execute(
        sql("recall.facts_loose"),
        {
            "patterns": word_start_patterns(words),
            "need": need,
            "project": project,
            "limit": limit * 2,
            "pieces": _loose_pieces(term_words, need),
            **tiers,
        },
    ).fetchall()
    return _once([FactHit(_fact(r), "loose", r["matched"] / len(words)) for r in rows], limit)


# A lexical pass ranks at most this many of its matches, the newest (by id: the order facts
# were written): a word so common that more facts hold it says little about which is best.
# The matches are read in two tiers (recall.newest_matches): the newest TIER_NEWEST facts,
# each tested as written, then, only while they held fewer than RANK_CAP, the older ones,
# asked of the piece and full-text indexes first. A word in more than 10% of the newest
# facts (RANK_CAP / TIER_NEWEST) stops in the first tier; a rarer one has fewer matches to
# read from the heap in the second, where matches are spread evenly. The first tier never
# asks the piece index: at 1M facts its answer to a common prefix took seconds whatever the
# range, and asked in both tiers it was paid twice (EXPLAIN ANALYZE: benchmarks/JOURNAL.md,
# "Issue 38"); tested row by row, the first tier costs about 20 ms (5,000 rows cost 45 ms at
# 10k facts). At 1M facts, ranking 1,000 matches in one statement that the planner ran
# either as a bitmap or as an index-ordered walk, a question of common words read 160,000
# facts (5.8 s, loaded) and a rare word walked every fact (2.8 s). Far above any golden
# set's store: their hits are the same.
RANK_CAP = 200
TIER_NEWEST = 2_000
# The shortest word run the piece index of migration 0020 can find inside a word: it holds
# every tail of three characters or more.
PIECE_MIN = 3
# The loose pass asks the index for facts holding k of its terms as an OR of every k-term
# AND; past this many ANDs it splits the terms into groups (`_loose_pieces`: a weaker
# filter, the same answers).
MAX_PIECE_GROUPS = 64


def _pieces(conn: Conn, texts: list[str]) -> tuple[list[list[str]], int]:
    """Each text's runs of word characters, cut as the index cuts a fact, and the newest
    fact's id (`recall.inputs`)."""
    return lexical_inputs(read_inputs(conn, texts=texts))


def lexical_inputs(row: DictRow) -> tuple[list[list[str]], int]:
    """`recall.inputs`'s pieces as lists (a text with no word run: none), and its `top`."""
    return [list(p or []) for p in row["pieces"] or []], int(row["top"])


def _prefix(piece: str) -> str:
    # Pieces are runs of word characters: nothing in them needs quoting in a tsquery.
    return f"'{piece}':*"


def _all_of(pieces: list[str]) -> str | None:
    """A tsquery asking for a fact that holds every piece (None: no piece to ask for)."""
    return " & ".join(_prefix(p) for p in dict.fromkeys(pieces)) or None


def _loose_pieces(term_words: list[list[str]], need: int) -> str | None:
    """A tsquery that every fact matching `need` of the terms matches: a term's first word run
    starts a word wherever its regex matches, so it is a piece of that fact. A term whose first
    run is too short for the index could match anywhere, and lowers what the others must
    show; None when nothing can be asked of the index.

    A fact holding k of the terms asked holds, for any split of them into g groups, at least
    ceil(k / g) of one group's (pigeonhole): the query is an OR, over the groups, of every
    AND of that many of a group's pieces. One group (the exact condition) while its ANDs
    number at most MAX_PIECE_GROUPS, else the fewest groups that fit: a long question keeps
    ANDs of three or more pieces, where lowering k to fit asked for any one of its words
    and walked most of 1M facts (issue 38)."""
    firsts = [w[0] if w and len(w[0]) >= PIECE_MIN else None for w in term_words]
    listed = [p for p in firsts if p is not None]
    asked = sorted(set(listed))
    # a term the index cannot ask for, or a second term of the same first piece, lowers it
    k = need - (len(firsts) - len(listed)) - (len(listed) - len(asked))
    if k <= 0 or not asked:
        return None
    for g in range(1, len(asked) + 1):
        at_least = -(-k // g)
        groups = [asked[i::g] for i in range(g)]
        ands = {
            " & ".join(_prefix(p) for p in combo)
            for group in groups
            if len(group) >= at_least
            for combo in itertools.combinations(group, at_least)
        }
        if len(ands) <= MAX_PIECE_GROUPS or at_least == 1:
            return " | ".join(f"({a})" for a in sorted(ands))
    return None


def _semantic_hits(
    nearest: list[tuple[DictRow, float, float | None]], query: str, *, limit: int, shaping: FactShaping, unknown: bool
) -> list[FactHit]:
    """Of the facts nearest the query, those that clear a floor and have a second signal: a
    word shared with the query, or a similarity that stands out from the query's background
    over all facts (FactShaping). Vector-only hits (no shared word) fill at most half the
    limit."""
    wanted = " ".join(positive_words(query))
    words = terms(wanted)
    patterns = word_start_regex(words)
    hits: list[FactHit] = []
    vector_only = 0
    best = nearest[0][1] if nearest else 0.0
    for row, sim, z in nearest:
        text = f"{row['subject']} {row['claim']}"
        shared = [w for w, p in zip(words, patterns, strict=True) if p.search(text)]
        if not shaping.qualifies(sim, z, len(shared), best, unknown):
            continue
        if not shared:
            if vector_only >= max(1, limit // 2):
                continue
            vector_only += 1
        if shared:
            why = f"similar in meaning ({sim:.2f}) and shares {', '.join(shared)}"
        else:
            why = f"vector-only: similarity {sim:.2f}, {z:.1f} sd above the question's background"
        hits.append(
            FactHit(
                _fact(row),
                "semantic",
                sim,
                why=why,
                lead=shaping.leads(sim, z),
                similarity=sim,
                vector_only=not shared,
                z=z,
            )
        )
    return hits


# The semantic pass reads this many nearest trusted vectors from the HNSW index (migration
# 0021) before it scores and keeps `limit * 2` facts; the graph search looks as wide
# (hnsw.ef_search), and an iterative scan goes on while the filters (model, trust, scope)
# drop candidates. On a table the planner scans whole (the evaluation sets), the figures
# are exact; see benchmarks/RESULTS.md, "The fact arm at scale".
NEAREST_CANDIDATES = 40
# The background (mean and spread of the query's similarity to facts in scope, FactShaping's
# z) is measured over every fact up to twice this many rows, and past that over a fixed
# random sample of about this many: a mean and a standard deviation from 2,000 draws are
# within a few hundredths of a standard deviation of the whole table's.
BACKGROUND_SAMPLE = 2000


def candidates(limit: int) -> int:
    """How many nearest vectors the semantic pass asks the HNSW index for (its ef_search)."""
    return max(NEAREST_CANDIDATES, limit * 2)


def _nearest(
    conn: Conn,
    query: str,
    project: str | None,
    limit: int,
    embedder: Embedder,
    shaping: FactShaping,
    *,
    scan_set: bool = False,
) -> list[tuple[DictRow, float, float | None]]:
    """The facts nearest the query (after embedding any that lack a vector), each with its
    cosine and its z against the query's background over the facts in scope (every one, or
    a fixed sample of a large table). z is None when fewer than `min_background` facts in
    scope were measured: on a large table that is the sample's count, so a scope that is a
    small share of it (a project among many) gets no z and no vector-only hits; facts that
    share a word with the question still qualify."""
    from ..vault.embedders import vector_literal

    vector = vector_literal(embedder.embed([" ".join(positive_words(query))])[0])
    params = {"query": vector, "model": embedder.name, "project": project}
    # the planner's row count changes at each ANALYZE: read once a minute per connection
    estimate = float(
        remembered(conn, "facts_estimate", lambda: first(conn, sql("fact_vectors.facts_estimate"))["estimate"],
                   seconds=60.0, keep=lambda _: True)
    )  # fmt: skip
    percent = 100.0 if estimate <= 2 * BACKGROUND_SAMPLE else 100.0 * BACKGROUND_SAMPLE / estimate
    # The nearest facts and the query's background over the facts in scope, in one statement.
    with nullcontext() if scan_set else hnsw_scan(conn, candidates(limit)):
        found = conn.execute(
            sql("fact_vectors.nearest"),
            {**params, "limit": limit * 2, "candidates": candidates(limit), "percent": percent},
        ).fetchall()
    rows = [row for row in found if row["id"] is not None]
    background = found[0]
    n = int(background["background_n"])
    if len(rows) < limit * 2 and n * 100.0 / percent > len(rows):
        # The graph gave fewer facts than the scope holds: the filters ran it dry (a member
        # can crowd one spot of it with vectors nobody else trusts). Read every fact.
        rows = conn.execute(sql("fact_vectors.search_exact"), {**params, "limit": limit * 2}).fetchall()
    sd = float(background["background_sd"] or 0.0)
    mean = float(background["background_mean"] or 0.0)
    out = []
    for row in rows:
        sim = float(row["similarity"])
        z = (sim - mean) / sd if sd > 0 and n >= shaping.min_background else None
        out.append((row, sim, z))
    return out


def _fact(row: DictRow) -> Fact:
    return Fact(**{f.name: row[f.name] for f in fields(Fact)})
