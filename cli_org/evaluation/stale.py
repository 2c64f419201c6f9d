"""Stale memory: cited paths that are gone, fact sources gone or changed since.

A fact's source is judged changed by its content when `remember` stored a hash of it
(migration 0042, the rule in store/sources.py): the cited file, or its cited lines, hash
otherwise now, whatever the file's time (a checkout resets times). A fact written without a
hash (before the migration, or citing a file that was missing, refused or too large then) is
judged by time as before: changed when the file's modification time is after the fact's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..checks.write import source_form
from ..db import Conn
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from ..local.files import FileRefused, lstat_under, read_text
from ..local.project import MEMORY_DIR
from ..store.sources import changed, short

_BACKTICK = re.compile(r"`([^`\s]{2,200})`")
# What a cited path is. A backticked token made of path characters counts when it
#  - ends in a file extension holding a letter (`notes.md`, `src/app.py`; not a version such
#    as `20.11`) or in a slash (`dev/fixtures/`);
#  - is relative and has a slash between two names (`scripts/deploy`, `docker/app.Dockerfile`),
#    each name holding a letter: an extensionless name after a leading slash (`/healthz`,
#    `/v2/jobs`) is a URL route, and `24/7` is prose;
#  - is, or ends in, a build file's conventional name (`Dockerfile`, `app.Dockerfile`, `Makefile`).
# A bare word (`deploy`, `flaky-watch`) never counts: with no slash, extension or known name,
# it is far more often a command, job or flag than a file.
_NAME = r"[\w@.+-]+"
_EXTENSION = re.compile(rf"^(?:\.{{0,2}}/)?{_NAME}(?:/{_NAME})*(?:\.(?=[0-9]*[A-Za-z])[A-Za-z0-9]{{1,8}}|/)$")
_RELATIVE = re.compile(rf"^{_NAME}(?:/{_NAME})+$")
_LETTER = re.compile(r"[^\W\d_]")
BUILD_FILES = ("Dockerfile", "Containerfile", "Makefile", "Justfile", "Procfile", "Jenkinsfile", "Gemfile", "Rakefile")
_BUILD_FILE = re.compile(rf"^(?:{_NAME}/)*(?:{_NAME}\.)?(?:{'|'.join(BUILD_FILES)})$")


@dataclass
class StaleItem:
    where: str  # file:line or fact #id
    cited: str
    problem: str


@dataclass
class StaleReport:
    root: str
    items: list[StaleItem]


def is_path(token: str) -> bool:
    """Whether a backticked token is a cited path (the rule above)."""
    if _BUILD_FILE.match(token):
        return True
    if _EXTENSION.match(token):
        return "/" in token or "." in token.strip(".")
    names = [p for p in token.split("/") if p not in (".", "..")]
    return bool(_RELATIVE.match(token)) and all(_LETTER.search(p) for p in names)


def cited_paths(text: str) -> list[str]:
    return [m for m in _BACKTICK.findall(text) if is_path(m)]


def _exists(root: Path, cited: str) -> bool:
    """Whether `cited` is under `root`; a path outside it or through a symlink is not judged
    (counted as there: nothing outside the checkout is looked at, local/files.py)."""
    clean = cited.split(":", 1)[0].rstrip("/")
    try:
        if lstat_under(root, clean) is not None:
            return True
    except FileRefused:
        return True
    # A bare file name may live anywhere in the tree.
    return "/" not in clean and any(True for _ in root.rglob(clean))


@owns_transaction
def stale(conn: Conn | None, root: Path) -> StaleReport:
    if not root.is_dir():
        raise InputError(f"{root} is not a folder")
    items = []
    memory_dir = root / MEMORY_DIR
    for path in sorted(memory_dir.rglob("*.md")) if memory_dir.is_dir() else []:
        try:
            text = read_text(path, root=root)  # the memory arm's safe read: regular files under the root only
        except InputError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for cited in cited_paths(line):
                if not _exists(root, cited):
                    items.append(StaleItem(f"{path.relative_to(root)}:{number}", cited, "missing"))
    if conn is not None:
        with translated(conn):
            fact_rows = conn.execute(sql("evaluation.facts_for_stale")).fetchall()
        for row in fact_rows:
            where = f"fact #{row['id']}"
            for cited in cited_paths(row["claim"]):
                if not _exists(root, cited):
                    items.append(StaleItem(where, cited, "missing"))
            if source_form(row["source"]) == "path" and not row["source"].startswith(("~", "/")):
                try:
                    found = lstat_under(root, row["source"].split(":", 1)[0])
                except FileRefused:  # outside the checkout or through a symlink: not judged
                    continue
                if found is None:
                    items.append(StaleItem(where, row["source"], "source missing"))
                elif row["source_hash"] is not None:
                    change = changed(row["source"], row["source_hash"], [root])
                    if change is not None:
                        what = "cited lines" if ":" in row["source"] else "content"
                        problem = f"source {what} changed (hash {short(change.stored)} then, {short(change.now)} now)"
                        items.append(StaleItem(where, row["source"], problem))
                elif datetime.fromtimestamp(found.st_mtime, UTC) > row["created_at"]:
                    items.append(StaleItem(where, row["source"], "source changed after the fact was written"))
    return StaleReport(str(root), items)
