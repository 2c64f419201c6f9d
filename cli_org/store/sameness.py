"""Whether two claims say the same thing, contradict each other, or neither (issue 36).

`judge(new, old, similarity)` is pure: two texts in, a Judgement or None out, no database.
How to call it (as eval/sameness.*.txt were measured): each text is what a fact's vector
embeds, `vectors.fact_text(subject, claim)` ("subject: claim"; the judge splits at the first
": "), so that the same claim under another subject is still seen as the same; `similarity`
is the cosine of the two texts' vectors by the shipped query model (all-MiniLM-L6-v2,
`vault.embedders.query_model`): embed `fact_text(subject, claim)` of the new fact (the vector
`remember` stores for it) and read `1 - (embedding <=> query)` against the stored vectors
(sql fact_vectors.nearest gives it as `similarity`), or take the dot product of two embedded
texts (unit length). Not the bare claim against a stored "subject: claim" vector: the
constants below were not measured on that. None where there is no model or no vector: then
the words alone decide (duplicates.near_duplicate on the claims for "same", a look-alike that
differs only in a number, a negation or a name in one place for "contradicts").

- "same": one fact in other words (a paraphrase, or the same claim under another subject),
  with the numbers (in order), the names (identifiers, tools, capitalised names, paths,
  versions) and the negations agreeing.
- "contradicts": about the same thing, and they disagree: another time or number in the same
  place, a negation, another tool or name in the same slot.
- None: two facts (compatible statements of one topic, unrelated, or look-alikes that are
  separate claims, such as "Worker 1 ..." and "Worker 2 ...": a number or name that differs
  at the head of the claim names another thing, it does not contradict).

The constants were chosen on eval/sameness.tune.txt only and are measured on the held-out
eval/sameness.test.txt and on eval/sameness.fresh.txt (written after tuning) by
`python -m benchmarks.sameness_eval`.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from ..errors import InputError
from .duplicates import DUPLICATE_OVERLAP, near_duplicate

# Cosine at or above which two claims whose numbers, names and negations agree mean the same:
# the middle of the gap on the tune half between the closest distinct pair that agrees (0.688,
# "migrations are plain SQL" / "... run in a transaction") and the paraphrases above it (0.724
# and up: 37 of 40 paraphrases; they score 0.54-0.95). Compatible facts of one topic score
# 0.21-0.73 there, and the one above 0.70 differs in a number.
SAME = 0.70
# Cosine at or above which two claims are about the same thing, so that a number, negation or
# name that differs is a contradiction. Tune half: contradictions score 0.51-1.0 (31 of 35
# at 0.65 or more), compatible pairs of one topic 0.21-0.73.
TOPIC = 0.65
# A negation that differs while other words differ as well (on both sides) contradicts only
# this close: tune half, "the health endpoint requires authentication" / "... needs no auth"
# 0.91, the compatible "Coverage is not enforced on the legacy admin" / "... on the new admin"
# 0.886.
NEGATION_SAME_THING = 0.9
# A number or name in the first this many words of a claim (articles aside) names the thing the
# claim is about ("Worker 1 consumes ...", "INC-201 was ..."): when it differs the two are
# separate facts. A value sits later ("... listens on port 3307", "Grafana is on 3000 ...").
# Tune half: every look-alike label at word 0-2, every contradicting value at word 3 or later.
LABEL_WORDS = 3
# Bounded work: a text is judged on its first this many characters (a claim holds at most
# 1,000, checks/rules.py; a subject is short).
MAX_TEXT = 2_000

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./:@%+'-]*")
_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "noon": "12:0", "midnight": "0:0",
}  # fmt: skip
_NEGATIONS = {
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot",
    "can't", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't", "won't",
    "mustn't", "shouldn't", "shan't", "needn't", "hasn't", "haven't", "n't",
}  # fmt: skip
_ARTICLES = {"the", "a", "an"}
_STOP = _ARTICLES | {
    "is", "are", "was", "were", "be", "been", "to", "of", "in", "on", "at", "for", "by", "with",
    "and", "or", "it", "its", "we", "our", "us", "this", "that", "as", "from", "into", "after",
    "before", "every", "each", "all", "any", "only", "must", "may", "should", "can", "will",
    "has", "have", "had", "do", "does", "so", "up", "than", "then", "when", "there", "their",
    "per", "also", "just", "still",
}  # fmt: skip
_NAME_MARK = re.compile(r"[_/.:@]")
_TIME = re.compile(r"^\d{1,2}:\d{2}$")


@dataclass(frozen=True)
class Judgement:
    relation: str  # "same" | "contradicts"
    evidence: dict[str, Any]


@dataclass(frozen=True)
class _Word:
    text: str  # lowercased, trailing punctuation off
    position: int  # in the claim, articles aside; -1 in the subject
    capital: bool  # written with a capital where a sentence does not start


@dataclass(frozen=True)
class _Side:
    numbers: list[tuple[str, int, bool]]  # value, position, spelled (a word: never a label)
    names: dict[str, int]  # name -> first position
    negations: int
    content: list[str]  # claim words that carry meaning, stemmed, in order
    positions: list[int]  # of each content word in the claim
    around: list[tuple[str, frozenset[str]]]  # each number of the claim, the words beside it


def _stem(word: str) -> str:
    """A light stem, the same for a word's forms: cache, caches, cached -> cach."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def _words(part: str, subject: bool) -> list[_Word]:
    out = []
    position = 0
    for n, m in enumerate(_TOKEN.finditer(part)):
        raw = m.group().rstrip(".:'-/")
        if not raw:
            continue
        low = raw.lower()
        capital = any(c.isupper() for c in raw) and (n > 0 or sum(c.isupper() for c in raw) > 1)
        out.append(_Word(low, -1 if subject else position, capital))
        if low not in _ARTICLES:
            position += 1
    return out


