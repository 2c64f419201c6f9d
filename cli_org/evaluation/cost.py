"""What memory costs the context: standing instructions, memory indexes, bot memory files,
and the size of a typical recall."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..archive.homes import claude_home, claude_project_memory
from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from ..local.files import read_text
from ..local.project import MEMORY_DIR

CHARS_PER_TOKEN = 4  # an estimate, not a tokenizer count
TYPICAL_RECALL_DAYS = 30  # the window of evaluation.typical_recall
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build"}
STANDING = {"AGENTS.md", "CLAUDE.md", "AGENTS.local.md", "CLAUDE.local.md"}
LONG_LINE = 200


def tokens_estimate(chars: int | float) -> int:
    return round(chars / CHARS_PER_TOKEN)


@dataclass
class CostRow:
    kind: str
    files: int
    chars: int
    long_lines: int  # lines over LONG_LINE characters
    paths: list[str]
    tokens_estimate: int = field(init=False)

    def __post_init__(self) -> None:
        self.tokens_estimate = tokens_estimate(self.chars)


@dataclass
class TypicalRecall:
    calls: int  # recalls logged in the window
    median_chars: float | None  # None when none was logged
    days: int = TYPICAL_RECALL_DAYS
    error: str | None = None  # why the database could not say, if it could not
    tokens_estimate: int | None = field(init=False)

    def __post_init__(self) -> None:
        self.tokens_estimate = None if self.median_chars is None else tokens_estimate(self.median_chars)


@dataclass
class ContextCost:
    root: str
    rows: list[CostRow]
    recall: TypicalRecall
    chars_per_token: int = CHARS_PER_TOKEN


def _walk_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        if any(p in _SKIP_DIRS for p in rel[:-1]) or not path.is_file():
            continue
        yield path


def context_cost(root: Path) -> list[CostRow]:
    """The files under `root`, and the harness's own memory index of this project kept in the
    user's home (Claude Code's projects/<project>/memory/MEMORY.md, archive/homes.py)."""
    if not root.is_dir():
        raise InputError(f"{root} is not a folder")
    groups: dict[str, list[Path]] = {"standing instructions": [], "harness memory index": [], "bot memory files": []}
    memory_dir = root / MEMORY_DIR
    for path in _walk_files(root):
        if path.name in STANDING:
            groups["standing instructions"].append(path)
        elif path.name == "MEMORY.md":
            groups["harness memory index"].append(path)
        elif path.suffix == ".md" and memory_dir in path.parents:
            groups["bot memory files"].append(path)
    # Read from the harness's projects folder without following a symlink below it; a
    # symlink or special file there is skipped as one under the root is (local/files.py).
    own = claude_project_memory(root)
    home = claude_home() / "projects"
    if own is not None and os.path.lexists(own) and root.resolve() not in own.resolve().parents:
        groups["harness memory index"].append(own)
    rows = []
    for kind, paths in groups.items():
        chars = long_lines = 0
        read = []
        for path in paths:
            base = home if path == own else root
            try:
                text = read_text(path, root=base)  # the one safe read: regular files under base only
            except InputError:
                continue
            read.append(str(path) if path == own else str(path.relative_to(root)))
            chars += len(text)
            long_lines += sum(1 for line in text.splitlines() if len(line) > LONG_LINE)
        rows.append(CostRow(kind, len(read), chars, long_lines, read))
    return rows


@owns_transaction
def typical_recall(conn: Conn) -> TypicalRecall:
    with translated(conn):
        row = first(conn, sql("evaluation.typical_recall"))
    median = row["median_chars"]
    return TypicalRecall(row["calls"], None if median is None else float(median))
