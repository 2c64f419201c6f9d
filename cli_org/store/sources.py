"""What a fact's cited file says: the hash `remember` stores, and the judgement of `eval stale`
and `tidy` that the source changed since (issue 36, item 5).

The rule, in one place. A source of the path form (checks/write.py `source_form`) that is
relative (not `/…` nor `~/…`) is looked for under the roots in order (store/tidy.py
`tidy_roots`: the project's root, then the vault); the first root holding it answers. Its
hash is the SHA-256 (lower-case hex) of the whole file, or, for `path:N` or `path:N-M`, of
lines N to M (1-based, inclusive, each with its line ending). The file is read as hostile
input (local/files.py): a regular file reached from the root without following a symlink,
at most MAX_HASHED_BYTES. Nothing hashable gives None, never an error: a missing, refused or
too large file, or cited lines past its end, leave the fact without a hash, and such a fact
is judged by the file's modification time as before.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ..checks.write import source_form
from ..local.files import FileRefused, lstat_under, read_file

# A file larger than this gets no hash (and a hashed one that grew past it counts as
# changed). The bound is the write's budget: a warm `remember` may cost at most 20 ms more
# than before issue 36, and hashing 1 MiB here costs ~1 ms (SHA-256 at ~1 GB/s) plus its
# read; the files a fact cites (code, docs, configs) are far smaller (the largest real note
# in the TIL vault is ~40 KB). A lockfile or a data dump is no source to judge by content.
MAX_HASHED_BYTES = 1 << 20

_LINES = re.compile(r"^(.*):(\d+)(?:-(\d+))?$")


@dataclass(frozen=True)
class Cited:
    path: str  # relative to a root
    first: int | None = None  # the cited lines, 1-based and inclusive; None: the whole file
    last: int | None = None


def cited(source: str | None) -> Cited | None:
    """The relative file a source names, with its lines; None for any other source."""
    if not source or source_form(source) != "path" or source.startswith(("/", "~")):
        return None
    m = _LINES.match(source)
    if m is None:
        return None if source.endswith("/") else Cited(source)  # a folder has no content to hash
    first, last = int(m.group(2)), int(m.group(3) or m.group(2))
    if m.group(1).endswith("/") or first < 1 or last < first:
        return None
    return Cited(m.group(1), first, last)


def _read(root: Path, path: str) -> bytes | None:
    """The file's bytes under `root` (the module's rule), or None."""
    try:
        st = lstat_under(root, path)
        if st is None:
            return None
        if st.st_uid != os.geteuid() and not st.st_mode & stat.S_IROTH:
            # Another user's private file, readable here only by privilege (root, a shared
            # group): its hash, which every member reads, would let them test guesses of it.
            return None
        return read_file(root / path, root=root, limit=MAX_HASHED_BYTES).data
    except FileRefused:
        return None


def digest(data: bytes, c: Cited) -> str | None:
    """The hash of what `c` cites in a file holding `data`; None when its lines are not there."""
    if c.first is not None and c.last is not None:
        # Lines end at "\n" (a "\r\n" line keeps its "\r"). Split only as far as the last
        # cited line: 1 MiB of short lines split whole took 7 ms, against 1 ms to hash it.
        pieces = data.split(b"\n", c.last)
        if len(pieces) < c.last or (len(pieces) == c.last and not pieces[-1]):
            return None  # line c.last is past the end (a final "" is no line)
        data = b"\n".join(pieces[c.first - 1 : c.last]) + (b"\n" if len(pieces) > c.last else b"")
    return hashlib.sha256(data).hexdigest()


def source_hash(source: str | None, roots: list[Path]) -> str | None:
    """The hash `remember` stores with a fact citing `source`, or None (the module's rule)."""
    c = cited(source)
    if c is None:
        return None
    for root in roots:
        data = _read(root, c.path)
        if data is not None:
            return digest(data, c)
    return None


def tidy_roots(root: str | None, vault: Path | str | None) -> list[Path]:
    """The folders sources are judged under, by `remember`, `tidy` and `eval stale`'s page
    alike: the project's root (ORG_ROOT, else the git top of the working folder) and the vault."""
    from ..local.project import project_root

    return [project_root(root)] + ([Path(vault)] if vault else [])


def source_hash_at(source: str | None, root: str | None, vault: Path | str | None) -> str | None:
    """source_hash under tidy_roots: what a face calls before `remember`, with its settings'
    ORG_ROOT and vault."""
    return source_hash(source, tidy_roots(root, vault))


@dataclass
class Change:
    """A cited file (or its cited lines) that no longer hashes as when the fact was written."""

    source: str
    stored: str
    now: str | None  # None: the lines are gone, or the file can no longer be read (too large)

    @property
    def evidence(self) -> dict[str, str | None]:
        return {"rule": "changed_source", "source": self.source, "stored": self.stored, "now": self.now}


def changed(source: str, stored: str | None, roots: list[Path]) -> Change | None:
    """The change in a fact's cited content since it was hashed, or None: unchanged, never
    hashed (`stored` None), or not judged (no relative path; missing, or reached through a
    symlink, under every root: a missing file is `missing_source`'s to report)."""
    c = cited(source)
    if stored is None or c is None:
        return None
    for root in roots:
        try:
            if lstat_under(root, c.path) is None:
                continue
        except FileRefused:
            return None
        data = _read(root, c.path)
        now = digest(data, c) if data is not None else None
        return None if now == stored else Change(source, stored, now)
    return None


def short(h: str | None) -> str:
    """A hash as a message shows it: its first 12 characters, or `none`."""
    return h[:12] if h else "none"
