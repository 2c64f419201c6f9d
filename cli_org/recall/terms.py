"""Query terms for the line- and prefix-matching arms."""

from __future__ import annotations

import math
import re

# Question words and a few glue words: they match nearly every line, so they never count.
STOP = frozenset(
    """
    how what does did do why when where which who whom whose can could should would will shall
    is are was were be been being am the and for with from that this these those into onto about
    there their then than have has had you your yours our ours not any all some get got use using
    its it's i'm me my mine we us they them his her she him also just like want need make
    """.split()  # noqa: SIM905
)

_WORD = re.compile(r"\w[\w'-]*")


def terms(query: str) -> list[str]:
    """Lowercase words of three or more characters, minus question and glue words, once each."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        word = word.strip("'-")
        if len(word) >= 3 and word not in STOP:
            seen.setdefault(word, None)
    return list(seen)


def positive_words(query: str) -> list[str]:
    """The words of a web-search style query that are not exclusions (`-word`)."""
    return [w for w in query.split() if not w.startswith("-")]


def needed(n_terms: int) -> int:
    """At least half of the terms: 1 of 1, 1 of 2, 2 of 3, 2 of 4, 3 of 5."""
    return max(1, math.ceil(n_terms / 2))


def word_start_patterns(words: list[str]) -> list[str]:
    """PostgreSQL regular expressions matching each term at the start of a word."""
    return [r"\m" + re.sub(r"([^\w])", r"\\\1", w) for w in words]


def word_start_regex(words: list[str]) -> list[re.Pattern[str]]:
    return [re.compile(r"(?<!\w)" + re.escape(w), re.IGNORECASE) for w in words]
