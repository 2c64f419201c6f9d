"""Import sessions into the archive: idempotent, and reading only what is new since last time."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import psycopg
from psycopg.types.json import Jsonb

from ..db import Conn, first, locks
from ..db.errors import first_line, translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import NotFound, OrgError
from ..limits import LOCK_WAIT
from ..local.files import FileRefused, open_file
from ..text import pg_text, shown
from . import claude, codex, hermes
from .jsonl import batches
from .records import BadRecord, Message, Parsed, SessionInfo, check, load_line
from .verdicts import judge_outdated, judge_sessions

# A harness's transcript file, as each parser module defines it.
Transcript = claude.TranscriptFile | codex.TranscriptFile

ImportProgress = Callable[[str, int, int], None]
# What a parser raises on a record of a shape it did not expect: the line is skipped.
_SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, RecursionError)


@dataclass
class Summary:
    """What one harness's import did."""

    harness: str
    sources: int = 0  # files (or stores) found
    read: int = 0  # of them, those with something new
    sessions: int = 0  # sessions added
    messages: int = 0  # messages added
    malformed: int = 0  # lines skipped as unreadable (a cut-short last line is retried next time)
    skipped: dict[str, int] = field(default_factory=dict)  # the malformed lines (or rows) by reason
    failed: list[str] = field(default_factory=list)  # "path: reason" for each file that could not be imported

    def fail(self, path: Path, reason: str) -> None:
        self.failed.append(f"{shown(str(path))}: {pg_text(reason)}")

    def skip(self, reason: str, n: int = 1) -> None:
        self.malformed += n
        self.skipped[reason] = self.skipped.get(reason, 0) + n


@owns_transaction
def import_sessions(
    conn: Conn,
    stores: dict[str, Path],
    progress: ImportProgress | None = None,
    lock_wait: float = LOCK_WAIT,
) -> list[Summary]:
    """Import each harness's store (a folder of transcripts, or Hermes' state.db).

    Runs are serialised by an advisory lock; every file commits with its read position,
    so an interrupted run resumes where it stopped.
    """
    for harness, path in stores.items():
        if not path.exists():
            raise NotFound(f"{harness}: {path} does not exist")
    summaries = []
    with translated(conn), locks.held(conn, locks.ARCHIVE, "archive imports", lock_wait):
        for harness, path in stores.items():
            summary = Summary(harness)
            if harness == "hermes":
                store = hermes.store_path(path)
                summary.sources = 1
                root = path if path.is_dir() else None  # a named state.db is the caller's choice
                _isolated(conn, store, summary, partial(_import_hermes, root=root), store)
                if progress:
                    progress(harness, 1, 1)
            else:
                module = claude if harness == "claude-code" else codex
                folder = path.is_dir()
                found = module.files(path) if folder else [path]
                work = partial(_import_file, root=path if folder else None)
                summary.sources = len(found)
                for n, file in enumerate(found, start=1):
                    _isolated(conn, file, summary, work, module.TranscriptFile(file))
                    if progress:
                        progress(harness, n, len(found))
            summaries.append(summary)
        if any(s.sessions or s.messages for s in summaries):
            conn.execute(sql("archive.analyze"))
            conn.commit()
        # Each file's sessions were judged as they were written (_write); this judges those
        # imported before verdicts were stored, or judged by an older rule.
        judge_outdated(conn)
        conn.commit()
    return summaries


def _isolated(conn: Conn, path: Path, summary: Summary, work: Callable[..., None], target: object) -> None:
    """Import one file; if it fails, roll back its unfinished part, name it, and go on.

    Only a lost connection stops the whole run: every later file would fail the same way.
    """
    try:
        work(conn, target, summary)
    except FileNotFoundError:
        conn.rollback()  # removed since it was listed: nothing to import
    except FileRefused as exc:
        conn.rollback()
        if path.is_symlink() or path.exists():  # else removed since it was listed
            summary.fail(path, exc.reason)
    except OSError as exc:
        conn.rollback()
        summary.fail(path, f"cannot read ({exc.strerror or exc})")
    except OrgError as exc:
        conn.rollback()
        summary.fail(path, f"{exc}")
    except psycopg.Error as exc:
        if conn.broken:
            raise
        conn.rollback()
        summary.fail(path, f"the database refused it ({first_line(exc)})")
    except (ValueError, TypeError, LookupError, AttributeError, RecursionError, sqlite3.Error) as exc:
        # A shape no parser foresaw: that file is named, the others go on.
        if conn.broken:
            raise
        conn.rollback()
        summary.fail(path, f"{type(exc).__name__}: {str(exc)[:200]}")


def _import_file(conn: Conn, transcript: Transcript, summary: Summary, root: Path | None) -> None:
    path: Path = transcript.path
    # the one safe read (files.py): a regular file, reached from the folder given without a symlink
    with open_file(path, root=root) as (fh, stat):
        _import_open_file(conn, transcript, summary, fh, stat)


