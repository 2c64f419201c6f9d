"""The files an evaluation reads: golden sets (one `question|expected substring[|tag]` case
a line), noise sets (one query a line that must find nothing) and hook sets (one prompt a
line, with the phrase its injection must hold, or none where the hook must stay quiet)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..errors import InputError
from ..local.files import read_file
from ..text import is_utf8

T = TypeVar("T")


@dataclass(frozen=True)
class Case:
    question: str
    expected: str
    tag: str
    line: int


def line_problem(line: str) -> str | None:
    """Why a line of a golden or noise file cannot become a query, if it cannot:
    PostgreSQL refuses NUL, and UTF-8 cannot encode a lone surrogate."""
    if "\x00" in line:
        return "holds a NUL character"
    if not is_utf8(line):
        return "is not valid UTF-8"
    return None


def read_text(path: Path) -> str:
    """A golden or noise file as text; one error naming the file and the first line that
    is not UTF-8."""
    data = read_file(path).data  # the one safe read: a regular file, bounded: never a FIFO or /dev/zero
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}: line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x})") from None


def _content(text: str) -> Iterator[tuple[int, str]]:
    """Each line of a set file that holds a case, with its number: comments (#) and blank
    lines aside."""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line and not line.startswith("#"):
            yield number, line


def _checked(items: list[T], problems: list[str], source: str, empty: str | None = None) -> list[T]:
    """The parsed items, or one error naming the first bad lines, or saying there are none."""
    if problems:
        raise InputError(f"{source}: " + "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""))
    if not items:
        raise InputError(empty or f"{source}: no cases")
    return items


def parse_golden(text: str, source: str = "golden file") -> list[Case]:
    """Parse every case; refuse the whole file, naming each bad line, if any is malformed."""
    cases, problems = [], []
    for number, line in _content(text):
        parts = [p.strip() for p in line.split("|")]
        problem = line_problem(line)
        if problem:
            problems.append(f"line {number}: {problem}")
        elif len(parts) not in (2, 3):
            problems.append(f"line {number}: expected 'question|expected substring[|tag]', got {len(parts)} fields")
        elif not parts[0] or not parts[1]:
            problems.append(f"line {number}: empty {'question' if not parts[0] else 'expected substring'}")
        else:
            cases.append(Case(parts[0], parts[1], parts[2] if len(parts) == 3 and parts[2] else "-", number))
    return _checked(cases, problems, source)


def load_golden(path: Path) -> list[Case]:
    return parse_golden(read_text(path), str(path))


@dataclass(frozen=True)
class HookCase:
    prompt: str
    expected: str | None  # None: the hook must add nothing for this prompt
    tag: str
    line: int


def parse_hook_cases(text: str, source: str = "hook file") -> list[HookCase]:
    """`prompt[|expected phrase[|tag]]` a line: no phrase (an empty one too) makes a quiet
    case. Refuses the whole file, naming each bad line, if any is malformed."""
    cases, problems = [], []
    for number, line in _content(text):
        parts = [p.strip() for p in line.split("|")]
        problem = line_problem(line)
        if problem:
            problems.append(f"line {number}: {problem}")
        elif len(parts) > 3:
            problems.append(f"line {number}: expected 'prompt[|expected phrase[|tag]]', got {len(parts)} fields")
        elif not parts[0]:
            problems.append(f"line {number}: empty prompt")
        elif len(parts) > 1 and parts[1] and parts[1].lower() in parts[0].lower():
            # The injection names the prompt it answers: a phrase of the prompt is always "found".
            problems.append(f"line {number}: the expected phrase is part of the prompt")
        else:
            tag = parts[2] if len(parts) == 3 and parts[2] else "-"
            cases.append(HookCase(parts[0], parts[1] if len(parts) > 1 and parts[1] else None, tag, number))
    return _checked(cases, problems, source)


def load_hook_cases(path: Path) -> list[HookCase]:
    return parse_hook_cases(read_text(path), str(path))


def parse_queries(text: str, source: str = "the noise file") -> list[str]:
    """One query a line, comments (#) and blank lines aside; a line that cannot be a query
    refuses the whole file, naming it."""
    queries, problems = [], []
    for number, line in _content(text):
        problem = line_problem(line)
        if problem:
            problems.append(f"line {number}: {problem}")
        queries.append(line)
    return _checked(queries, problems, source, f"{source} holds no queries")


def load_queries(path: Path) -> list[str]:
    return parse_queries(read_text(path), str(path))
