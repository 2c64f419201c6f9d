"""How vault hits become recall lines: the constants of the specification's rule (a
vector-only hit never stands alone, fills at most half the limit and clears a floor)."""

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

    def words_needed(self, query_terms: int) -> int:
        return min(self.max_shared_words, max(1, math.ceil(query_terms * self.share_needed)))


SHAPING = VaultShaping()
