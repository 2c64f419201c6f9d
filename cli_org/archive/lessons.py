"""Lasting lessons found in an agent session: what a later agent should be told.

A person's correction ("no, in this repo we always use pnpm, never npm"), a rule ("from now
on run make lint before every commit"), a decision ("keep the v1 routes until March"), an
explicit "remember that ...", a preference, and a failure whose fix worked (a command that
failed for a reason of the environment, then worked with one thing changed). Plain work
proposes nothing: a typo fix, a rename, a one-off "no, the other file too", a question, a
test fixed within the task, tool output, pasted code or logs, the harness's own text.

No language model writes anything. The structure decides where to look: the person's own
messages (not tool results, nor the harness's text: slash commands, reminders, Codex's
environment and AGENTS.md blocks), a correction right after the agent acted, a failed
command and the changed one that then worked. The opening prompt of a session, a spec of
many sentences and the answer to the agent's own question are the task of the moment, and
so is a sentence that hands out work ("add ...", "I need you to ..."), asks or hedges. Cue
words decide whether a sentence can be a lasting lesson at all: strong ones ("from now on",
"always/never <verb>", "in this repo", "before every commit", "we decided", "keep ... until",
"I prefer") or weak ones ("don't ...", "only", "instead of", "X, not Y"). A logistic
regression over the sentence embedding of the shipped query model (all-MiniLM-L6-v2, as
checks/injection.py) judges each candidate: weak cues at the trained threshold, strong ones
a margin below it; "remember that ..." passes on the person's word. Its weights are
`lesson_weights.npz` beside this file, written by `python -m benchmarks.lesson_train` from
benchmarks/lesson_data/tune.tsv (heldout.tsv is never trained on; `python -m
benchmarks.lessons_eval` measures it). Without an embedder only strong cues propose.

It is built to say little: on real public sessions most lessons a person states are plain
facts in the middle of a task ("siyuan runs from /srv/siyuan with its data in ..."), with no
cue, and are missed (benchmarks/lessons_eval.py, and the report of issue 35).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..checks.rules import MAX_PROPOSAL_CLAIM as MAX_CLAIM  # a proposal's claim, characters
from ..errors import InputError
from ..local.files import open_file
from . import claude, codex
from .records import BadRecord, load_line

if TYPE_CHECKING:
    from ..vault.embedders import Embedder


WEIGHTS = Path(__file__).with_name("lesson_weights.npz")

# The Stop hook reads the end of a transcript within its 5 s budget: the largest line of the
# corpus' claude-code sessions is 74 KB, and a whole 3 MB session of 414 messages is read and
# parsed in 0.2 s (2026-12-04), so 4 MiB from the end holds the last turn with room to spare
# and costs a fraction of the budget whatever the file's size.
TAIL_BYTES = 4 << 20
# A person's message with more prose than this is a pasted spec, a skill or a slash command's
# expansion, not a correction: the real corrections of the corpora and of the labelled sets
# are one to three sentences (the longest lesson line in tune.tsv is under 300 characters).
MAX_PROSE = 1500
# A sentence shorter than this says too little to be a lasting lesson ("no", "use pnpm"
# alone is kept: 8 characters); longer than MAX_UNIT is a paragraph the splitter missed.
MIN_UNIT = 8
MAX_UNIT = 600
# A person's message of more sentences than this is a spec of the task (numbered steps,
# requirements), not a correction: the corrections of the labelled sets have one to three.
MAX_UNITS = 4
# Proposals from one session at most: precision over recall (issue 35); a session that
# yields more is one whose words the cues misread, and its best are kept.
MAX_PER_SESSION = 8
# A failure-fix pair: the command that worked must come within this many commands of the
# one that failed (a retry, not a later, unrelated run).
FIX_WINDOW = 6


@dataclass(frozen=True)
class Turn:
    """One archived message as the detector reads it."""

    key: str  # archive_messages.source_key (a transcript line's key in the hook)
    kind: str  # user | assistant | tool | system
    text: str  # '' when none
    tool_name: str | None = None
    command: str | None = None
    failed: bool | None = None  # a tool result that reports failure; None: unknown / not a tool result


@dataclass(frozen=True)
class Lesson:
    key: str  # the Turn it came from (provenance)
    claim: str  # <= MAX_CLAIM chars, in the words a later agent would search for
    subject: str  # short topic, e.g. "package manager", "test database"
    kind: str  # one of rules.PROPOSAL_KINDS
    score: float  # the detector's confidence 0..1
    why: str  # which signal: "correction", "rule", "failure-fix", "decision", "remember-that", ...


# ---------------------------------------------------------------------------------------------
# Turns from the archive's rows and from a Claude Code transcript


def turns_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[Turn]:
    """Rows of archive_messages (source_key, kind, text, tool_name, command, raw; tool_call_id
    when there), in position order. A tool result's `failed` is read from what the harness
    stored: Claude Code's tool_result is_error, Codex's exit code in the output, Hermes'
    exit_code or error in the JSON it stores as content. A tool result also gets the
    command of the call it answers (matched by call id, else the oldest call unanswered)."""
    out: list[Turn] = []
    raws: dict[str, Mapping[str, Any]] = {}
    calls: dict[str, tuple[str | None, str | None]] = {}
    pending: list[tuple[str | None, str | None]] = []
    for row in rows:
        key = str(row.get("source_key") or "")
        kind = str(row.get("kind") or "system")
        text: str = row["text"] if isinstance(row.get("text"), str) else ""
        raw: Mapping[str, Any] = row["raw"] if isinstance(row.get("raw"), Mapping) else {}
        if key and "part_of" not in raw:
            raws[key] = raw
        tool_name = row.get("tool_name") if isinstance(row.get("tool_name"), str) else None
        command = row.get("command") if isinstance(row.get("command"), str) else None
        call_id = row.get("tool_call_id") if isinstance(row.get("tool_call_id"), str) else None
        if kind == "assistant" and tool_name:
            call_id = call_id or _call_id(raw, key, raws)
            if call_id:
                calls[call_id] = (tool_name, command)
            pending.append((tool_name, command))
            out.append(Turn(key, kind, text or "", tool_name, command))
            continue
        if kind == "tool":
            call_id = call_id or _call_id(raw, key, raws)
            made = calls.pop(call_id, None) if call_id else None
            if made is not None and made in pending:
                pending.remove(made)
            elif made is None and pending:
                made = pending.pop(0)
            name, cmd = made or (tool_name, command)
            failed = _failed(raw, key, raws, text or "")
            out.append(Turn(key, kind, text or "", tool_name or name, command or cmd, failed))
            continue
        out.append(Turn(key, kind, text or ""))
    return out


def _record_part(raw: Mapping[str, Any], key: str, raws: Mapping[str, Mapping[str, Any]]) -> Any:
    """The content block a Claude Code row came from: a line's later parts store only
    {"part_of": key}, and their block is found in the first part's record."""
    part = 0
    if "part_of" in raw:
        base = raw.get("part_of")
        raw = raws.get(base, {}) if isinstance(base, str) else {}
        _, _, n = key.rpartition("#")
        part = int(n) if n.isdigit() else 0
    message = raw.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, list) and 0 <= part < len(content) and isinstance(content[part], Mapping):
        return content[part]
    return None


