"""Filler text of an exact length for tests of caps and limits: plainly factual sentences.

A run of one letter ("a" * 1000) was the suite's filler; once the injection classifier ran in
the suite (issue 33: the query model is built from the install), it refused such runs as
instructions, an ordinary false positive of the classifier that is being retrained. A cap test
is about length, so its filler reads like a note."""

from __future__ import annotations

TOPICS = ("deploy", "backup", "billing", "search", "mobile", "ledger", "courier", "status")


def filler(n: int, topic: str = "deploy") -> str:
    """`n` characters of sentences about `topic`, ending in a non-space (nothing to strip)."""
    sentence = f"The {topic} job runs at 02:00 UTC from the release branch and reports to #{topic}. "
    text = (sentence * (n // len(sentence) + 1))[:n]
    return text[:-1] + "." if text.endswith(" ") else text
