"""Read the complete new lines of a JSONL file that may still be growing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CHUNK = 4 << 20


@dataclass
class Batch:
    lines: list[bytes]
    end: int  # byte offset just past the last line in `lines`
    tail: bytes = b""  # bytes after the last newline: a line still being written, or cut short


def batches(fh: BinaryIO, offset: int, size: int) -> Iterator[Batch]:
    """Lines of the open file between `offset` and `size` (the size seen at the start, so a
    writer appending meanwhile is read next time); the final batch carries any unterminated tail."""
    fh.seek(offset)
    pos, pending = offset, b""
    while pos < size:
        data = fh.read(min(CHUNK, size - pos))
        if not data:
            break  # the file shrank under us; the rest is read next time
        pos += len(data)
        pending += data
        cut = pending.rfind(b"\n")
        if cut < 0:
            continue
        offset += cut + 1
        lines = pending[:cut].split(b"\n")
        pending = pending[cut + 1 :]
        yield Batch(lines, offset)
    if pending:
        yield Batch([], offset, pending)


def files(root: Path) -> list[Path]:
    """Every JSON-lines file under root, in a stable order; symlinks too, so that reading
    them (files.py) names each one it refuses."""
    return sorted(p for p in root.rglob("*.jsonl") if p.is_symlink() or p.is_file())
