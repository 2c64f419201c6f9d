"""Hits that were later quoted: did a session use what recall gave it?

THE RULE ("hits that were later quoted"; docs/agents.md states it in the same words,
section "Archive and adoption", "Usage over time, per agent and per session; hits later
quoted"). It is defined here once; the CLI, the web page and the
benchmark all call these functions.

1. A recall is *tied* to an archived session when the session holds the recall's tool call
   (a shell command running `cli-org recall` / `org recall`, or the MCP tool `org_recall`;
   migration 0022 decides which calls those are) and, after it, the call's result: a tool
   message with the same call id. A recall whose result is missing is counted, not tied.
   A call id is counted and tied once: in the session that started first (the lower archive
   id if two started together), at its first call there; a continuation that repeats it, or
   the same call written twice, adds nothing.
2. Its hits are read from that result, as the renderer prints them (cli_org/recall/answer.py)
   or as `--json` / the MCP structured answer gives them (also inside a harness's JSON
   wrapper of a command's output, `{"output": "..."}`): `[fact #ID] subject: claim (...)`,
   `[vault] path[ # heading]: snippet`, `[memory] where text`. Each hit belongs to its arm.
   A JSON answer starts a line of the result (a `{` inside a hit's line is the hit's text);
   when it holds no hits, the labelled lines are read.
3. The session's text *before* the result is everything in the session up to the result,
   the recall's own call (its question) included. The text *after* is every message after
   the result. The output of every tied recall in the session is left out of both: a hit
   that a later recall returns again is not quoted by that.
4. A hit is *later quoted* when one of its marks is in the text after and not in the text
   before (what the session already had, the question included, proves nothing):
   - a fact hit: its id, written `#ID`, `fact ID`, `fact #ID`, `--supersedes ID`,
     `forget|restore|pin|unpin|show ID` or a JSON `"fact_id"|"supersedes": ID` (not a bare
     `"id"`: any tool's JSON has one);
   - a vault hit: its path, or its file name (bounded, case-insensitive) unless the name is
     a generic one (README.md, index.md, ...), which needs the path;
   - a memory hit: its `file:line`;
   - any hit: a distinctive phrase, a run of PHRASE_WORDS consecutive words of the text the
     hit showed (fact: subject and claim; vault: heading and snippet; memory: the line),
     with at least MIN_CONTENT_WORDS content words (not a stop word; 3 characters or more,
     or holding a digit). Words are lower-cased runs of letters and digits, so punctuation
     and markup do not matter.
   A paraphrase is not a quote: the rule under-counts use, on purpose, rather than guess.
5. Per arm: recalls tied, hits, hits later quoted, and the share (quoted / hits).

Everything here is pure (no database); verdicts.py applies it to each session as it is
imported and stores the verdicts, which `hits_later_quoted()` and `usage_detail()` in
usage.py read.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# The phrase: a run of PHRASE_WORDS consecutive words holding at least MIN_CONTENT_WORDS
# content words (not a stop word, and 3 characters or more or holding a digit: "02 00" in a
# time is as telling as a name): the shortest run with no chance match between a real vault
# and real transcripts (benchmarks/quoted_phrase.py; benchmarks/RESULTS.md, "Hits later quoted").
PHRASE_WORDS = 5
MIN_CONTENT_WORDS = 3
# The rule's version, stored with every verdict (migration 0029): raise it with any change
# to what this module decides, and `cli-org archive judge` (or the next import) judges every
# session again.
RULE_VERSION = 1
ARMS = ("fact", "memory", "vault")

_STOP = """a an and are as at be been but by can do does for from had has have he her his how i if
in into is it its just may me more most my no not of on one or our out she so such than
that the their them then there these they this those to too up us was we were what when
where which while who why will with would you your all any each also only over very"""
STOP_WORDS = frozenset(_STOP.split())
# File names so common that alone they do not say which note was meant.
GENERIC_NAMES = frozenset({"readme.md", "index.md", "notes.md", "todo.md", "changelog.md", "license.md", "memory.md"})

_WORD = re.compile(r"[^\W_]+")
_FACT_LINE = re.compile(r"^\[fact #(\d+)\] (.*)$")
_FACT_TAIL = re.compile(r" \([^()]*; [^();]*; [^();]*\)$")  # " (source; authors; age)"
_VAULT_LINE = re.compile(r"^\[vault\] (.+?): (.*)$")
_MEMORY_LINE = re.compile(r"^\[memory\] (\S+) ?(.*)$")


@dataclass(frozen=True)
class Hit:
    """One hit of a recall's answer, as the session saw it."""

    arm: str
    key: str  # the fact id, the vault path, the memory file:line
    text: str  # the words it showed


@dataclass
class HitVerdict:
    arm: str
    key: str
    quoted: bool
    how: str | None = None  # "id", "path", "phrase"
    evidence: str | None = None  # the mark found after the result


@dataclass
class RecallVerdict:
    """One tied recall: where its call and result are in the session, and its hits."""

    call: int  # index of the call message
    result: int  # index of the result message
    hits: list[HitVerdict] = field(default_factory=list)


