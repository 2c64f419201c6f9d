"""The [memory] arm: lines of the bots' markdown notes under .agents/org/memory/."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .terms import needed, terms, word_start_regex

MEMORY_DIR = Path(".agents") / "org" / "memory"


@dataclass
class MemoryHit:
    file: str  # relative to the root
    line: int
    text: str
    matched: int
    terms: int


def project_root(explicit: str | None = None, cwd: Path | None = None) -> Path:
    """ORG_ROOT, else the enclosing git work tree, else the current folder."""
    if explicit:
        return Path(explicit).expanduser()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def recall_memory(root: Path, query: str, *, limit: int) -> list[MemoryHit]:
    """Lines where at least half the terms start a word; best first, at most `limit`."""
    words = terms(query)
    folder = root / MEMORY_DIR
    if not words or limit <= 0 or not folder.is_dir():
        return []
    patterns = word_start_regex(words)
    need = needed(len(words))
    found = []
    for path in sorted(folder.rglob("*.md")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        try:
            lines = path.read_text("utf-8", errors="replace").splitlines()
        except OSError:
            continue
        rel = os.path.relpath(path, root)
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if len(text) < 3:
                continue
            matched = sum(1 for p in patterns if p.search(text))
            if matched >= need:
                found.append(MemoryHit(rel, number, text, matched, len(words)))
    found.sort(key=lambda h: (-h.matched, h.file, h.line))
    return found[:limit]