def _call_id(raw: Mapping[str, Any], key: str, raws: Mapping[str, Mapping[str, Any]]) -> str | None:
    block = _record_part(raw, key, raws)
    if isinstance(block, Mapping):
        found = block.get("tool_use_id") or block.get("id")
        return found if isinstance(found, str) else None
    payload: Mapping[str, Any] = raw["payload"] if isinstance(raw.get("payload"), Mapping) else raw
    for name in ("call_id", "tool_call_id"):
        if isinstance(payload.get(name), str):
            return str(payload[name])
    if isinstance(raw.get("function"), Mapping) and isinstance(raw.get("id"), str):  # a Hermes tool call
        return str(raw["id"])
    return None


# Codex writes a shell call's result as text ("Exit code: 1", "Process exited with code 1")
# or, in older rollouts, as JSON whose metadata holds exit_code.
_EXIT = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)", re.M)
_EXIT_JSON = re.compile(r'"exit_code"\s*:\s*(-?\d+)')


def _failed(raw: Mapping[str, Any], key: str, raws: Mapping[str, Mapping[str, Any]], text: str) -> bool | None:
    block = _record_part(raw, key, raws)
    if isinstance(block, Mapping) and block.get("type") == "tool_result":  # Claude Code
        return bool(block.get("is_error"))
    payload = raw.get("payload")
    if isinstance(payload, Mapping) and isinstance(payload.get("output"), str | Mapping):  # Codex
        output = payload["output"]
        if isinstance(output, Mapping):
            meta = output.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, Mapping) else None
            return code != 0 if isinstance(code, int) else None
        found = _EXIT.search(output[:400]) or _EXIT_JSON.search(output[-400:])
        return int(found[1]) != 0 if found else None
    if "role" in raw and raw.get("role") == "tool":  # Hermes: the content is the tool's JSON
        head = text.lstrip()[:1]
        if head == "{":
            code = _EXIT_JSON.search(text[-300:]) or _EXIT_JSON.search(text[:300])
            if code:
                return int(code[1]) != 0
            error = re.search(r'"error"\s*:\s*(null|"")', text)
            if '"error"' in text and error is None:
                return True
            return False if error else None
    return None


def turns_from_claude_transcript(path: Path, *, last_turn_only: bool) -> list[Turn]:
    """The turns of a Claude Code transcript (.jsonl), read from its last TAIL_BYTES only:
    the path is handed in by the harness and is treated as hostile (files.py's open_file
    refuses a device, a FIFO, a folder or a missing file with InputError; a line that is not
    JSON is skipped). With `last_turn_only`, the turns from the person's last message on
    (and the agent's action just before it, which tells whether that message corrects it)."""
    return _transcript_turns(path, claude.TranscriptFile(Path(path)), last_turn_only)


def turns_from_codex_transcript(path: Path, *, last_turn_only: bool) -> list[Turn]:
    """The same for a Codex rollout (.jsonl), the transcript its Stop hook names."""
    return _transcript_turns(path, codex.TranscriptFile(Path(path)), last_turn_only)


