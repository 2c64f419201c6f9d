"""What text a pattern can match at all: the strings one of which every match contains.

A write check runs dozens of large patterns, and both engines pay to compile each one:
PostgreSQL once per connection (its scan took 1.2 to 1.4 s on every new session before any
text was read, benchmarks/RESULTS.md, "Cold writes"), Python once per process. Most texts
hold none of a pattern's literal pieces ("AKIA", "-----BEGIN", "ignore"), and a pattern
whose pieces are all absent cannot match; so the checks look for the pieces first, with
plain substring tests that compile nothing, and compile and run only the patterns that
could match. The answer is always the same as running every pattern.

`needs(regex)` reads the regular expression (Python's parser; the patterns are written in
the syntax both engines share) and returns a set of strings such that every match of the
pattern contains at least one of them, or None when it finds no such set (the pattern is
always run). It is sound by construction, rule by rule:
- a literal character matches itself; a class of at most CLASS_CHARS literal characters
  matches one of them;
- a sequence matches its parts one after another: runs of exactly known parts multiply out
  into whole strings (up to EXACT_LIMIT of them), and any one run, or any one part's own
  needs, is needed by the whole (the longest such set is kept);
- an alternation needs the union of its branches' needs (None when one branch has none);
- a repetition at least once needs what its body needs; one that may repeat zero times
  needs nothing, except `x?` of an exactly known `x`, which is `x` or nothing;
- anchors and lookarounds match no characters (they are the empty string here).
Case: for a pattern that starts with (?i), every needed string is in lower case and is
looked for in the text with its ASCII letters lowered (`lowered`); both engines match an
ASCII letter case-blind only against its two ASCII cases, or, in Python, also against the
few other characters that Python's matcher folds onto them (`_FOLDS`, which `lowered`
maps too). A character outside ASCII is kept only where case cannot apply to it (a
case-sensitive pattern, or a character without case). A case-blind part inside a
case-sensitive pattern is unknown. tests/test_write_needs.py checks soundness on every
example the checks' tests hold, in both engines.
"""

from __future__ import annotations

import functools
import re
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any

# Exactly known parts are multiplied out into at most this many strings; beyond, the run
# is cut and a part of it serves (fewer, shorter strings: still sound, less selective).
EXACT_LIMIT = 64
# A class of at most this many literal characters counts as exactly known ([Pp], [pousr]).
CLASS_CHARS = 10

# Characters outside ASCII that Python's case-blind matcher takes for an ASCII letter
# (KELVIN SIGN for k, LONG S for s; re's own case-fold table): lowered onto that letter.
_FOLDS = {"\u212a": "k", "\u017f": "s", "\u0130": "i", "\u0131": "i"}
# The lowering as two strings of characters, for SQL's translate() (org_write_may).
FOLD_FROM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "".join(_FOLDS)
FOLD_TO = "abcdefghijklmnopqrstuvwxyz" + "".join(_FOLDS.values())
_LOWER = str.maketrans(FOLD_FROM, FOLD_TO)


def lowered(text: str) -> str:
    """The text as case-blind needs are looked for in it (ASCII letters and _FOLDS lowered)."""
    return text.translate(_LOWER)


class _Info:
    """What a part of a pattern matches: exactly one of the strings `exact`, or any text
    containing one of `match`; neither means nothing is known."""

    __slots__ = ("exact", "match")

    def __init__(self, exact: frozenset[str] | None = None, match: frozenset[str] | None = None):
        self.exact = exact
        self.match = match

    def needed(self) -> frozenset[str] | None:
        if self.exact is not None:
            return None if "" in self.exact else self.exact
        return self.match


_UNKNOWN = _Info()
_EMPTY = _Info(exact=frozenset({""}))


