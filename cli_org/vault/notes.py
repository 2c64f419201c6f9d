"""The vault's notes as indexed: a list (filtered by words in the path or title, or by a
tag) and one note's text, headings, links and tags, read from the database only.

A note is named by its path in the vault as the scan stored it, or by its id: the name is
only ever compared with stored paths, never joined to a folder or opened, so no path (say
`../../etc/passwd`) can reach the file system. Private notes (org_vault_private, migration
0008) follow the search rule: row-level security hides them from members; an owner sees
them only when asking for them (`private`), as with `cli-org search --private`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied, InputError, NotFound

MAX_NAME = 1000  # characters of a note's path or of a filter: longer is no path the scan stores
NOTE_CHUNKS = 400  # sections shown of one note; a longer note is cut with a note on the page
NOTE_LINKS = 300  # links, and notes linking here, shown of one note


@dataclass
class NoteRow:
    id: int
    path: str
    title: str
    size: int
    private: bool
    scanned_at: datetime
    tags: list[str]


@dataclass
class Section:
    heading: str
    content: str


@dataclass
class Link:
    target: str
    target_path: str | None  # the note it resolves to, when it exists in the vault
    heading: str | None
    alias: str | None
    kind: str


@dataclass
class Note:
    id: int
    path: str
    title: str
    size: int
    private: bool
    scanned_at: datetime
    frontmatter: dict[str, Any]
    tags: list[str]
    sections: list[Section]  # the indexed chunks in order: heading and text
    sections_total: int
    links: list[Link] = field(default_factory=list)
    linked_from: list[str] = field(default_factory=list)  # paths of notes linking here


def _checked(text: str | None, what: str) -> str | None:
    if text is None:
        return None
    if len(text) > MAX_NAME:
        raise InputError(f"the {what} is {len(text)} characters; the limit is {MAX_NAME}")
    if "\x00" in text:
        raise InputError(f"the {what} holds a NUL character")
    return text


def _may_see_private(conn: Conn, private: bool) -> None:
    if private and not first(conn, sql("search.may_see_private"))["yes"]:
        raise AccessDenied("private notes are for owners; list the vault without private")


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@owns_transaction
def list_notes(
    conn: Conn,
    *,
    text: str | None = None,
    tag: str | None = None,
    private: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> list[NoteRow]:
    """The vault's notes by path, a page of `limit` from `offset`: those whose path or title
    holds `text` (any case), or that carry `tag`."""
    if not 1 <= limit <= 1000:
        raise InputError(f"limit must be between 1 and 1000, not {limit}")
    text, tag = _checked(text, "filter"), _checked(tag, "tag")
    params = {
        "like": _like(text) if text else None,
        "tag": tag.removeprefix("#") if tag else None,
        "private": private,
        "limit": limit,
        "offset": max(offset, 0),
    }
    with translated(conn):
        _may_see_private(conn, private)
        return [NoteRow(**r) for r in conn.execute(sql("notes.list"), params)]


@owns_transaction
def show_note(conn: Conn, name: str, *, private: bool = False) -> Note:
    """One note as indexed, by its vault path or its id: NotFound when no note the caller may
    see has that path or id."""
    name = _checked(name, "note's path") or ""
    note_id = int(name) if name.isascii() and name.isdigit() and len(name) < 19 else None
    with translated(conn):
        _may_see_private(conn, private)
        row = conn.execute(sql("notes.get"), {"path": name.removeprefix("/"), "id": note_id}).fetchone()
        if row is None:
            raise NotFound(f"no note {name[:200]!r} in the vault index")
        if row["private"] and not private:
            raise AccessDenied(f"note {row['path']!r} is private: open it with private (owners only)")
        chunks = conn.execute(sql("notes.sections"), {"id": row["id"], "limit": NOTE_CHUNKS}).fetchall()
        total = first(conn, sql("notes.section_count"), {"id": row["id"]})["n"]
        links = [Link(**r) for r in conn.execute(sql("notes.links"), {"id": row["id"], "limit": NOTE_LINKS})]
        back = [
            r["path"]
            for r in conn.execute(
                sql("notes.linked_from"), {"path": row["path"], "private": private, "limit": NOTE_LINKS}
            )
        ]
    return Note(
        **row,
        sections=[Section(c["heading"], c["content"]) for c in chunks],
        sections_total=total,
        links=links,
        linked_from=back,
    )
