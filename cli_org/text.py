"""Untrusted text, two ways: made storable in PostgreSQL, and made safe to print.

PostgreSQL's text and jsonb refuse NUL, and UTF-8 cannot encode a lone surrogate (what a
JSON or YAML escape such as "\\ud800", or a file name or argument that is not UTF-8,
becomes in Python). A printed line must never turn into two lines or drive the terminal.
"""

from __future__ import annotations

import os
import re
import unicodedata

_SURROGATES = re.compile("[\ud800-\udfff]")


def pg_text(value: str) -> str:
    """`value` without NUL, each lone surrogate replaced by U+FFFD."""
    value = value.replace("\x00", "")
    return value if value.isascii() else _SURROGATES.sub("\ufffd", value)


def is_utf8(value: str) -> bool:
    """Whether `value` encodes to UTF-8, i.e. holds no lone surrogate."""
    return value.isascii() or not _SURROGATES.search(value)


def shown(value: str) -> str:
    """A name from the file system or the command line, printable whatever its bytes:
    undecodable bytes appear as \\xNN."""
    if is_utf8(value):
        return value
    try:
        return os.fsencode(value).decode("utf-8", "backslashreplace")
    except UnicodeError:  # a surrogate that came from a JSON escape, not from bytes
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


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


def safe_block(text: str | None) -> str:
    """Untrusted text of many lines (a message body) made safe to print: its line breaks
    kept (CR LF, CR and U+2028/U+2029 become newlines), tabs a space, and every other
    control or format character U+FFFD, so nothing reaches the terminal but text."""
    if not text:
        return ""
    text = re.sub("\r\n?|[\u2028\u2029\x85\x0b\x0c]", "\n", text).replace("\t", " ")
    if text.isprintable():
        return text
    return "".join(ch if ch == "\n" or unicodedata.category(ch) not in ("Cc", "Cf") else REPLACEMENT for ch in text)