@dataclass
class SessionMessage:
    """What the rule reads of one archived message."""

    kind: str
    text: str | None
    tool_call_id: str | None = None
    is_recall: bool = False  # an assistant tool call that runs a recall (migration 0022)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def phrases(text: str, n: int = PHRASE_WORDS, min_content: int = MIN_CONTENT_WORDS) -> set[tuple[str, ...]]:
    """The runs of n consecutive words of `text` that can count as a distinctive phrase."""
    ws = words(text)
    content = [_content(w) for w in ws]
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1) if sum(content[i : i + n]) >= min_content}


_DIGIT = re.compile(r"\d")


def _content(word: str) -> bool:
    return word not in STOP_WORDS and (len(word) >= 3 or _DIGIT.search(word) is not None)


def parse_hits(result: str | None) -> list[Hit]:
    """The hits of one recall answer: JSON (`recall --json`, the MCP structured answer)
    when the result holds it, else the labelled lines, wherever they are in the text (a
    shell tool may print other output around them)."""
    if not result:
        return []
    from_json = _json_hits(result)
    if from_json:
        return from_json
    hits = []
    for raw in result.splitlines():
        line = raw.strip()
        if m := _FACT_LINE.match(line):
            body = _FACT_TAIL.sub("", m[2])
            hits.append(Hit("fact", m[1], body))
        elif m := _VAULT_LINE.match(line):
            where = m[1]
            path, _, heading = where.partition(" # ")
            hits.append(Hit("vault", path, f"{heading} {m[2]}".strip()))
        elif m := _MEMORY_LINE.match(line):
            hits.append(Hit("memory", m[1], m[2]))
    return hits


# Where a JSON answer can start (rule 2): at the start of a line, the whole result (`recall
# --json`, the MCP structured answer, a harness's `{"output": ...}` wrapper) or after a
# shell's header lines; a `{` later in a line is part of a hit's text.
_JSON_START = re.compile(r"^[ \t]*(?=\{)", re.M)


def _json_hits(result: str) -> list[Hit] | None:
    start = _JSON_START.search(result)
    if start is None:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(result[start.end() :])
    except ValueError:
        return None
    if isinstance(data, dict) and not isinstance(data.get("hits"), list):
        # A harness that wraps a command's output in JSON (Codex: {"output": "...", ...}).
        inner = data.get("output", data.get("content"))
        return parse_hits(inner) if isinstance(inner, str) and inner != result else None
    if not isinstance(data, dict):
        return None
    hits = []
    for h in data["hits"]:
        if not isinstance(h, dict):
            continue
        arm = h.get("arm")
        if arm == "fact" and h.get("id") is not None:
            hits.append(Hit("fact", str(h["id"]), f"{h.get('subject') or ''}: {h.get('claim') or ''}"))
        elif arm == "vault" and h.get("path"):
            hits.append(Hit("vault", str(h["path"]), f"{h.get('heading') or ''} {h.get('snippet') or ''}".strip()))
        elif arm == "memory" and h.get("file"):
            where = str(h["file"]) if h.get("notebook") else f"{h['file']}:{h.get('line')}"
            hits.append(Hit("memory", where, str(h.get("text") or "")))
    return hits


# Every way a text names a fact by its id (rule 4); the id is in whichever group matched.
# Bare #ID kept: 0 of 88 planted fact hits called quoted in the 11 real sessions (RESULTS.md, "Hits later quoted").
FACT_REF = re.compile(
    r"(?<![\w#&/])#(\d+)(?!\d)"
    r"|\bfacts?\s*(?:id\s*)?#?(\d+)(?!\d)"
    r"|--supersedes[=\s]+#?(\d+)(?!\d)"
    r"|\b(?:forget|restore|pin|unpin|show)\s+#?(\d+)(?!\d)"
    r"|\"(?:fact_id|supersedes)\"\s*:\s*\"?(\d+)(?!\d)",
    re.I,
)


def fact_ids(text: str) -> set[str]:
    """The fact ids a text names (FACT_REF), as written without leading zeros."""
    return {str(int(next(g for g in m.groups() if g))) for m in FACT_REF.finditer(text)}


def places(hit: Hit) -> list[str]:
    """The literal names of a vault hit or memory hit's place (rule 4): the path, the file
    name unless generic, the memory `file:line`. Fact hits are named by id (fact_ids)."""
    if hit.arm == "vault":
        found = [hit.key]
        name = hit.key.replace("\\", "/").rsplit("/", 1)[-1]
        if name != hit.key and name.lower() not in GENERIC_NAMES:
            found.append(name)
        return found
    if hit.arm == "memory" and ":" in hit.key:
        return [hit.key]
    return []


@functools.lru_cache(maxsize=4096)
def _bounded(literal: str) -> re.Pattern[str]:
    # Not inside a longer name: no word character, dot or dash on either side (a final
    # full stop is fine).
    return re.compile(rf"(?<![\w.-]){re.escape(literal)}(?!\.?[\w-])", re.I)


def _names(text: str, lowered: str, literal: str) -> str | None:
    """`literal` where `text` names it as a whole name, else None (a substring test first:
    most messages do not hold it at all)."""
    if literal.lower() not in lowered:
        return None
    m = _bounded(literal).search(text)
    return m[0] if m else None