def _transcript_turns(
    path: Path, parser: claude.TranscriptFile | codex.TranscriptFile, last_turn_only: bool
) -> list[Turn]:
    try:
        with open_file(Path(path)) as (fh, st):
            start = max(0, st.st_size - TAIL_BYTES)
            fh.seek(start)
            data = fh.read(TAIL_BYTES)
    except OSError as exc:
        raise InputError(f"cannot read the transcript: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    if start > 0 and lines:
        lines = lines[1:]  # the first line was cut by the seek
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            parsed = parser.parse(load_line(line), n)
        except (BadRecord, KeyError, TypeError, ValueError, AttributeError, RecursionError):
            continue
        for m in parsed.messages:
            row = {"source_key": m.source_key, "kind": m.kind, "text": m.text, "tool_name": m.tool_name}
            rows.append(row | {"command": m.command, "raw": m.raw, "tool_call_id": m.tool_call_id})
    turns = turns_from_rows(rows)
    if not last_turn_only:
        return turns
    person = [i for i, t in enumerate(turns) if t.kind == "user" and _prose(t.text)]
    if not person:
        return []
    first = person[-1]
    before = [i for i in range(first) if turns[i].kind == "assistant"]
    return turns[before[-1] if before else first :]


# ---------------------------------------------------------------------------------------------
# What is the person's own prose

# Text the harness writes in the person's place: Claude Code's slash commands, their output,
# reminders, task notifications, compaction; Codex's environment and AGENTS.md blocks;
# Hermes' nudges. Tagged blocks are cut out wherever they are; these openings drop the message.
_TAGGED = re.compile(r"<([A-Za-z][\w:-]*)(?:\s[^<>]*)?>.*?</\1\s*>", re.S)
_LONE_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")
_BOILERPLATE = re.compile(
    r"^\s*(?:\[Request interrupted|\[Image|Caveat:|# AGENTS\.md instructions|<INSTRUCTIONS>|"
    r"This session is being continued from a previous conversation|Your task is to create a detailed summary|"
    r"You just executed tool calls|Please analyze this codebase and create|Base directory for this skill|"
    r"Stop hook feedback|PreToolUse:|PostToolUse:|API Error|Warmup\b|Continue from where you left off|"
    r"\[SYSTEM|\[System|System:|The user (?:doesn't|does not) want|Tool (?:loaded|ran))",
    re.I,
)
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
# A line of a pasted log, trace, diff or code, not a sentence someone wrote.
_LOG_LINE = re.compile(
    r"^\s*(?:[$#>]\s|>>>|\+\+\+|---|@@|[+-]\s|at\s+\S+\(|File \"|Traceback|\d{4}-\d\d-\d\d[ T]\d|"
    r"\[\d|(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FATAL|TRACE)\b|npm (?:ERR|WARN)|E\s{2,}|\w+Error:|"
    r"(?:def|class|import|from|function|const|let|var|return|if|for|while|public|"
    r"private|fn)\s.*[:{;(=]\s*$|[{}\[\]);]+\s*$)"
)


def _prose(text: str) -> str:
    """The sentences a person wrote in a message: harness blocks, fenced code and log lines
    removed; '' when the message is the harness's own or holds no prose."""
    text = _CONTROL.sub("", text or "")
    if not text or _BOILERPLATE.match(text):
        return ""
    text = _TAGGED.sub(" ", text)
    text = _LONE_TAG.sub(" ", text)
    text = _FENCE.sub(" ", text)
    kept = []
    for line in text.splitlines():
        s = line.strip()
        if not s or _LOG_LINE.match(line) or line.startswith(("    ", "\t")):
            continue
        letters = sum(c.isalpha() or c.isspace() for c in s)
        if letters < 0.7 * len(s):  # symbols and digits: code, paths, numbers, a table
            continue
        kept.append(s)
    prose = "\n".join(kept).strip()
    return "" if _BOILERPLATE.match(prose) else prose


# Sentences, and the clauses a person runs together: "please continue to fix the rest and stop
# telling me it is in good shape" holds a task and a correction.
_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=[A-Z`\"'(])|\n+|,?\s+(?:and|but)\s+(?=(?:stop|don'?t|do not|please|remember)\b)")


# A list item's mark ("1)", "2.", "b)"), so the item is read from its first word.
_LIST_MARK = re.compile(r"^\(?(?:\d{1,2}|[a-hA-H])[.)]\s+")


def _units(prose: str) -> list[str]:
    units = []
    for part in _SPLIT.split(prose):
        part = _LIST_MARK.sub("", part.strip(" -*•\t"))
        if MIN_UNIT <= len(part) <= MAX_UNIT:
            units.append(part)
    return units


# ---------------------------------------------------------------------------------------------
# Cue words: can this sentence be a lasting lesson, and is it plainly one-off work

_VERBS = (
    r"use|run|call|commit|push|merge|deploy|put|write|add|edit|touch|import|install|test|check|ask|create|"
    r"delete|remove|modify|change|rebase|force|mock|hardcode|log|print|store|skip|bump|update|format|lint|pin|"
    r"open|rely|depend|leave|keep|squash|amend|reformat|rename|expose|return|raise|catch|name|prefix|work|"
    r"go|target|point|hit|talk|send|start|stop|restart|build|include|mention|document|wrap|cast|default|land|"
    r"upgrade|downgrade|generate|disable|enable|override|bypass|mix|schedule|suggest|propose|introduce|vendor|patch"
)
# "always"/"never" as an order (at the start, or after "we", "you", "please", "must", a comma),
# not as an observation ("the function always returns None").
_ORDER = r"(?:^|[,;:]\s*|\b(?:we|you|please|must|should|and|to|then|so|i)\s+)"
_STRONG = [
    (
        "rule",
        re.compile(r"\b(?:from now on|going forward|moving forward|from here on|henceforth|in (?:the )?future)\b"),
    ),
    (
        "remember-that",
        re.compile(
            r"(?<!\bi )(?<!\byou )(?<!\bdo )(?:\bremember(?: that\b| to\b|:)|\b(?:keep in mind|"
            r"don'?t forget (?:that|to)|for future reference|note for (?:the )?future|"
            r"make a note|heads up for later)\b)"
        ),
    ),
    ("rule", re.compile(rf"{_ORDER}(?:always|never)\s+(?:\w+\s+){{0,2}}?(?:{_VERBS})\w*\b")),
    (
        "rule",
        re.compile(
            r"(?:^|[;:]\s*)(?:in|for|across) (?:this|our|the whole|every|all our) (?:repo|repository|"
            r"project|codebase|team|org|company|monorepo|workspace|services)\b|"
            r"\b(?:in|for|across) (?:this|our|the whole|every|all our) (?:repo|repository|project|codebase|team|"
            r"org|company|monorepo|workspace|services),? (?:we|you|the|all|every|everything|always|never|nothing|"
            r"only|nobody|no one|[\w`./-]+ (?:is|are|goes|go|lives?|runs?))\b"
        ),
    ),
    (
        "rule",
        re.compile(
            r"\b(?:we|this team|the team|everyone|nobody|no one)\s+(?:always|never|only|"
            r"don'?t|do not)\s+(?:use|uses|prefer|deploy|run|keep|write|commit|pin|ship|"
            r"release|target|merge|rebase|push|lock|mock|expose|log)\b"
        ),
    ),
    (
        "decision",
        re.compile(
            r"\b(?:we(?:'ve| have)?|i(?:'ve| have)?|the team|it was|it's been|it'?s)\s+(?:decided|"
            r"agreed|chose|chosen|settled on|standardi[sz]ed on|standardi[sz]ing on)\b|"
            r"\b(?:final decision|it'?s decided)\b"
        ),
    ),
    (
        "decision",
        re.compile(
            r"\bkeep\s+.{1,60}?\s+until\b|\buntil\s+(?:january|february|march|april|may|"
            r"june|july|august|september|october|november|december|q[1-4]|next\s+(?:year|"
            r"quarter|release|version|major)|the end of|further notice)"
        ),
    ),
    (
        "rule",
        re.compile(
            r"\b(?:before|after)\s+(?:every|each|any)\s+(?:\w+\s+)?(?:commit|push|merge|"
            r"release|deploy|pr|pull request|change|migration|test run)\b"
        ),
    ),
    (
        "preference",
        re.compile(
            r"\b(?:i|we)(?:'d| would) rather\b|\b(?:i|we)\s+(?:prefer|much prefer|like it when|"
            r"hate it when|don'?t like it when)\b"
        ),
    ),
    (
        "correction",
        re.compile(
            r"\b(?:is|are|runs|listens|lives)\s+(?:on|at)\s+(?:port\s+)?:?\d{2,5},?\s+not\s+(?:on\s+)?:?\d{2,5}\b"
        ),
    ),
    ("rule", re.compile(r"\b(?:must|should)\s+(?:always|never)\b|\bnever\s+ever\b|\bdon'?t\s+ever\b|\bdo not ever\b")),
    ("rule", re.compile(r"\b(?:the|our) (?:convention|rule|policy|standard|house style|style guide)\b")),
    ("correction", re.compile(r"\bwe use \S+(?: \S+)? (?:here|in this)\b")),
    (
        "preference",
        re.compile(
            r"\b(?:without|before) (?:asking|checking with|telling) me\b|\b(?:ask|check with) me (?:first|before)\b"
        ),
    ),
    (
        "rule",
        re.compile(
            r"\b(?:every|all|any) new\b|\bevery (?:pr|pull request|commit|migration|release|"
            r"bug ?fix|branch|endpoint|change)\b"
        ),
    ),
]
_WEAK = [
    (
        "rule",
        re.compile(
            r"\b(?:always|never|every|each time|whenever|by default|only ever|at all times|all new|any new|no new)\b"
        ),
    ),
    (
        "rule",
        re.compile(r"\b(?:don'?t|do not|stop|avoid|quit|no more)\s+(?:\w+\s+){0,1}(?:" + _VERBS + r"|\w{3,}ing)\w*\b"),
    ),
    ("rule", re.compile(r"(?:^|[;,]\s*)no (?:new |more )?\w+(?: \w+)? (?:in|inline|allowed|please|anywhere|ever)\b")),
    (
        "correction",
        re.compile(
            r"(?:,|\b(?:is|are|use|uses|on|at|in|with)\s+[\w`./:@-]+,?)\s+not\s+(?!(?:a|"
            r"an|the|just|only|yet|sure|working|needed|really|all|now|here|this|that|"
            r"it|be)\b)[\w`./:-]+"
        ),
    ),
    ("rule", re.compile(r"\b(?:use|run|prefer)\s+\S+\s+(?:instead|rather than)\b|\binstead of\b|\brather than\b")),
    (
        "rule",
        re.compile(
            r"\bwe\s+(?:use|uses|prefer|deploy|run|keep|write|commit|pin|ship|release|"
            r"target|lock)\b|\bthis (?:project|repo|service|team|codebase) (?:uses|runs|"
            r"has|moved|is)\b"
        ),
    ),
    (
        "decision",
        re.compile(
            r"\blet'?s\s+(?:go with|stick with|keep|use|standardi[sz]e)\b|\bwe(?:'ll|"
            r" will| are going to|'re going to|'re keeping|'re moving)\s+(?:use|keep|"
            r"go with|stick with|drop|deprecate|support|move|the)\b|\bwe(?:'re| are)? (?:keeping|"
            r"dropping|moving|dropped|moved|switched|picked|went with)\b"
        ),
    ),
    (
        "fact",
        re.compile(
            r"\b(?:is|are|lives|runs|listens)\s+(?:on|at|in|under)\s+\S+|\b(?:in|on) (?:dev|"
            r"prod|production|staging|ci|the ci)\b|\bonly (?:works|runs|builds)\b|\bneeds?\s+(?:the|"
            r"a|an|to be|\d)"
        ),
    ),
    (
        "failure",
        re.compile(
            r"\b(?:fails?|breaks?|crash(?:es)?|hangs|times? out|won'?t start|doesn'?t start)\b.{0,60}\b(?:unless|"
            r"if|when|without|behind|on|with)\b|\bor it (?:crashes|fails|breaks|hangs)\b"
        ),
    ),
    (
        "workflow",
        re.compile(
            r"^(?:first|to (?:deploy|release|reproduce|test|build|run|publish|debug))\b|"
            r"\b(?:when|whenever|after|before) (?:you|we|merging|changing|adding|touching)\b|"
            r"\bthen\b.{0,40}\b(?:otherwise|in that order)\b"
        ),
    ),
    (
        "preference",
        re.compile(
            r"\b(?:i|we)\s+(?:like|want|hate|dislike|'d rather)\b|\bprefer\b|\bplease (?:keep|"
            r"be|don'?t|no)\b|\bno \w+ (?:in|please)\b"
        ),
    ),
    (
        "rule",
        re.compile(
            r"\b(?:must|needs? to|has to|have to|should|required|requires|only|is the only|"
            r"are named|is named|named after|naming scheme)\b"
        ),
    ),
]
# One-off work: this file, this time, a question, a thanks, a go-ahead, a task request.
_PLAIN = re.compile(
    r"\?\s*$|"
    r"^(?:ok(?:ay)?|great|thanks|thank you|thx|lgtm|looks good|perfect|nice|cool|"
    r"yes|yep|yeah|sure|go ahead|continue|proceed|do it|sounds good)\b|"
    r"\b(?:this|that|the other|these|those) (?:file|files|function|method|line|"
    r"lines|test|one|ones|bug|error|typo|variable|class|component|page|screen|"
    r"module|commit|pr|branch|ticket|issue|run|query|report|call|script|case|"
    r"endpoint|change|task|fixture|table|loop|list|field|spike|prototype)\b(?!.*\b(?:always|"
    r"never|every|from now on)\b)|"
    r"\?\s|\bwhen I\b|\bI(?:'m| am| have) (?:editing|working on|local changes|changes in|uncommitted)\b|"
    r"\b(?:it|this|that|which|the \w+)\s+(?:always|never)\s+(?!(?:use|run|call|push|commit|merge|deploy)s?\b)[a-z]+s\b|"
    r"^(?:it|they|this|that|the (?:function|endpoint|page|form|button|component|"
    r"script|table|api|output|result|response|method|class))\s+(?:should|must|"
    r"needs to|has to)\b|"
    r"\bhere\s*[.!]?$|\bnever ?mind\b|\byet\s*[.!]?$|\bjust (?:the|this) one\b|"
    r"\bthe same (?:pattern|thing|way|approach|as|for)\b|"
    r"\bthe (?:assertion|bug is|problem is|issue is)\b|\b(?:that'?s|this is) (?:the|"
    r"why|which)\b.{0,30}\b(?:bug|problem|issue|cause|hang)\b|"
    r"\b(?:typo|this time|for now|right now|just now|for this (?:task|one|pr|change)|as well|too)\s*[.!]?$|"
    r"\b(?:can|could|would) you\b|\bplease (?:fix|add|make|change|update|create|"
    r"write|implement|remove|delete|revert|try|look|check|show|explain|rename|"
    r"move)\b|"
    r"^(?:now|next|then|also|and|but)\s+(?:fix|add|make|change|update|create|"
    r"write|implement|remove|delete|revert|try|rename|move|run)\b|"
    r"\b(?:rename|renaming)\b.{0,40}\bto\b|\bI (?:think|guess|wonder|'m not sure|am not sure)\b",
    re.I,
)
# The person handing out the task of the moment: an imperative at the start of a sentence, "I need
# you to", a sentence about the thing being made ("it does not need to be portable"). Such a
# sentence is a lesson only with a strong cue ("from now on", "always ...", "before every ...").
_TASK = re.compile(
    r"^(?:please\s+|ok(?:ay)?[,.]?\s+|now\s+|then\s+|first[,]?\s+|also[,]?\s+)?(?:add|create|write|implement|extract|"
    r"copy|move|list|test|verify|check|examine|read|look|find|make sure|put|commit|push|open|build|generate|update|"
    r"fix|remove|delete|rename|review|audit|survey|summari[sz]e|explain|show|tell|install|set up|initiali[sz]e|begin|"
    r"start|continue|do|give|change|replace|refactor|clean|split|merge|deploy|publish|release|download|upload|"
    r"compare|analy[sz]e|research|search|investigate|debug|try|help|let me|go)\b|"
    r"^(?:i|we)\s+(?:need|want|would like|'d like)\s+(?:you|to|a|an|the|this|that|it)\b|"
    r"^(?:i|we)\s+(?:have|had|think|should)\b|^(?:i|we)(?:'ll|'m|'d|'ve| can| could| will| am| may| might| just)\b|"
    r"^(?:before|after|once|when|until) (?:we|you|i) (?:start|begin|finish|are done|'re done|continue|go|move on)\b|"
    r"^(?:it|this|that|they|these|those|there)\b",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:what|why|how|where|when|which|who|is|are|do|does|did|can|could|should|would|will)\b", re.I
)
_CORRECTION_START = re.compile(
    r"^\W*(?:no+|nope|nah|wrong|stop|don'?t|do not|not|actually|wait|that'?s (?:wrong|not)|never)\b", re.I
)


