"""Scan a vault folder into the index: incremental, batched, safe to interrupt."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import posixpath
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import psycopg

from ..db import Conn, first, locks
from ..db.errors import first_line, translated
from ..db.migrate import vectors_ready
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from ..limits import LOCK_WAIT
from ..local.files import MAX_FILE_BYTES, FileRefused, check_stat, read_file
from ..text import is_utf8, pg_text, shown
from .markdown import Note, parse_note

SUFFIXES = (".md", ".markdown")
SHOWN_PATHS = 5  # notes named when a scan makes notes public; the rest are counted
BATCH = 200  # files per transaction: an interrupted scan loses at most one batch

ScanProgress = Callable[[int, int, str], None]


@dataclass
class ScanSummary:
    root: str
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    made_public: int = 0  # once-private notes public since this scan's private prefixes
    made_public_paths: list[str] = field(default_factory=list)  # the first SHOWN_PATHS of them

    def warn(self, rel: str, message: str, *, skipped: bool = False) -> None:
        """A warning that names the file, printable whatever bytes its name holds."""
        self.warnings.append(f"{shown(rel)}: {pg_text(message)}")
        self.skipped += skipped

    def public_line(self) -> str:
        """What this scan made public, for a person to notice."""
        return f"made public: {_notes(self.made_public_paths, self.made_public)}"

    def line(self) -> str:
        return (
            f"added {self.added}, changed {self.changed}, removed {self.removed}, unchanged {self.unchanged}, "
            f"skipped {self.skipped} ({len(self.warnings)} warnings), {self.seconds:.2f} s"
        )


@dataclass
class _Pending:
    path: str
    file_hash: str
    size: int
    mtime: float
    note: Note
    is_new: bool


def markdown_files(root: Path, ignore: Iterable[str] = (), refused: list[str] | None = None) -> list[str]:
    """Vault-relative posix paths of markdown files, skipping hidden folders and ignores.

    A file or folder whose name is not UTF-8 cannot be stored; it is left out and, when
    `refused` is given, its path is added there.
    """
    patterns = [p for p in ignore if p]
    found = []
    for folder, dirs, files in os.walk(root):
        rel_dir = Path(folder).relative_to(root).as_posix()
        keep = []
        for d in sorted(dirs):
            if d.startswith(".") or _ignored(_join(rel_dir, d), patterns):
                continue
            if not is_utf8(d):
                if refused is not None:
                    refused.append(_join(rel_dir, d))
                continue
            keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            rel = _join(rel_dir, name)
            if name.lower().endswith(SUFFIXES) and not name.startswith(".") and not _ignored(rel, patterns):
                if is_utf8(name):
                    found.append(rel)
                elif refused is not None:
                    refused.append(rel)
    return sorted(found)


class _Skip(Exception):
    """A file the scan will not read; the message is the warning."""


def _regular_file(root: Path, rel: str) -> tuple[Path, os.stat_result]:
    """The note's path (a symlink within the vault resolved) and its stat, for the scan's
    unchanged-file check; reading it (files.py) is the check that counts."""
    path = root / rel
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        path = Path(os.path.realpath(path))
        if not path.is_relative_to(root):
            raise _Skip("a symlink to outside the vault; not followed")
        st = os.stat(path)
    check_stat(path, st)
    if st.st_size > MAX_FILE_BYTES:
        raise _Skip(f"larger than {MAX_FILE_BYTES >> 20} MiB; skipped")
    return path, st


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def _ignored(rel: str, patterns: list[str]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) or rel.startswith(p.rstrip("/") + "/") for p in patterns
    )


@owns_transaction
def scan(
    conn: Conn,
    root: Path,
    *,
    ignore: Iterable[str] = (),
    private: Iterable[str] = (),
    replace: bool = False,
    make_public: bool = False,
    progress: ScanProgress | None = None,
    lock_wait: float = LOCK_WAIT,
) -> ScanSummary:
    """Bring the index in line with the folder; unchanged files cost a stat call.

    `private` holds path prefixes (ORG_RECALL_EXCLUDE) that join the built-in private ones
    (the rule is org_vault_private in migration 0008): recall and search never show those
    notes and members cannot read them. A scan whose prefixes would make a once-private
    note public is refused, nothing changed, unless `make_public`; the summary names them."""
    started = time.perf_counter()
    try:
        root = root.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "a symlink loop"
        raise InputError(f"vault folder {shown(str(root))} cannot be resolved ({why})") from None
    if not root.is_dir():
        raise InputError(f"vault folder {root} does not exist")
    summary = ScanSummary(str(root))
    with translated(conn), locks.held(conn, locks.SCAN, "vault scans", lock_wait):
        _check_root(conn, root, replace)
        _set_private(conn, private, make_public, summary)
        _scan(conn, root, list(ignore), summary, progress)
    summary.seconds = time.perf_counter() - started
    return summary


def _set_private(conn: Conn, prefixes: Iterable[str], make_public: bool, summary: ScanSummary) -> None:
    """Store the scan's private prefixes and re-mark every note if they changed.

    A private note made public is the one change that cannot be taken back (members and
    recall see it at once), and the usual cause is a scan run without ORG_RECALL_EXCLUDE:
    so it is refused, unless `make_public`, and always named in the summary."""
    wanted = sorted({p.strip() for p in prefixes if p.strip()})
    have = [r["prefix"] for r in conn.execute(sql("vault.private_prefixes"))]
    public: list[str] = []
    if wanted != have:
        conn.execute(sql("vault.clear_private_prefixes"))
        for prefix in wanted:
            conn.execute(sql("vault.add_private_prefix"), {"prefix": prefix})
        public = sorted(r["path"] for r in conn.execute(sql("vault.mark_private")) if not r["private"])
        if public and not make_public:
            conn.rollback()
            dropped = ", ".join(shown(p) for p in have if p not in wanted)
            raise InputError(
                f"this scan would make {_notes(public[:SHOWN_PATHS], len(public))} public: ORG_RECALL_EXCLUDE no"
                f" longer holds {dropped}; set ORG_RECALL_EXCLUDE={shown(','.join(have))} as the last scan had it"
                " to keep them private, or pass --make-public; nothing was changed"
            )
    conn.commit()
    summary.made_public, summary.made_public_paths = len(public), public[:SHOWN_PATHS]


def _notes(paths: list[str], count: int) -> str:
    """'7 once-private note(s) (a.md, b.md, c.md, d.md, e.md and 2 more)'."""
    more = f" and {count - len(paths)} more" if count > len(paths) else ""
    return f"{count} once-private note(s) ({', '.join(shown(p) for p in paths)}{more})"


def _check_root(conn: Conn, root: Path, replace: bool) -> None:
    row = conn.execute(sql("vault.get_meta"), {"key": "root"}).fetchone()
    if row and row["value"] != str(root) and not replace:
        raise InputError(f"this database indexes the vault at {row['value']}; pass --replace to index {root} instead")
    conn.execute(sql("vault.set_meta"), {"key": "root", "value": str(root)})
    conn.commit()


def _scan(conn: Conn, root: Path, ignore: list[str], summary: ScanSummary, progress: ScanProgress | None) -> None:
    known = {r["path"]: r for r in conn.execute(sql("vault.known_files"))}
    refused: list[str] = []
    paths = markdown_files(root, ignore, refused)
    for rel in refused:
        summary.warn(rel, "name is not valid UTF-8; skipped", skipped=True)
    on_disk = set(paths)
    pending: list[_Pending] = []
    touched: list[dict[str, object]] = []
    for i, rel in enumerate(paths):
        if progress and i % 50 == 0:
            progress(i, len(paths), rel)
        row = known.get(rel)
        try:
            path, st = _regular_file(root, rel)
            if row and row["size"] == st.st_size and row["mtime"] == st.st_mtime:
                summary.unchanged += 1
                continue
            data = read_file(path, root=root).data  # the one safe read (files.py)
        except _Skip as exc:
            summary.warn(rel, str(exc), skipped=True)
            continue
        except FileRefused as exc:
            summary.warn(rel, exc.reason, skipped=True)
            continue
        except OSError as exc:
            summary.warn(rel, f"unreadable ({exc.strerror or exc})", skipped=True)
            continue
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        if row and row["hash"] == digest:
            summary.unchanged += 1
            touched.append({"id": row["id"], "size": st.st_size, "mtime": st.st_mtime})
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            summary.warn(rel, f"not valid UTF-8 (byte {exc.start}); skipped", skipped=True)
            continue
        try:
            note = parse_note(text.replace("\r\n", "\n"), rel)
        except (ValueError, TypeError, LookupError, RecursionError) as exc:  # one bad note never stops the scan
            summary.warn(rel, f"could not be parsed ({type(exc).__name__}); skipped", skipped=True)
            continue
        for warning in note.warnings:
            summary.warn(rel, warning)
        pending.append(_Pending(rel, digest, st.st_size, st.st_mtime, note, row is None))
    if progress:
        progress(len(paths), len(paths), "")

    resolver = _LinkResolver(on_disk)
    # Without pgvector the chunks have no embedding column yet (docs/operations.md, Team server).
    plain = "" if vectors_ready(conn) else "_plain"
    for start in range(0, len(pending), BATCH):
        batch = pending[start : start + BATCH]
        stored = []
        with conn.transaction():
            _no_wait_for_disk(conn)
            ids = []
            for item in batch:
                file_id = _store_isolated(conn, item, resolver, summary, plain)
                if file_id is not None:
                    ids.append(file_id)
                    stored.append(item)
            conn.execute(sql("vault.build_postings"), {"ids": ids})
            conn.execute(sql("vault.count_terms"), {"ids": ids})
        conn.commit()
        for item in stored:
            summary.chunks += len(item.note.chunks)
            if item.is_new:
                summary.added += 1
            else:
                summary.changed += 1
        if progress:
            progress(start + len(batch), len(pending), "indexing")
    gone = [row["id"] for path, row in known.items() if path not in on_disk]
    with conn.transaction():
        _no_wait_for_disk(conn)
        if touched:
            conn.cursor().executemany(sql("vault.touch_file"), touched)
        if gone:
            conn.execute(sql("vault.drop_postings"), {"ids": gone})  # keeps the term counts right
            conn.execute(sql("vault.remove_files"), {"ids": gone})
        conn.execute(sql("vault.forget_unused_terms"))
        conn.execute(sql("vault.refresh_stats"))
    conn.commit()
    summary.removed = len(gone)


def _no_wait_for_disk(conn: Conn) -> None:
    """This transaction's commit does not wait for the disk: an interrupted scan is redone,
    not lost. Local to the transaction, so the connection keeps its own setting."""
    conn.execute("SELECT set_config('synchronous_commit', 'off', true)")


def _store_isolated(
    conn: Conn, item: _Pending, resolver: _LinkResolver, summary: ScanSummary, plain: str
) -> int | None:
    """Store one note under a savepoint: a note the database refuses is named and left
    out, and the rest of its batch is kept. Only a lost connection stops the scan."""
    try:
        with conn.transaction():
            return _store(conn, item, resolver, plain)
    except (psycopg.Error, ValueError) as exc:
        if conn.broken:
            raise
        reason = first_line(exc) if isinstance(exc, psycopg.Error) else str(exc)
        summary.warn(item.path, f"the database refused it ({reason[:120]}); skipped", skipped=True)
        return None


def _store(conn: Conn, item: _Pending, resolver: _LinkResolver, plain: str = "") -> int:
    note = item.note
    file_id: int = first(
        conn,
        sql("vault.upsert_file"),
        {
            "path": item.path,
            "title": note.title,
            "hash": item.file_hash,
            "size": item.size,
            "mtime": item.mtime,
            "frontmatter": json.dumps(note.frontmatter, allow_nan=False),
        },
    )["id"]
    # Keep the vectors of chunks whose text did not change: re-embedding is the slow part.
    old = {r["hash"]: r for r in conn.execute(sql("vault.drop_chunks" + plain), {"id": file_id})}
    for name in ("vault.drop_links", "vault.drop_tags"):
        conn.execute(sql(name), {"id": file_id})
    conn.execute(sql("vault.drop_postings"), {"ids": [file_id]})
    rows = []
    for chunk in note.chunks:
        embed_text = chunk_embed_text(note.title, chunk.heading, chunk.content)
        digest = hashlib.blake2b(embed_text.encode(), digest_size=16).hexdigest()
        kept = old.get(digest) or {}
        index_text = chunk.content
        if chunk.ord == 0 and note.title not in chunk.content:
            index_text = f"{note.title}\n{chunk.content}"
        rows.append(
            {
                "file_id": file_id,
                "ord": chunk.ord,
                "heading": chunk.heading,
                "content": chunk.content,
                "hash": digest,
                "index_text": index_text,
                "embedding": kept.get("embedding"),
                "embed_model": kept.get("embed_model"),
            }
        )
    cur = conn.cursor()
    cur.executemany(sql("vault.insert_chunk" + plain), rows)
    cur.executemany(
        sql("vault.insert_link"),
        [
            {
                "file_id": file_id,
                "target": link.target,
                "target_path": resolver.resolve(item.path, link.target, link.kind),
                "heading": link.heading,
                "alias": link.alias,
                "kind": link.kind,
            }
            for link in note.links
        ],
    )
    cur.executemany(sql("vault.insert_tag"), [{"file_id": file_id, "tag": tag} for tag in note.tags])
    return file_id


def chunk_embed_text(title: str, heading: str, content: str) -> str:
    """What the embedder reads for a chunk: where it sits in the note, then its text."""
    context = heading if heading.startswith(title) else f"{title} > {heading}"
    first, _, rest = content.partition("\n")
    if first.startswith("#"):  # the heading line itself is already in the context
        content = rest
    return f"{context}\n{content}".strip()


class _LinkResolver:
    """Resolve wikilinks by note name or path, and markdown links relative to the linking note."""

    def __init__(self, paths: set[str]):
        self.paths = paths
        self.by_stem: dict[str, list[str]] = {}
        self.by_path: dict[str, str] = {}
        for p in sorted(paths):
            stem = p.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
            self.by_stem.setdefault(stem, []).append(p)
            self.by_path[p.rsplit(".", 1)[0].lower()] = p
            self.by_path[p.lower()] = p

    def resolve(self, source: str, target: str, kind: str) -> str | None:
        if not target:
            return source  # [[#heading]] points into the note itself
        if kind == "markdown":
            path = posixpath.normpath(posixpath.join(posixpath.dirname(source), unquote(target)))
            return path if path in self.paths else None
        key = target.strip().lower()
        if key in self.by_path:
            return self.by_path[key]
        candidates = self.by_stem.get(key.rsplit("/", 1)[-1], [])
        if len(candidates) == 1:
            return candidates[0]
        # Several notes share the name: prefer the one beside the linking note.
        near = [c for c in candidates if posixpath.dirname(c) == posixpath.dirname(source)]
        return near[0] if near else (candidates[0] if candidates else None)
