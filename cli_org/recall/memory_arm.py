"""The [memory] arm: lines of the bots' markdown notes under .agents/org/memory/, and the
calling agent's own notebook entries (both stores), under the same term rules.

A memory file is part of the checkout, so anyone who can push to the repository writes it,
and nothing checked it on the way in: its lines are untrusted. A line that reads as an
instruction to the agent (the write scan's injection check: its phrases and the injection
classifier, checks/write.py) is left out of the answer, and counted, so that recall can say
so and where (docs/security.md, "Memory-file lines"). Notebook entries passed the write
checks when they were written (client and database), so they are not scanned again."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..db import Conn
from ..db.session import owns_transaction
from ..errors import InputError
from ..local.files import read_text
from ..local.project import MEMORY_DIR
from .inputs import read_inputs
from .terms import needed, terms, word_start_regex


@dataclass
class MemoryHit:
    file: str  # relative to the root
    line: int
    text: str
    matched: int
    terms: int
    notebook: bool = False  # an entry of the caller's notebook: `file` is notebook:<store>, `line` its id


def recall_memory(root: Path, query: str, *, limit: int, left_out: list[MemoryHit] | None = None) -> list[MemoryHit]:
    """Lines where at least half the terms start a word; best first, at most `limit`. A line
    that reads as an instruction to the agent is left out (and added to `left_out`)."""
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
            # the one safe read: only regular files reached from the root without a symlink
            lines = read_text(path, root=root).splitlines()
        except InputError:
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
    return _trusted(found, limit, left_out)


def _trusted(found: list[MemoryHit], limit: int, left_out: list[MemoryHit] | None) -> list[MemoryHit]:
    """The first `limit` lines that carry no injection, in order. Only the lines that would be
    shown are scanned (and those that take a refused one's place), not every line read."""
    if not found:
        return []
    from ..checks.write import injection_finding

    kept: list[MemoryHit] = []
    for hit in found:
        if len(kept) >= limit:
            break
        if injection_finding(hit.text) is not None:
            if left_out is not None:
                left_out.append(hit)
            continue
        kept.append(hit)
    return kept


NOTEBOOK_PREFIX = "notebook:"


@owns_transaction
def recall_notebook(
    conn: Conn, query: str, *, limit: int, entries: list[dict[str, Any]] | None = None
) -> list[MemoryHit]:
    """The caller's own live notebook entries where at least half the terms start a word
    (the rule of the memory-file lines); best first, at most `limit`. No agent: none.
    `entries`: those entries as `recall.inputs` read them (else read here)."""
    words = terms(query)
    if not words or limit <= 0:
        return []
    patterns = word_start_regex(words)
    need = needed(len(words))
    found = []
    if entries is None:
        entries = read_inputs(conn, notebook=True)["notebook"]
    for row in entries:
        text = row["body"].strip()
        matched = sum(1 for p in patterns if p.search(text))
        if matched >= need:
            found.append(MemoryHit(NOTEBOOK_PREFIX + row["store"], row["id"], text, matched, len(words), True))
    found.sort(key=lambda h: (-h.matched, h.file, h.line))
    return found[:limit]
