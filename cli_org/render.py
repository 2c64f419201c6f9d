"""Untrusted text made safe to print on one line of the tool's own output."""

from __future__ import annotations

import unicodedata

REPLACEMENT = "\ufffd"


def one_line(text: str | None, limit: int | None = None) -> str:
    """Whitespace runs (newlines, U+2028 and the like included) become one space; control
    and format characters (ESC of ANSI/OSC sequences, BEL, bidi overrides) become U+FFFD.
    Facts cannot hold them (checks.py), but vault notes, memory files and transcripts can,
    and a printed line must never turn into two lines or drive the terminal."""
    if not text:
        return ""
    text = " ".join(text.split())
    if not text.isprintable():
        text = "".join(REPLACEMENT if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