def _import_open_file(conn: Conn, transcript: Transcript, summary: Summary, fh: BinaryIO, stat: os.stat_result) -> None:
    path: Path = transcript.path
    key = {"harness": transcript.harness, "path": str(path.resolve())}
    saved = conn.execute(sql("archive.source_get"), key).fetchone()
    offset, line_count = (saved["byte_offset"], saved["line_count"]) if saved else (0, 0)
    if stat.st_size < offset:
        # Replaced or truncated: read it again; stable message keys keep out duplicates.
        offset, line_count = 0, 0
    if stat.st_size == offset:
        return
    summary.read += 1
    for batch in batches(fh, offset, stat.st_size):
        parsed = Parsed()
        for line in batch.lines:
            line_count += 1
            _parse_line(transcript, line, line_count, parsed, summary)
        if batch.tail.strip():
            # An unterminated line: import it if it is already whole, else count it as
            # malformed; either way the read position stays before it, so it is read again.
            _parse_line(transcript, batch.tail, line_count + 1, parsed, summary)
        _write(conn, transcript.harness, parsed, summary)
        conn.execute(
            sql("archive.source_save"),
            {
                **key,
                "size": stat.st_size,
                "byte_offset": batch.end,
                "line_count": line_count,
                "last_row_id": None,
                "mtime": datetime.fromtimestamp(stat.st_mtime, tz=UTC),
            },
        )
        conn.commit()


def parse_line(transcript: Transcript, line: bytes, line_no: int) -> Parsed:
    """One transcript line as sessions and messages whose fields the database accepts;
    BadRecord (an OrgError) says why a line cannot be imported."""
    record = load_line(line)
    try:
        return check(transcript.parse(record, line_no))
    except BadRecord:
        raise
    except _SHAPE_ERRORS as exc:
        raise BadRecord(f"unexpected shape ({type(exc).__name__})") from None


def _parse_line(transcript: Transcript, line: bytes, line_no: int, parsed: Parsed, summary: Summary) -> None:
    if not line.strip():
        return
    try:
        result = parse_line(transcript, line, line_no)
    except BadRecord as exc:
        summary.skip(str(exc))
        return
    parsed.sessions += result.sessions
    parsed.messages += result.messages


def _import_hermes(conn: Conn, path: Path, summary: Summary, root: Path | None) -> None:
    # the one safe read: only a regular file reached without a symlink (files.py), so a FIFO or a
    # device cannot hang the read; it stays open while SQLite opens it by name.
    with open_file(path, root=root) as (_, stat):
        _import_hermes_store(conn, path, summary, stat)


def _import_hermes_store(conn: Conn, path: Path, summary: Summary, stat: os.stat_result) -> None:
    key = {"harness": hermes.HARNESS, "path": str(path.resolve())}
    saved = conn.execute(sql("archive.source_get"), key).fetchone()
    after = (saved["last_row_id"] or 0) if saved else 0
    store = hermes.read(path, after)
    if store.last_row_id is not None and store.last_row_id < after:
        after = 0  # a different store now lives at this path
        store = hermes.read(path, 0)
    for reason, n in store.skipped.items():
        summary.skip(reason, n)
    if store.messages or not saved:
        summary.read = 1
    _write(conn, hermes.HARNESS, Parsed(store.sessions, store.messages), summary)
    conn.execute(
        sql("archive.source_save"),
        {
            **key,
            "size": stat.st_size,
            "byte_offset": 0,
            "line_count": 0,
            "last_row_id": max(after, store.last_row_id or 0),
            "mtime": datetime.fromtimestamp(stat.st_mtime, tz=UTC),
        },
    )
    conn.commit()


def _write(conn: Conn, harness: str, parsed: Parsed, summary: Summary) -> None:
    infos: dict[str, SessionInfo] = {}
    for info in parsed.sessions:
        if info.external_id in infos:
            infos[info.external_id].merge(info)
        else:
            infos[info.external_id] = SessionInfo(**vars(info))
    for message in parsed.messages:
        infos.setdefault(message.session, SessionInfo(message.session))
    for info in list(infos.values()):
        # A parent not seen yet (its own file comes later, or is gone) started no later
        # than its child; that keeps it inside usage windows until its own lines arrive.
        if info.parent and info.parent not in infos:
            infos[info.parent] = SessionInfo(info.parent, cwd=info.cwd, started_at=info.started_at)
    ids: dict[str, int] = {}
    visiting: set[str] = set()

    def session_id(external_id: str) -> int:
        if external_id in ids:
            return ids[external_id]
        info = infos[external_id]
        visiting.add(external_id)
        # A store that names its sessions as each other's parents gets no link at the loop.
        parent = session_id(info.parent) if info.parent and info.parent not in visiting else None
        row = first(
            conn,
            sql("archive.upsert_session"),
            {
                "harness": harness,
                "external_id": external_id,
                "parent_session": parent,
                "project": _project(info.cwd),
                "cwd": info.cwd,
                "git_branch": info.git_branch,
                "model": info.model,
                "title": info.title,
                "started_at": info.started_at,
                "ended_at": info.ended_at,
            },
        )
        summary.sessions += row["inserted"]
        ids[external_id] = row["id"]
        visiting.discard(external_id)
        return int(row["id"])

    for external_id in infos:
        session_id(external_id)
    if parsed.messages:
        with conn.cursor() as cur:
            cur.executemany(sql("archive.insert_message"), [_row(m, ids[m.session]) for m in parsed.messages])
            summary.messages += max(cur.rowcount, 0)
    # The hits-later-quoted verdicts, stored in the same transaction as the messages they
    # are read from, so they always agree with the archive.
    judge_sessions(conn, list(ids.values()))


def _project(cwd: str | None) -> str | None:
    # The last folder of the working directory, for POSIX and Windows paths alike.
    if not cwd:
        return None
    return re.split(r"[/\\]", cwd.rstrip("/\\"))[-1] or cwd


def _row(m: Message, session_id: int) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "source_key": m.source_key,
        "position": m.position,
        "part": m.part,
        "kind": m.kind,
        "occurred_at": m.occurred_at,
        "text": m.text,
        "tool_name": m.tool_name,
        "tool_call_id": m.tool_call_id,
        "command": m.command,
        "raw": Jsonb(m.raw),
    }
