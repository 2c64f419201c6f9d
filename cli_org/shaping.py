"""How vault hits and facts found by meaning become recall lines: the constants of the
specification's rule (a vector-only hit never stands alone, fills at most half the limit
and clears a floor)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class VaultShaping:
    """Measured with MiniLM on the TIL golden and noise sets (benchmarks/RESULTS.md,
    `recall_floor`): the pair of floors that kept every noise query out and the most answers
    in. Settings read the floors from the environment; benchmarks pass variants."""

    min_similarity: float = 0.35  # a vector-only hit needs this much
    keyword_similarity: float = 0.30  # a keyword-supported hit needs this much too
    share_needed: float = 0.5  # keyword support: this share of the query's words...
    max_shared_words: int = 3  # ...but a long question shares three words with its answer far more often than half
    # A question naming a word the whole memory has never seen (no note, no current fact:
    # `unknown_terms`) asks about something it likely lacks; every vault hit then needs
    # this cosine (issue 13: 25 of 26 near-topic questions of the tuning half hold such a
    # word, 13 of 131 answerable ones; 0.40 halved the near-topic hits and lost no answer
    # of the tuning half, 0.35 and 0.45 measured beside it).
    unknown_similarity: float = 0.40
    # ...and only when that word is no whole token of the query model's vocabulary either
    # (ordinary English is; most product names are not).
    unknown_needs_foreign: bool = True
    # Keyword support weighted by rarity (issue 13, benchmarks/RESULTS.md "Recall by
    # meaning", candidates "idf X cY"): a note also has support when the words it shares
    # carry idf_share of the query's summed BM25 idf and it is this close in meaning. On the
    # tuning half every share from 0.01 to 0.25 with a cosine of 0.45 to 0.55 found the same
    # two paraphrases more (0.923 -> 0.945) and let no noise or near-topic question in; 0.3
    # and above, or a cosine of 0.6, found fewer. The rarest share of that plateau is kept.
    idf_share: float = 0.25
    idf_similarity: float = 0.50
    # A note holding every one of the query's words (a two-word query, an exact term) needs
    # only this cosine: a short query's vector says little ("all0.25": one short query more,
    # nothing let in; 0.20 the same). None: keyword_similarity like any other.
    all_words_similarity: float | None = 0.25
    # Kept hits are ordered by fused score + order_cosine * cosine + order_support * idf
    # coverage ("ord cN/sM"): paraphrases share few words, so meaning decides more of the
    # order than the fusion gives it. Tuning-half MRR 0.829 -> 0.846 at 12 / 0.5 (8 to 24
    # gave 0.839-0.846; pure cosine 0.820), held out 0.818 -> 0.828. Exact-term MRR fell on
    # the tuning half (0.926 -> 0.870), not held out (0.848 -> 0.864).
    order_cosine: float = 12.0
    order_support: float = 0.5
    # Measured and dropped (their code is in commit da37494): "ordq", the cosine weight
    # times (1 - the best kept note's idf coverage), kept the exact-term order but lost
    # paraphrase MRR (0.841 at best); field weighting ("tX": plus X times the share of the
    # query's words starting a word of the title or path) lifted tuning-half MRR 0.846 ->
    # 0.853 but held-out MRR fell 0.828 -> 0.821; every keyword-supported hit before every
    # vector-only one ("kw-first") lifted it to 0.859 with held-out 0.810; rarity without the
    # word count ("idf-only") fell to 0.736.

    def words_needed(self, query_terms: int) -> int:
        return min(self.max_shared_words, max(1, math.ceil(query_terms * self.share_needed)))


SHAPING = VaultShaping()


@dataclass(frozen=True)
class FactShaping:
    """When a fact close in meaning to the question joins the [fact] arm (issue 13): the
    specification's rule for vector hits (a floor and a second signal; at most half the
    limit unless lexically supported), with constants chosen on the tuning halves of the
    fact golden set and the noise sets (benchmarks/RESULTS.md, "Facts by meaning")."""

    min_similarity: float = 0.34  # a fact sharing no word with the question needs this cosine...
    min_z: float = 2.0  # ...and to stand this many standard deviations above the query's background
    shared_similarity: float = 0.27  # a fact sharing a word with the question needs this cosine
    unknown_similarity: float = 0.42  # any semantic hit, when the question holds a word the memory lacks
    # Measured and left off (1 disables it): keeping only hits within 0.1 of the best
    # similarity lost 1 of 20 paraphrases of the tuning half and saved little.
    within_best: float = 1.0
    min_background: int = 8  # fewer facts in scope: no background to measure, so no vector-only hit
    lazy_batch: int = 500  # facts embedded before one recall at most (the rest before the next)
    # A fact sharing this many words with the question is not held to the unknown-word floor
    # (0 keeps every fact to it): a question may name a word the memory lacks and still
    # share its subject's words with one fact. Tuning half (recall_tune "x2"): fact
    # paraphrases 0.950 -> 1.000, noise 0, near-topic hits unchanged.
    unknown_exempt_shared: int = 2
    # A fact found by meaning, or a loose one, that is this close to the question and stands
    # this far above its background leads: it comes before the vault's best note (merge),
    # when at least as close as that note (lead_beats_vault; without it a fact at 0.47 led
    # a TIL question about outdated gems). 2.0 never leads. Tuning half ("x2 lead40 z2 >v"):
    # fact MRR 0.831 -> 0.885, TIL unchanged; 0.30 and 0.35 measured the same, 0.40 kept.
    lead_similarity: float = 0.40
    lead_z: float = 2.0
    lead_beats_vault: bool = True
    # No cap on leading facts: at most one lost a little on both databases ("one lead", in 984d92b).

    def qualifies(self, similarity: float, z: float | None, shared_words: int, best: float, unknown: bool) -> bool:
        """The floor and the second signal: a shared word, or standing out from the background."""
        floor = self.shared_similarity if shared_words else self.min_similarity
        if unknown and not (self.unknown_exempt_shared and shared_words >= self.unknown_exempt_shared):
            floor = max(floor, self.unknown_similarity)
        if similarity < floor or similarity < best - self.within_best:
            return False
        return bool(shared_words) or (z is not None and z >= self.min_z)

    # Facts found by meaning are ordered by cosine plus this much per word shared with the
    # question (0: cosine alone). Tuning half: fact MRR 0.885 (0) -> 0.898 (0.03) -> 0.902
    # (0.05, 0.08), TIL, noise and near-topic unchanged.
    shared_bonus: float = 0.05

    def order(self, similarity: float, shared_words: int) -> float:
        return similarity + self.shared_bonus * shared_words

    def leads(self, similarity: float, z: float | None) -> bool:
        """Close enough in meaning, and standing out enough, to come before the vault's best note."""
        return similarity >= self.lead_similarity and z is not None and z >= self.lead_z


FACT_SHAPING = FactShaping()
