"""Merge the arms into one answer: one order, whatever --limit asks, then the decisive
cut-off. --limit only takes the first hits of it."""

from __future__ import annotations

from ..shaping import ANSWER_SHAPING, AnswerShaping
from .facts_arm import FactHit
from .memory_arm import MemoryHit
from .vault_arm import VaultHit

Item = FactHit | MemoryHit | VaultHit


def similarity(item: Item) -> float | None:
    """The hit's cosine to the question, where an arm measured one."""
    if isinstance(item, FactHit):
        return item.similarity
    if isinstance(item, VaultHit):
        return item.hit.semantic_score
    return None


def memory_room(limit: int | None, shaping: AnswerShaping = ANSWER_SHAPING) -> int:
    """The memory lines an answer of `limit` hits keeps: the primary specification's "at most
    half of --limit lines are kept" (rounded down; one for `--limit 1`, so that a memory line
    may still answer alone), and never more than half the pool."""
    half = shaping.pool // 2
    return half if limit is None else min(half, max(1, limit // 2))


def merge(
    facts: list[FactHit],
    memory: list[MemoryHit],
    vault: list[VaultHit],
    shaping: AnswerShaping = ANSWER_SHAPING,
    limit: int | None = None,
) -> list[Item]:
    """Strict facts and memory lines that hold every query word first (the most precise
    answers there are: an agent's own exact line once ranked below a generic note), then the
    facts that lead (close in meaning and standing out: FactShaping.leads), then the vault's
    best note, then the other memory lines, then the other facts and notes by cosine. Facts
    and memory lines each take at most half the pool, and memory lines at most half of
    `limit` (memory_room: the one rule by which --limit changes more than where the list
    is cut). Then every hit more than `cut_gap` below the best cosine leaves: the answer
    stops once the rest is about something else.
    Last, the specification's rule that hits found by meaning alone (vector-only facts and
    notes) fill at most half the limit, held for every limit at once: no start of the
    answer is more than half vector-only (rounded up)."""
    facts, memory = facts[: shaping.pool // 2], memory[: memory_room(limit, shaping)]
    strict = [f for f in facts if f.match == "strict"]
    lead = [f for f in facts if f.match != "strict" and f.lead]
    rest = [f for f in facts if f.match != "strict" and not f.lead]
    whole = [m for m in memory if m.matched == m.terms]
    order: list[Item] = [
        *strict,
        *whole,
        *lead,
        *vault[:1],
        *[m for m in memory if m.matched != m.terms],
        *_by_cosine(rest, vault[1:], shaping.fact_bonus),
    ]
    best = max((s for s in map(similarity, order) if s is not None), default=None)
    return _half_at_most([item for item in order if shaping.kept(similarity(item), best)])


def vector_only(item: Item) -> bool:
    if isinstance(item, FactHit):
        return item.vector_only
    return isinstance(item, VaultHit) and item.support != "keyword"


def _by_cosine(facts: list[FactHit], notes: list[VaultHit], bonus: float) -> list[Item]:
    """Both lists in one, each in its own order: the head closer to the question goes first
    (a fact with no cosine goes first; the fact pass ordered it by its words)."""
    out: list[Item] = []
    f = n = 0
    while f < len(facts) or n < len(notes):
        fact = facts[f] if f < len(facts) else None
        note = notes[n] if n < len(notes) else None
        if fact is not None and (
            note is None or fact.similarity is None or fact.similarity + bonus >= (note.hit.semantic_score or 0.0)
        ):
            out.append(fact)
            f += 1
        else:
            assert note is not None
            out.append(note)
            n += 1
    return out


def _half_at_most(items: list[Item]) -> list[Item]:
    """The same order, except that a vector-only hit waits until it keeps every start of the
    list at most half vector-only (rounded up); one that can never be placed is dropped.
    True of every limit at once, so --limit only cuts the list."""
    out: list[Item] = []
    waiting: list[Item] = []
    taken = 0

    def room() -> bool:
        return taken + 1 <= (len(out) + 2) // 2  # ceil((len(out) + 1) / 2)

    for item in items:
        if vector_only(item):
            if waiting or not room():
                waiting.append(item)
                continue
            taken += 1
        out.append(item)
        while waiting and room():
            out.append(waiting.pop(0))
            taken += 1
    return out