def quoted_in_session(messages: Sequence[SessionMessage], n: int = PHRASE_WORDS) -> tuple[int, list[RecallVerdict]]:
    """Apply the rule to one session's messages, in order. Returns how many recall calls
    the session holds and a verdict for each recall that could be tied."""
    calls: list[int] = []
    call_ids: set[str] = set()
    for i, m in enumerate(messages):
        # Rule 1: a call id once, at its first call (the same call may be written twice).
        if m.is_recall and not (m.tool_call_id and m.tool_call_id in call_ids):
            calls.append(i)
            if m.tool_call_id:
                call_ids.add(m.tool_call_id)
    tied: list[tuple[int, int, list[Hit]]] = []
    outputs: set[int] = set()
    for i in calls:
        call_id = messages[i].tool_call_id
        if not call_id:
            continue
        later = range(i + 1, len(messages))
        result = next((j for j in later if messages[j].kind == "tool" and messages[j].tool_call_id == call_id), None)
        if result is None:
            continue
        outputs.add(result)
        tied.append((i, result, parse_hits(messages[result].text)))
    verdicts = []
    if tied:
        texts = [(m.text or "") if j not in outputs else "" for j, m in enumerate(messages)]
        runs = {h: phrases(h.text, n) for _, _, hits in tied for h in hits}
        literals = {literal for _, _, hits in tied for h in hits for literal in places(h)}
        ids = {str(int(h.key)) for _, _, hits in tied for h in hits if h.arm == "fact" and h.key.isdigit()}
        seen = _Seen(texts, ids, literals, set().union(*runs.values()), n)
        for call, result, hits in tied:
            verdict = RecallVerdict(call, result)
            for hit in hits:
                verdict.hits.append(_judge(hit, runs[hit], seen, result))
            verdicts.append(verdict)
    return len(calls), verdicts


class _Seen:
    """One session's texts, read once: where each fact id, each place name and each wanted
    run of words appears (message indices, in order)."""

    def __init__(self, texts: list[str], ids: set[str], literals: set[str], wanted: set[tuple[str, ...]], n: int):
        self.ids: dict[str, list[int]] = {}
        self.named: dict[str, list[tuple[int, str]]] = {}
        self.runs: dict[tuple[str, ...], list[int]] = {}
        lowered_literals = [(literal, literal.lower()) for literal in literals]
        for j, text in enumerate(texts):
            if not text:
                continue
            if any(key in text for key in ids):  # the full pattern only where an id's digits are
                for key in fact_ids(text):
                    self.ids.setdefault(key, []).append(j)
            lowered = text.lower()
            for literal, low in lowered_literals:
                if low in lowered and (found := _names(text, lowered, literal)):
                    self.named.setdefault(literal, []).append((j, found))
            if wanted:
                ws = words(text)
                for run in {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)} & wanted:
                    self.runs.setdefault(run, []).append(j)


def _judge(hit: Hit, runs: set[tuple[str, ...]], seen: _Seen, result: int) -> HitVerdict:
    """Rule 4: a mark after the result (index `result`) and none before it."""
    if hit.arm == "fact" and hit.key.isdigit():
        at = seen.ids.get(str(int(hit.key)), [])
        if at and at[0] > result:
            return HitVerdict(hit.arm, hit.key, True, "id", f"#{int(hit.key)}")
    for literal in places(hit):
        named = seen.named.get(literal, [])
        if named and named[0][0] > result:
            return HitVerdict(hit.arm, hit.key, True, "path", named[0][1])
    for run in sorted(runs):
        where = seen.runs.get(run, [])
        if where and where[0] > result:
            return HitVerdict(hit.arm, hit.key, True, "phrase", " ".join(run))
    return HitVerdict(hit.arm, hit.key, False)


@dataclass
class ArmQuoted:
    """Per arm, over the tied recalls: hits, hits later quoted, and the share."""

    arm: str
    recalls: int  # tied recalls that returned at least one hit of this arm
    hits: int
    quoted: int
    by_id: int  # of the quoted, found by the fact id
    by_path: int  # by the vault path or file name, or the memory file:line
    by_phrase: int  # by a distinctive phrase only
    share: float | None  # quoted / hits, None without hits


def per_arm(verdicts: Iterable[RecallVerdict]) -> list[ArmQuoted]:
    rows = {arm: ArmQuoted(arm, 0, 0, 0, 0, 0, 0, None) for arm in ARMS}
    for v in verdicts:
        for arm in {h.arm for h in v.hits}:
            rows[arm].recalls += 1
        for h in v.hits:
            row = rows[h.arm]
            row.hits += 1
            if h.quoted:
                row.quoted += 1
                row.by_id += h.how == "id"
                row.by_path += h.how == "path"
                row.by_phrase += h.how == "phrase"
    for row in rows.values():
        row.share = share(row.quoted, row.hits)
    return list(rows.values())


def share(quoted: int, hits: int) -> float | None:
    """Rule 5's share: quoted / hits, three decimals; None without hits."""
    return round(quoted / hits, 3) if hits else None