def _cue(unit: str) -> tuple[str | None, str | None]:
    """(strength, why): 'strong', 'weak' or None, and the cue's name."""
    low = unit.lower()
    bare = _LEAD.sub("", low)  # "no, never push" is read as "never push" too
    for why, pattern in _STRONG:
        if pattern.search(low) or pattern.search(bare):
            return "strong", why
    for why, pattern in _WEAK:
        if pattern.search(low) or pattern.search(bare):
            return "weak", why
    return None, None


# A question asked without its mark ("are there any files that should move"), and a sentence
# the person hedges ("likely", "I think", "you'll have to search to confirm"): not lessons.
_ASKED = re.compile(
    r"^(?:what|why|how|where|which|who|is there|are there|do you|do we|does|did|can you|can we|could you|"
    r"would you|should we|should i|have you|has (?:it|this|that)|any idea)\b",
    re.I,
)
_HEDGED = re.compile(
    r"\b(?:likely|probably|maybe|perhaps|might|i think|i guess|i believe|not sure|unsure|to confirm|"
    r"i suspect|seems? to|apparently)\b",
    re.I,
)


def _plain(unit: str) -> bool:
    if _PLAIN.search(unit) or _ASKED.match(_LEAD.sub("", unit)) or _HEDGED.search(unit):
        return not re.search(r"\bremember\b|\bfrom now on\b|\bgoing forward\b", unit, re.I)
    return bool(_QUESTION_START.match(unit)) and unit.rstrip().endswith("?")


