"""Golden-set files: one `question|expected substring[|tag]` case a line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import InputError


@dataclass(frozen=True)
class Case:
    question: str
    expected: str
    tag: str
    line: int


def parse_golden(text: str, source: str = "golden file") -> list[Case]:
    """Parse every case; refuse the whole file, naming each bad line, if any is malformed."""
    cases, problems = [], []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) not in (2, 3):
            problems.append(f"line {number}: expected 'question|expected substring[|tag]', got {len(parts)} fields")
        elif not parts[0] or not parts[1]:
            problems.append(f"line {number}: empty {'question' if not parts[0] else 'expected substring'}")
        else:
            cases.append(Case(parts[0], parts[1], parts[2] if len(parts) == 3 and parts[2] else "-", number))
    if problems:
        raise InputError(f"{source}: " + "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""))
    if not cases:
        raise InputError(f"{source}: no cases")
    return cases


def load_golden(path: Path) -> list[Case]:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    return parse_golden(text, str(path))
