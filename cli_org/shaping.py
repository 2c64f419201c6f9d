"""How vault hits and facts found by meaning become recall lines: the constants of the
specification's rule (a vector-only hit never stands alone, fills at most half the limit
and clears a floor). Settings read the vault floors from the environment; benchmarks pass
variants. Where each value comes from: benchmarks/JOURNAL.md, "Tuning notes that were in
the code, second batch"."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class VaultShaping:
    """The vault arm's floors and order."""

    min_similarity: float = 0.35  # a vector-only hit needs this cosine
    keyword_similarity: float = 0.30  # a keyword-supported hit needs this cosine
    share_needed: float = 0.5  # keyword support: this share of the query's words...
    max_shared_words: int = 3  # ...or this many, whichever is fewer
    # A question naming a word no note and no current fact holds (`recall.inputs`): every vault hit needs this cosine...
    unknown_similarity: float = 0.40
    # ...when that word is no whole token of the query model's vocabulary either (most product names are not).
    unknown_needs_foreign: bool = True
    # Keyword support by rarity: the shared words carry this share of the query's summed BM25 idf...
    idf_share: float = 0.25
    idf_similarity: float = 0.50  # ...and the note is this close in meaning
    # A note holding every query word needs only this cosine (None: keyword_similarity like any other).
    all_words_similarity: float | None = 0.25
    # Kept hits are ordered by fused score + order_cosine * cosine + order_support * idf coverage.
    order_cosine: float = 12.0
    order_support: float = 0.5

    def words_needed(self, query_terms: int) -> int:
        return min(self.max_shared_words, max(1, math.ceil(query_terms * self.share_needed)))


SHAPING = VaultShaping()


@dataclass(frozen=True)
class FactShaping:
    """When a fact close in meaning to the question joins the [fact] arm: the specification's
    rule for vector hits (a floor and a second signal; at most half the limit unless lexically
    supported)."""

    min_similarity: float = 0.34  # a fact sharing no word with the question needs this cosine...
    min_z: float = 2.0  # ...and to stand this many standard deviations above the query's background
    shared_similarity: float = 0.27  # a fact sharing a word with the question needs this cosine
    unknown_similarity: float = 0.42  # any semantic hit, when the question holds a word the memory lacks
    within_best: float = 1.0  # only hits this close to the best; 1 disables it
    min_background: int = 8  # fewer facts in scope: no background to measure, so no vector-only hit
    # A fact sharing this many words with the question is not held to the unknown-word floor (0: every fact is).
    unknown_exempt_shared: int = 2
    # A fact this close to the question and this far above its background leads: it comes
    # before the vault's best note, when at least as close as that note (lead_beats_vault).
    lead_similarity: float = 0.40
    lead_z: float = 2.0
    lead_beats_vault: bool = True

    def qualifies(self, similarity: float, z: float | None, shared_words: int, best: float, unknown: bool) -> bool:
        """The floor and the second signal: a shared word, or standing out from the background."""
        floor = self.shared_similarity if shared_words else self.min_similarity
        if unknown and not (self.unknown_exempt_shared and shared_words >= self.unknown_exempt_shared):
            floor = max(floor, self.unknown_similarity)
        if similarity < floor or similarity < best - self.within_best:
            return False
        return bool(shared_words) or (z is not None and z >= self.min_z)

    # Facts found by meaning are ordered by cosine plus this much per word shared with the question.
    shared_bonus: float = 0.05

    def order(self, similarity: float, shared_words: int) -> float:
        return similarity + self.shared_bonus * shared_words

    def leads(self, similarity: float, z: float | None) -> bool:
        """Close enough in meaning, and standing out enough, to come before the vault's best note."""
        return similarity >= self.lead_similarity and z is not None and z >= self.lead_z


FACT_SHAPING = FactShaping()


@dataclass(frozen=True)
class AnswerShaping:
    """How the arms' hits become one answer for an agent: one order that --limit only cuts,
    and a stop once the rest is about something else."""

    # Every arm gathers at least this many candidates whatever --limit asks, so the answer of
    # a smaller limit is the start of a larger one's.
    pool: int = 16
    # The decisive cut-off: a hit whose cosine is more than this below the best hit's is left
    # out (hits without a cosine, memory lines and facts found only by their words, stay).
    cut_gap: float = 0.20
    # After the leading hits, other facts and notes are merged by cosine, a fact counting this much more.
    fact_bonus: float = 0.05

    def kept(self, similarity: float | None, best: float | None) -> bool:
        return similarity is None or best is None or similarity >= best - self.cut_gap


ANSWER_SHAPING = AnswerShaping()


@dataclass(frozen=True)
class HookShaping:
    """The prompt hook's own, stricter bar: it speaks on every prompt of every session, so a
    wrong line costs attention every turn, and a hit must be more certain than recall asks.
    Only facts pass."""

    fact_similarity: float = 0.50  # a fact this close to the prompt; or...
    fact_z: float = 4.5  # ...standing this far above the prompt's background over the facts...
    fact_z_similarity: float = 0.30  # ...at this cosine at least; or...
    beats_notes: float = 0.10  # ...this much closer to the prompt than the vault's best note...
    beats_similarity: float = 0.35  # ...at this cosine at least
    # The arms the bar reads: facts pass, and the vault's best note is what they must beat. No
    # memory line passes, so the hook does not read the memory files on every prompt.
    arms: tuple[str, ...] = ("fact", "vault")

    def admits(self, arm: str, similarity: float | None, whole: bool, z: float | None, best_note: float | None) -> bool:
        if arm != "fact":
            return False
        if similarity is None:  # no query model: only a fact holding every word of the prompt
            return whole
        standing = z is not None and z >= self.fact_z and similarity >= self.fact_z_similarity
        beats = similarity >= self.beats_similarity and similarity - (best_note or 0.0) >= self.beats_notes
        return similarity >= self.fact_similarity or standing or beats


HOOK_SHAPING = HookShaping()