# ---------------------------------------------------------------------------------------------
# The claim, its subject, its kind

_LEAD = re.compile(
    r"^(?:\W*(?:no+|nope|nah|wrong|actually|wait|hmm+|ok(?:ay)?|right|yes|yeah|so|also|and|but|well|fyi|btw|hey|ps|"
    r"p\.s\.|"
    r"important|note|just so you know|for the record|for future reference|for the future|again|"
    r"like i said|as i said|i told you|i said|from now on|going forward|moving forward|in (?:the )?future|"
    r"from here on(?: out)?|henceforth|please|pls|remember to|remember(?: that)?|keep in mind(?: that)?|"
    r"don'?t forget to|don'?t forget(?: that)?|note that|make a note(?: that)?|"
    r"that'?s (?:wrong|not right))\b[\s,.:;!—–-]*)+",
    re.I,
)


# "Decision from this morning's sync: we keep ...": the label goes, the decision stays.
_LABEL = re.compile(r"^(?:the )?decision(?: (?:from|of|at|in) [^:]{1,40})?:\s*", re.I)


# Control and format characters (a terminal's DEL, bidi overrides, zero-width marks): kept
# out of claims, and out of the text the cues read ("\x7f\x7fi would prefer" in a real session).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def claim_of(unit: str) -> str:
    """The sentence in the words a later agent would search for: lead-ins ("no,", "from now
    on", "remember that") dropped, one line, at most MAX_CLAIM characters."""
    text = " ".join(_CONTROL.sub("", unit).split())
    stripped = _LABEL.sub("", _LEAD.sub("", text)).strip()
    if len(stripped) >= MIN_UNIT:
        text = stripped
    text = text[:1].upper() + text[1:]
    if text and text[-1] not in ".!":
        text = text.rstrip(",;:") + "."
    if len(text) > MAX_CLAIM:
        cut = text[: MAX_CLAIM - 1]
        space = cut.rfind(" ")
        text = (cut[:space] if space > MAX_CLAIM // 2 else cut).rstrip(",;: ") + "…"
    return text


_WORDS = re.compile(r"\S+")  # a list of words written as one string
_TOOLS = tuple(
    _WORDS.findall(
        "pnpm npm yarn bun pip uv poetry conda docker podman kubectl helm terraform make cargo "
        "gradle maven pytest jest vitest mocha rspec ruff black mypy eslint prettier tsc git gh postgres "
        "postgresql psql mysql redis sqlite nginx celery alembic django rails node deno python java rust "
        "isort flake8 pre-commit tox nox"
    )
)
_TOPIC = re.compile(
    r"\b(?:the|our|a)\s+((?:[a-z][\w.-]*\s){0,2}(?:database|db|server|branch|port|api|routes?|tests?|test suite|"
    r"build|deploy(?:ment)?s?|config|cache|queue|bucket|cluster|service|endpoint|repo|schema|migrations?|"
    r"package manager|linter|formatter|changelog|release|version|lockfile|env(?:ironment)?|credentials|"
    r"logs?|container|image|pipeline|ci|docs|readme|commits?|pr|pull requests?|tickets?|staging|prod(?:uction)?))\b"
)
_STOP = frozenset(
    _WORDS.findall(
        "a an the this that these those is are was were be been to of in on at for with by from and or "
        "but not no we you i it its our your my use run always never please don't do does did should must "
        "can will just only every each before after when then than instead rather keep remember from now "
        "going forward here there"
    )
)


def subject_of(claim: str) -> str:
    low = claim.lower()
    quoted = re.search(r"`([^`]{2,40})`", claim)
    if quoted:
        return str(quoted[1]).strip().lower()
    named = re.search(r"(?<![\w/.-])([\w-]+\.(?:md|py|ts|js|json|ya?ml|toml|cfg|ini|env|sql|sh|go|rs|txt))\b", claim)
    if named:  # a file the lesson is about
        return str(named[1])
    for tool in _TOOLS:
        if re.search(rf"(?<![\w-]){re.escape(tool)}(?![\w-])", low):
            if tool == "make" and not re.search(r"\bmake (?!sure|it|them|this|that|the|a|an|me|you)[a-z]", low):
                continue  # "make sure", "make it": the verb, not the program
            return str(tool)
    topic = _TOPIC.search(low)
    if topic:
        return str(topic[1]).strip()
    words = [w for w in re.findall(r"[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)*", low) if w not in _STOP and len(w) > 2]
    return " ".join(words[:3]) or "lesson"


def kind_of(unit: str, why: str | None) -> str:
    """The kind of a lesson, by its words: a decision taken, a preference of the person, a
    workflow (an order of steps), a failure and its cause, a rule (do / don't), else a fact."""
    low = _LEAD.sub("", unit.lower())
    if why == "decision" or re.search(
        r"\b(?:decided|agreed|let'?s go with|we'?ll go with|settled on|keep .{1,60} until|going with|went with|"
        r"we dropped|we chose|we picked)\b",
        low,
    ):
        return "decision"
    if why == "preference" or re.search(
        r"\b(?:prefer|i like|i'd rather|i would rather|i don'?t like|i hate|i want)\b|\bplease\W*$", low
    ):
        return "preference"
    if re.search(
        r"\b(?:before|after) (?:every|each|any|you|committing|pushing|merging|deploying|opening|changing|editing|"
        r"adding|touching)\b|\bfirst\b.{1,80}\bthen\b|\bwhenever you\b|^to (?:deploy|release|reproduce|publish)\b|"
        r"\bin that order\b",
        low,
    ):
        return "workflow"
    if re.search(r"\b(?:fails?|failing|broken|breaks|crash(?:es)?|doesn'?t work|won'?t work|times? out|hangs)\b", low):
        return "failure"
    if re.search(
        r"\b(?:always|never|don'?t|do not|must|only|use|avoid|stop|every|all new|no new|needs? (?:a|an)|goes in|"
        r"go in|pin|put)\b|^no \w+",
        low,
    ):
        return "rule"
    return "fact"


# ---------------------------------------------------------------------------------------------
# The classifier


@functools.cache
def _weights() -> tuple[Any, float, float]:
    import numpy as np

    with np.load(WEIGHTS) as w:
        return w["coef"].astype(np.float32), float(w["intercept"]), float(w["threshold"])


def scores(texts: list[str], embedder: Embedder) -> list[float]:
    """The classifier's probability that each text states a lasting lesson."""
    if not texts:
        return []
    # The vectors first: embed() waits for the model's loader thread, which imports numpy; a
    # second thread importing numpy meanwhile fails ("partially initialized module", seen in
    # benchmarks/proposals.py when the model was asked for just before).
    vectors = embedder.embed(texts)
    import numpy as np

    coef, intercept, _ = _weights()
    return [float(v) for v in 1 / (1 + np.exp(-(vectors @ coef + intercept)))]


def threshold() -> float:
    return _weights()[2]


# ---------------------------------------------------------------------------------------------
# The detector


@dataclass
class _Candidate:
    key: str
    unit: str
    strength: str
    why: str
    corrects: bool


# A candidate's score without the model: only strong cues pass, the "remember that" and the
# explicit "from now on" more surely than a "never ..." alone (those fixed numbers order the
# proposals of one session; they are not probabilities).
_RULE_SCORE = {"remember-that": 0.8, "decision": 0.7, "correction": 0.65, "preference": 0.65, "rule": 0.6}
# With the model, a strong cue lowers the bar by this much from the trained threshold: the cue
# already says "lasting", the model judges whether the sentence is a lesson at all (measured
# on tune.tsv by benchmarks/lesson_train.py, which writes the threshold for this rule).
STRONG_MARGIN = 0.15
# The score of a sentence the person asked to be remembered, whatever the model said of it: it
# passes on the person's word (accepted()), and ranks with what the model is unsure of.
REMEMBERED = 0.5


def candidates(turns: Sequence[Turn]) -> list[_Candidate]:
    """The person's sentences that a cue says could be lasting lessons, plain ones left out."""
    found = []
    after_action = False
    asked = False  # the agent's last words were a question
    for turn in turns:
        if turn.kind in ("assistant", "tool"):
            after_action = after_action or turn.kind == "tool" or bool(turn.tool_name) or bool(turn.text)
            if turn.kind == "assistant" and turn.text.strip() and not turn.tool_name:
                asked = turn.text.rstrip().rstrip("*_`) ").endswith("?")
            continue
        if turn.kind != "user":
            continue
        prose = _prose(turn.text)
        corrects = after_action and bool(_CORRECTION_START.match(prose))
        answers = after_action
        after_action = False
        if not prose or len(prose) > MAX_PROSE:
            continue
        units = _units(prose)
        # The opening prompt of a session, a spec of many sentences, or the answer to the agent's
        # question ("a question answered" is plain work, issue 35) is the task of the moment: only
        # a strong cue finds a lesson in it (the real sessions' false proposals were such lines).
        spec = not answers or len(units) > MAX_UNITS or asked
        asked = False
        for unit in units:
            if _plain(unit):
                continue
            strength, why = _cue(unit)
            if strength is None:
                continue
            if strength != "strong" and (spec or _TASK.match(_LEAD.sub("", unit))):
                continue
            if corrects and why in ("rule", "correction") and strength == "strong":
                why = "correction"
            found.append(_Candidate(turn.key, unit, strength, why or "rule", corrects))
    return found


def lessons(
    turns: Sequence[Turn], embedder: Embedder | None = None, found: list[_Candidate] | None = None
) -> list[Lesson]:
    """The lasting lessons of a session (or of its last turn), best first, at most
    MAX_PER_SESSION. With an embedder the classifier judges each candidate sentence; with
    None (or without the weights file) only strong cues are proposed. `found`: the turns'
    candidates, where the caller has read them already."""
    found = candidates(turns) if found is None else found
    out: list[Lesson] = []
    if embedder is not None and WEIGHTS.exists() and found:
        probability = scores([c.unit for c in found], embedder)
        bar = threshold()
        out = [
            _lesson(c, max(p, REMEMBERED) if c.why == "remember-that" else p)
            for c, p in zip(found, probability, strict=True)
            if accepted(c, p, bar)
        ]
    else:
        out = [_lesson(c, _RULE_SCORE.get(c.why, 0.6)) for c in found if accepted(c, None, 0.0)]
    out.extend(failure_fixes(turns))
    seen: set[str] = set()
    unique = []
    for lesson in sorted(out, key=lambda x: -x.score):
        norm = re.sub(r"\W+", " ", lesson.claim.lower()).strip()
        if norm not in seen and lesson.key not in seen:  # one claim a message, its best
            seen.update((norm, lesson.key))
            unique.append(lesson)
    return unique[:MAX_PER_SESSION]


def accepted(c: _Candidate, p: float | None, bar: float) -> bool:
    """The decision on one candidate: without the model (p None) a strong cue alone; with it,
    the model's probability at the trained threshold, or STRONG_MARGIN below it for a strong cue;
    an explicit "remember that" / "keep in mind" passes either way (on the blind public sessions
    the model turned down "remember to be concise, EVALUATION.md is max half a page")."""
    if p is None:
        return c.strength == "strong"
    if c.why == "remember-that":  # the person said it is to be remembered: the model does not overrule that
        return True
    return p >= (bar - STRONG_MARGIN if c.strength == "strong" else bar)


# Where the lasting part of a sentence starts when something else comes first ("that looks good,
# but keep in mind ...", "ok, and from now on ..."): the claim starts there.
_LASTING_FROM = re.compile(
    r"\b(?:remember(?: that| to|:)|keep in mind|don'?t forget|from now on|going forward|moving forward|"
    r"from here on|for future reference|in (?:the )?future)\b",
    re.I,
)


def _lasting_part(unit: str) -> str:
    found = _LASTING_FROM.search(unit)
    return unit[found.start() :] if found and found.start() > 0 else unit


def _lesson(c: _Candidate, score: float) -> Lesson:
    claim = claim_of(_lasting_part(c.unit))
    return Lesson(c.key, claim, subject_of(claim), kind_of(c.unit, c.why), round(float(score), 3), c.why)


# ---------------------------------------------------------------------------------------------
# Failure, then the fix that worked

# A failure of the environment (a port, a host, a missing program, a wrong flag), not of the
# code under work: a test's assertion failing and then passing is the task itself.
_ENV_ERROR = re.compile(
    r"command not found|not recognized as|no such (?:file|command|option)|unknown (?:option|flag|command|argument)|"
    r"unrecognized (?:option|arguments?)|connection refused|could not connect|couldn'?t connect|econnrefused|"
    r"could not translate host|name or service not known|permission denied|no module named|modulenotfounderror|"
    r"is not installed|not installed|cannot find module|unsupported (?:engine|version)|requires (?:node|python)|"
    r"address already in use|port \d+ (?:is )?(?:already )?in use|authentication failed|password authentication|"
    r"role \"[^\"]+\" does not exist|database \"[^\"]+\" does not exist|executable file not found|exec format error|"
    r"invalid option|illegal option|usage:",
    re.I,
)
# Reading and looking around: a path that did not exist is a guess, not a lesson.
_LOOKING = frozenset(
    _WORDS.findall(
        "ls cat head tail find grep rg ag cd pwd which type echo printf sed awk wc file stat tree less "
        "more du df env printenv true test sleep kill pkill ps lsof curl wget open code mkdir rm cp mv "
        "touch"
    )
)
_GIT_LOOKING = {"status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "blame", "remote", "fetch"}
_ENV_ASSIGN = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def _program(command: str) -> tuple[str, list[str]]:
    """The program a command line runs (after `cd X &&` and VAR=value), and its words."""
    first = command.strip().splitlines()[0] if command.strip() else ""
    words: list[str] = []
    for part in re.split(r"\s*(?:&&|;|\|\|)\s*", first):
        words = part.split()
        if words and words[0] not in ("cd", "source", ".", "export", "set"):
            break
    while words and _ENV_ASSIGN.match(words[0]):
        words = words[1:]
    if words and words[0] in ("sudo", "time", "npx", "uvx", "exec", "nohup", "env"):
        words = words[1:]
    return (words[0].rsplit("/", 1)[-1] if words else ""), words


def _looking(program: str, words: list[str]) -> bool:
    if program in _LOOKING:
        return True
    return program == "git" and len(words) > 1 and words[1] in _GIT_LOOKING


def _paths_only(changed: set[str]) -> bool:
    """Only file names and test ids changed: another file was run, not a setting fixed."""
    return all(re.search(r"/|::|\.\w{1,4}$|^-k$|^\w+_test$|^test_", w) for w in changed)


def failure_fixes(turns: Sequence[Turn]) -> list[Lesson]:
    """A shell command that failed for a reason of the environment, then the same program run
    again with one to three words changed, which worked, with no word from the person in
    between (the person's word is the lesson then, and the cues find it)."""
    results = [(i, t) for i, t in enumerate(turns) if t.kind == "tool" and t.command and t.failed is not None]
    out = []
    used: set[int] = set()
    for n, (i, bad) in enumerate(results):
        if not bad.failed or i in used or not _ENV_ERROR.search(bad.text[:4000]):
            continue
        assert bad.command is not None
        program, words = _program(bad.command)
        if not program or _looking(program, words):
            continue
        for j, good in results[n + 1 : n + 1 + FIX_WINDOW]:
            if any(t.kind == "user" and _prose(t.text) for t in turns[i + 1 : j]):
                break
            assert good.command is not None
            program2, words2 = _program(good.command)
            if good.failed or program2 != program or good.command.strip() == bad.command.strip():
                continue
            changed = set(words) ^ set(words2)
            if not 1 <= len(changed) <= 4 or _paths_only(changed):
                continue
            error = next((ln.strip() for ln in bad.text.splitlines() if _ENV_ERROR.search(ln)), "")[:120]
            claim = claim_of(f"`{_short(good.command)}` works; `{_short(bad.command)}` failed: {error}")
            out.append(Lesson(good.key, claim, program, "failure", 0.55, "failure-fix"))
            used.add(j)
            break
    return out


def _short(command: str, limit: int = 90) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