def _split(text: str) -> tuple[str, str]:
    """A fact's text is "subject: claim" (vectors.fact_text); a text without ": " is a claim."""
    subject, sep, claim = text.partition(": ")
    return (subject, claim) if sep else ("", text)


def _number(word: str) -> list[str] | None:
    """The values a word holds when it is a number ("02:00" -> 2:0, "1-2" -> 1, 2, "25%" -> 25);
    None for a word with letters (a name such as v3, e2e or OPS-412, or a plain word)."""
    if word in _NUMBER_WORDS:
        return [_NUMBER_WORDS[word]]
    core = re.sub(r"(%|ms|s|m|h|d|kb|mb|gb|tb|k)$", "", word)
    if not core or not core[0].isdigit() or re.search(r"[a-z]", core):
        return None
    if _TIME.match(core):
        hours, minutes = core.split(":")
        return [f"{int(hours)}:{int(minutes)}"]
    return [(d.lstrip("0") or "0") if d.isdigit() else d for d in re.split(r"[-/,+]", core) if d]


def _name(w: _Word) -> bool:
    has_letter = any(c.isalpha() for c in w.text)
    if not has_letter:
        return False
    return w.capital or any(c.isdigit() for c in w.text) or bool(_NAME_MARK.search(w.text))


# Texts parsed, kept: `remember` judges one new text against up to 20 candidates, and a warm
# server meets the same facts again (the parse was 9 of a warm remember's 51 ms, cProfile,
# benchmarks/remember_cost.py --model, 2026-12-04). Bounded: each text is at most MAX_TEXT.
@functools.lru_cache(maxsize=512)
def _side(text: str) -> _Side:
    subject, claim = _split(text[:MAX_TEXT])
    numbers: list[tuple[str, int, bool]] = []
    names: dict[str, int] = {}
    negations = 0
    content: list[str] = []
    positions: list[int] = []
    for w in _words(subject, True) + _words(claim, False):
        values = _number(w.text)
        if values is not None:
            numbers += [(v, w.position, w.text in _NUMBER_WORDS) for v in values]
        elif w.text in _NEGATIONS or w.text.endswith("n't"):
            negations += 1
        elif _name(w):
            names.setdefault(_stem(w.text), w.position)
        if values is None and w.position >= 0 and w.text not in _NEGATIONS and w.text not in _STOP:
            parts = [_stem(p) for p in re.split(r"[-_/.:@]", w.text) if p and p not in _STOP]
            content += parts
            positions += [w.position] * len(parts)
    return _Side(numbers, names, negations % 2, content, positions, _around(_words(claim, False)))


def _around(claim: list[_Word]) -> list[tuple[str, frozenset[str]]]:
    """Each number of a claim with the nearest word before and after it that is neither a
    small word nor a number ("listens on port 5433": port; "retried 3 times": retri, time)."""
    plain = [w.text not in _STOP and _number(w.text) is None and w.text not in _NEGATIONS for w in claim]
    out = []
    for i, w in enumerate(claim):
        values = _number(w.text)
        if not values:
            continue
        before = next((_stem(claim[j].text) for j in range(i - 1, -1, -1) if plain[j]), None)
        after = next((_stem(claim[j].text) for j in range(i + 1, len(claim)) if plain[j]), None)
        beside = frozenset(x for x in (before, after) if x)
        out += [(v, beside) for v in values]
    return out


def _same_place(a: _Side, b: _Side) -> bool:
    """A number of one claim and another number of the other sit beside the same word
    ("port 5433" / "port 5432", "30 days" / "90 days"), or the claims hold the same numbers in
    another order: one value put for another, not two values of two things ("10 levels" /
    "24 hours")."""
    va, vb = Counter(v for v, _ in a.around), Counter(v for v, _ in b.around)
    if va == vb:
        return True
    return any(x != y and x not in vb and y not in va and sa & sb for x, sa in a.around for y, sb in b.around)


def _first_difference(a: list[tuple[str, int, bool]], b: list[tuple[str, int, bool]]) -> int | None:
    """Where two number sequences first differ (the earlier position of the two words), or None."""
    for x, y in zip(a, b, strict=False):
        if x[0] != y[0]:
            return min(_label_position(x), _label_position(y))
    if len(a) != len(b):
        extra = (a if len(a) > len(b) else b)[min(len(a), len(b))]
        return _label_position(extra)
    return None


