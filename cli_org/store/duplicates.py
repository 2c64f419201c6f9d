"""The near-duplicate rule, one source for its two users: `tidy` proposes merging two
current facts it calls near duplicates, and `remember` refuses to write a third.
"""

from __future__ import annotations

import re
from typing import Any

# Share of words two claims must have in common (|A ∩ B| / |A ∪ B|). One word changed in a
# five-word claim gives 4/6 = 0.67, and that one word is usually the point of the fact
# ("takes four minutes" / "takes five minutes"), so it stays below; a reworded or
# re-punctuated copy, or one with a word added to eight, gives 0.8 or more.
# tests/test_tidy.py holds a pair on each side of the line.
DUPLICATE_OVERLAP = 0.75

_WORD = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def numbers(text: str) -> list[str]:
    """The words of `text` that hold a digit, in the order they appear: "move server 1 to
    rack 2" and "move server 2 to rack 1" share their words and the set of their numbers,
    and still say two different things (issue 36: compared as a set, "Claim 1-2 from writer
    1." was refused as a copy of "Claim 2-1 from writer 2.")."""
    return [w for w in _WORD.findall(text.lower()) if any(ch.isdigit() for ch in w)]


def near_duplicate(a: str, b: str, threshold: float = DUPLICATE_OVERLAP) -> dict[str, Any] | None:
    """The evidence that two claims say the same thing, or None: most of their words in
    common and the same numbers in the same order."""
    wa, wb = words(a), words(b)
    union = wa | wb
    if not union or numbers(a) != numbers(b):
        return None
    overlap = len(wa & wb) / len(union)
    if overlap < threshold:
        return None
    return {
        "rule": "near_duplicate",
        "overlap": round(overlap, 3),
        "threshold": threshold,
        "shared_words": len(wa & wb),
        "words": len(union),
        "only_in_retired": sorted(wa - wb),
        "only_in_kept": sorted(wb - wa),
    }


def scope(author: str, subject: str, project: str | None) -> tuple[str, str, str | None]:
    """The facts `near_duplicate` compares with each other: the same author, subject (case
    and outer space aside) and project. `remember` compares a new claim within it too."""
    return author, subject.strip().lower(), project
