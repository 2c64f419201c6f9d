"""Versions of memory files: a copy each time a file's content hash changes."""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..db import Conn
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError, NotFound
from ..local.files import FileRefused, read_file

# Editors' and harnesses' lock, temp and backup files are never memory.
_IGNORED = re.compile(r"^[.#]|~$|\.(lock|tmp|temp|bak|backup|swp|swo|orig|part|rej)$|\.(bak|tmp)\.", re.IGNORECASE)


@dataclass
class Captured:
    root: str  # the folder the file belongs to (locate())
    path: str  # relative to root: what `WHERE path = 'MEMORY.md'` matches
    source: str
    size: int
    version: int  # the file's latest version after this run
    new: bool  # this run stored that version


@dataclass
class CaptureResult:
    files: list[Captured]
    ignored: list[str]
    refused: list[str] = field(default_factory=list)  # "path: reason": not a regular file under its root


@dataclass
class Version:
    version: int
    size: int
    sha256: str
    modified_at: datetime | None
    captured_at: datetime
    added: int
    removed: int
    diff: str


@dataclass
class History:
    root: str
    path: str  # relative to root
    file: str  # root/path, the file as it is named on this machine
    source: str
    versions: list[Version]


def ignored(path: Path) -> bool:
    return bool(_IGNORED.search(path.name))


def source_of(path: Path) -> str:
    if "/.agents/org/memory/" in path.as_posix():
        return "org-memory"
    if path.parent.name == "memories":
        return "hermes-memory"
    if "memory" in path.parts[:-1] and "projects" in path.parts:
        return "claude-memory"
    return "file"


def locate(path: Path, source: str | None = None) -> tuple[str, str]:
    """The root a memory file belongs to and its path relative to that root.

    org-memory: the project root (the folder holding .agents/org/memory/, as recall reads
    it); claude-memory: the last folder named memory (projects/<project>/memory); hermes-
    memory: the memories folder; any other file: its own folder. Migration 0011 backfills
    older rows with the same rule."""
    source = source or source_of(path)
    text = path.as_posix()
    if source == "org-memory" and "/.agents/org/memory/" in text:
        root = text[: text.index("/.agents/org/memory/")] or "/"
    elif source == "claude-memory" and "memory" in path.parts[:-1]:
        last = len(path.parts) - 2 - path.parts[:-1][::-1].index("memory")
        root = Path(*path.parts[: last + 1]).as_posix()
    else:
        root = path.parent.as_posix()
    return root, text[len(root) :].lstrip("/")


def expand(paths: list[Path]) -> tuple[list[Path], list[str]]:
    """Files to capture (folders give their *.md files) and the names left out."""
    files: list[Path] = []
    skipped: list[str] = []
    for given in paths:
        if not given.exists():
            raise NotFound(f"{given} does not exist")
        found = sorted(given.rglob("*.md")) if given.is_dir() else [given]
        for path in found:
            if ignored(path) or any(part.startswith(".") for part in path.relative_to(given).parts[:-1]):
                skipped.append(str(path))
            elif path.is_symlink() or not path.is_dir():
                files.append(path.absolute())  # not resolved: a symlink is refused when read
    return list(dict.fromkeys(files)), skipped


@owns_transaction
def capture(conn: Conn, paths: list[Path]) -> CaptureResult:
    """Store a new version of each file whose content differs from its latest version."""
    files, skipped = expand(paths)
    captured, refused = [], []
    with translated(conn):
        for path in files:
            try:
                captured.append(_capture_one(conn, path))
            except FileRefused as exc:
                refused.append(str(exc))
            conn.commit()
    return CaptureResult(captured, skipped, refused)


def _capture_one(conn: Conn, path: Path) -> Captured:
    source = source_of(path)
    root, rel = locate(path, source)
    # the one safe read: only a regular file reached from its root (locate()) with no symlink
    # on the way, so a checkout's `.agents/org/memory/notes.md -> ~/.pgpass` is refused.
    read = read_file(path, root=Path(root))
    data, modified = read.data, datetime.fromtimestamp(read.stat.st_mtime, tz=UTC)
    root = os.path.realpath(root)  # the root may be a symlink; below it, nothing is one
    digest = hashlib.sha256(data).hexdigest()
    content = data.decode("utf-8", errors="replace").replace("\x00", "")
    params = {
        "source": source,
        "root": root,
        "path": rel,
        "abs_path": _joined(root, rel),
        "content": content,
        "sha256": digest,
        "size": len(data),
        "modified_at": modified,
    }
    for _ in range(3):
        latest = conn.execute(sql("archive.memory_latest"), params).fetchone()
        if latest and latest["sha256"] == digest:
            return Captured(root, rel, source, len(data), latest["version"], new=False)
        version = (latest["version"] if latest else 0) + 1
        row = conn.execute(sql("archive.memory_insert"), {**params, "version": version}).fetchone()
        if row:
            return Captured(root, rel, source, len(data), version, new=True)
        # Another run stored this version number first; look again.
    raise InputError(f"{path} is being captured by another run; try again")


@owns_transaction
def file_history(conn: Conn, name: str) -> History:
    """Every stored version of one file, each with its diff from the one before.

    `name` is a path (absolute, or to a file that exists here), a path relative to its root
    (`MEMORY.md`, `.agents/org/memory/bot.md`) or the end of root/path (`memories/USER.md`)."""
    given = Path(name).expanduser()
    try:
        exact = str(given.resolve()) if given.exists() else name
    except (OSError, ValueError):  # a name no file system takes (too long, NUL) is no path here, not a traceback
        exact = name
    params = {"exact": exact, "name": name.removeprefix("./"), "suffix": "/" + name.removeprefix("./").lstrip("/")}
    with translated(conn):
        found = [(r["root"], r["path"]) for r in conn.execute(sql("archive.memory_files"), params)]
        if not found:
            raise NotFound(f"no archived versions of {name}; run `cli-org archive memory` first")
        if len(found) > 1:
            same = [f for f in found if _joined(*f) == exact]
            if len(same) != 1:
                listed = ", ".join(_joined(*f) for f in found)
                raise InputError(f"{name} matches {len(found)} archived files: {listed}; give more of the path")
            found = same
        root, path = found[0]
        rows = conn.execute(sql("archive.memory_history"), {"root": root, "path": path}).fetchall()
    versions, before = [], ""
    for row in rows:
        diff = list(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                row["content"].splitlines(keepends=True),
                fromfile=f"v{row['version'] - 1}" if row["version"] > 1 else "(none)",
                tofile=f"v{row['version']}",
            )
        )
        changed = [line for line in diff if not line.startswith(("---", "+++", "@@"))]
        versions.append(
            Version(
                version=row["version"],
                size=row["size"],
                sha256=row["sha256"],
                modified_at=row["modified_at"],
                captured_at=row["captured_at"],
                added=sum(line.startswith("+") for line in changed),
                removed=sum(line.startswith("-") for line in changed),
                diff="".join(line if line.endswith("\n") else line + "\n" for line in diff),
            )
        )
        before = row["content"]
    return History(root, path, _joined(root, path), rows[0]["source"], versions)


def _joined(root: str, path: str) -> str:
    return f"{root.rstrip('/')}/{path}"