def _better(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """The more selective of two needed sets: the longer shortest string, then fewer strings."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b, key=lambda s: (min(map(len, s)), -len(s)))


def _char(code: int, caseless: bool) -> str | None:
    c = chr(code)
    if not caseless:
        return c
    if c.isascii():
        return c.lower()
    # outside ASCII only a character without case is safe to look for case-blind
    return c if c.lower() == c.upper() and c not in _FOLDS else None


def _part(op: Any, av: Any, caseless: bool, top_caseless: bool) -> _Info:
    if op is C.LITERAL:
        c = _char(av, caseless)
        return _Info(exact=frozenset({c})) if c is not None else _UNKNOWN
    if op is C.IN:
        chars: set[str] = set()
        for item, value in av:
            if item is not C.LITERAL:
                return _UNKNOWN
            c = _char(value, caseless)
            if c is None:
                return _UNKNOWN
            chars.add(c)
        return _Info(exact=frozenset(chars)) if len(chars) <= CLASS_CHARS else _UNKNOWN
    if op is C.SUBPATTERN:
        _group, add, remove, body = av
        inner = (caseless or bool(add & re.IGNORECASE)) and not (remove & re.IGNORECASE)
        if inner and not top_caseless:
            return _UNKNOWN  # a case-blind part of a case-sensitive pattern
        return _sequence(body, inner, top_caseless)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        low, high, body = av
        repeated = _sequence(body, caseless, top_caseless)
        if low == 0:
            if high == 1 and repeated.exact is not None:
                return _Info(exact=repeated.exact | {""})
            return _UNKNOWN
        if low == high == 1:
            return repeated
        return _Info(match=repeated.needed())
    if op is C.BRANCH:
        branches = [_sequence(b, caseless, top_caseless) for b in av[1]]
        exact = [b.exact for b in branches]
        if all(e is not None for e in exact) and sum(len(e) for e in exact if e is not None) <= EXACT_LIMIT:
            return _Info(exact=frozenset().union(*[e for e in exact if e is not None]))
        union: set[str] = set()
        for b in branches:
            needed = b.needed()
            if needed is None:
                return _UNKNOWN
            union |= needed
        return _Info(match=frozenset(union))
    if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
        return _EMPTY  # matches no characters
    return _UNKNOWN  # any character, a category, a back-reference, ...


def _sequence(items: Any, caseless: bool, top_caseless: bool) -> _Info:
    run: frozenset[str] = frozenset({""})
    best: frozenset[str] | None = None
    broken = False
    for op, av in items:
        part = _part(op, av, caseless, top_caseless)
        if part.exact is not None and len(run) * len(part.exact) <= EXACT_LIMIT:
            run = frozenset(a + b for a in run for b in part.exact)
            continue
        broken = True
        if "" not in run:
            best = _better(best, run)
        best = _better(best, part.needed())
        run = part.exact if part.exact is not None and len(part.exact) <= EXACT_LIMIT else frozenset({""})
    if not broken:
        return _Info(exact=run)
    if "" not in run:
        best = _better(best, run)
    return _Info(match=best)


def needs(regex: str) -> tuple[bool, frozenset[str]] | None:
    """(case-blind, strings) where every match of `regex` holds one of the strings (in the
    text lowered by `lowered` when case-blind), or None when no such strings are known.
    The checks' own patterns are read from the table made when they were written."""
    from .needs_table import TABLE

    return TABLE[regex] if regex in TABLE else derived(regex)


@functools.cache
def derived(regex: str) -> tuple[bool, frozenset[str]] | None:
    """`needs`, worked out from the pattern itself (parsing costs about what compiling does)."""
    parsed = P.parse(regex)
    caseless = bool(parsed.state.flags & re.IGNORECASE)
    needed = _sequence(list(parsed), caseless, caseless).needed()
    return (caseless, needed) if needed else None


def may_match(regex: str, text: str) -> bool:
    """False only when `regex` cannot match `text` (none of its needed strings is there)."""
    known = needs(regex)
    if known is None:
        return True
    caseless, strings = known
    haystack = lowered(text) if caseless else text
    return any(s in haystack for s in strings)