def _label_position(number: tuple[str, int, bool]) -> int:
    value, position, spelled = number
    return LABEL_WORDS if spelled else position  # "one approval", "four workers": counts


@dataclass(frozen=True)
class _Slot:
    new: list[str]
    old: list[str]
    position: int  # the earlier claim position of the two replaced parts
    last: bool  # the replaced words end both claims ("... linted with ruff" / "... with pylint")


def _slot(a: _Side, b: _Side) -> _Slot | None:
    """One or two words put in place of one or two others, the rest of the claim the same
    ("linted with ruff" / "linted with pylint"): what was replaced on each side."""
    ops = [op for op in SequenceMatcher(None, a.content, b.content, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > 2 or j2 - j1 > 2 or len(a.content) - (i2 - i1) < 2:
        return None
    last = i2 == len(a.content) and j2 == len(b.content)
    return _Slot(a.content[i1:i2], b.content[j1:j2], min(a.positions[i1], b.positions[j1]), last)


def _values_differ(a: list[str], b: list[str]) -> bool:
    """Each side has a number the other lacks, or the same numbers in another order; a number
    only one side gives is a detail added, not a disagreement."""
    ca, cb = Counter(a), Counter(b)
    return bool(ca - cb and cb - ca) or (ca == cb and a != b)


def _named(slot: _Slot, a: _Side, b: _Side) -> bool:
    return any(w in a.names for w in slot.new) or any(w in b.names for w in slot.old)


def judge(new: str, old: str, similarity: float | None) -> Judgement | None:
    """Whether `new` says the same as `old`, contradicts it, or neither (None); see the module."""
    if similarity is not None and not (math.isfinite(similarity) and -1.001 <= similarity <= 1.001):
        raise InputError(f"similarity must be a cosine between -1 and 1, not {similarity!r}")
    a, b = _side(new), _side(old)
    if not a.content or not b.content:
        return None
    shared = set(a.content) & set(b.content)
    share = len(shared) / len(set(a.content) | set(b.content))
    evidence: dict[str, Any] = {
        "similarity": None if similarity is None else round(similarity, 3),
        "same_at": SAME,
        "topic_at": TOPIC,
        "words_share": round(share, 3),
    }
    numbers_a, numbers_b = [n[0] for n in a.numbers], [n[0] for n in b.numbers]
    where = _first_difference(a.numbers, b.numbers)
    only_a = {n: p for n, p in a.names.items() if n not in b.names}
    only_b = {n: p for n, p in b.names.items() if n not in a.names}
    swapped_names = bool(only_a) and bool(only_b)
    slot = _slot(a, b)
    if where is not None:
        evidence["numbers"] = {"new": numbers_a, "old": numbers_b}
    else:
        evidence["numbers_agree"] = numbers_a
    if a.negations != b.negations:
        evidence["negations"] = {"new": a.negations, "old": b.negations}
    if only_a or only_b:
        evidence["names"] = {"new": sorted(only_a), "old": sorted(only_b)}
    if slot:
        evidence["replaced"] = {"new": slot.new, "old": slot.old}

    # A number or a name at the head of a claim (or in its subject) that differs names another
    # thing: two separate facts, whatever else they share.
    if (
        (where is not None and where < LABEL_WORDS)
        or (swapped_names and min(min(only_a.values()), min(only_b.values())) < LABEL_WORDS)
        or (slot is not None and slot.position == 0)
    ):
        return None

    # another name in the same place, or another word where a claim ends on what it uses
    # ("... linted with ruff" / "... with pylint"); a verb put for another is a paraphrase
    slot_named = slot is not None and (slot.last or _named(slot, a, b))
    agree = where is None and a.negations == b.negations and not swapped_names and not slot_named
    if agree:
        if similarity is not None and similarity >= SAME:
            return Judgement("same", {**evidence, "rule": "meaning"})
        # the same claim in the same words (the rule `remember` and `tidy` use), whatever subject
        words = near_duplicate(_split(new[:MAX_TEXT])[1], _split(old[:MAX_TEXT])[1])
        if words:
            return Judgement("same", {**evidence, "rule": "words", "overlap": words["overlap"]})
        return None

    look_alike = share >= DUPLICATE_OVERLAP or slot is not None
    about_same = look_alike or (similarity is not None and similarity >= TOPIC)
    if not about_same:
        return None
    reasons = []
    if where is not None and _values_differ(numbers_a, numbers_b):
        kinds = {":" in n for n in numbers_a} & {":" in n for n in numbers_b}
        if True in kinds:  # a time against a time ("at 02:00" / "between 10:00 and 15:00")
            reasons.append("time")
        elif kinds and _same_place(a, b):  # a count against a count, in the same place
            reasons.append("number")
    if a.negations != b.negations:
        one_sided = not (set(a.content) - shared) or not (set(b.content) - shared)
        if one_sided or (similarity is not None and similarity >= NEGATION_SAME_THING):
            reasons.append("negation")
    if swapped_names or slot_named:
        reasons.append("name")
    if not reasons:
        return None
    return Judgement("contradicts", {**evidence, "rule": "meaning" if similarity is not None else "words",
                                     "differs": reasons})  # fmt: skip
