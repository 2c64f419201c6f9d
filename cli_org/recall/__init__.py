"""recall: one question answered from shared facts, bot memory files and the vault.

Which arms need the query model is this package's to say, not a face's guess: a face asks
`needs_embedder` before it opens one. Kept here, light, so the command line can ask before
it loads the rest (faces/cli/__init__.py needs_model).
"""

from __future__ import annotations

from collections.abc import Iterable

ARMS = ("fact", "memory", "vault")
# The arms that find by meaning as well as by words: the fact arm's pass over fact vectors
# (a fact found only by meaning, issue 37) and the vault's hybrid search. The memory arm
# matches words only.
MEANING_ARMS = ("fact", "vault")


def needs_embedder(arms: Iterable[str]) -> bool:
    """Whether a recall over `arms` embeds the question (without a model those arms answer
    by words alone)."""
    return any(arm in MEANING_ARMS for arm in arms)
