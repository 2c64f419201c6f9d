"""The vault: its notes by path (filtered by words in the path or title, or a tag), a page
at a time, and one note as indexed (its sections, links, tags and the notes linking to it),
named by its vault path or id and read from the database only (vault/notes.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from ....vault import notes as notes_lib
from ...render import plain
from ..state import web_of
from ..view import render

router = APIRouter()

PAGE_SIZE = 50  # notes per page
Filter = Annotated[str | None, Query(max_length=200, description="words in the note's path or title")]
Tag = Annotated[str | None, Query(max_length=200, description="only notes with this tag")]
Page = Annotated[int, Query(ge=1, le=100_000)]
NoteName = Annotated[
    str, Path(min_length=1, max_length=notes_lib.MAX_NAME, description="the note's vault path, or its id")
]


def _list(request: Request, q: str | None, tag: str | None, private: bool, page: int) -> tuple[list[Any], bool]:
    found = web_of(request).call(
        lambda conn: notes_lib.list_notes(
            conn,
            text=q or None,
            tag=tag or None,
            private=private,
            limit=PAGE_SIZE + 1,
            offset=(page - 1) * PAGE_SIZE,
        )
    )
    return found[:PAGE_SIZE], len(found) > PAGE_SIZE


def _note(request: Request, name: str, private: bool) -> notes_lib.Note:
    return web_of(request).call(lambda conn: notes_lib.show_note(conn, name, private=private))


@router.get("/vault", response_class=HTMLResponse, include_in_schema=False)
def vault_page(request: Request, q: Filter = None, tag: Tag = None, private: bool = False, page: Page = 1) -> str:
    found, more = _list(request, q, tag, private, page)
    return render("vault.html", request, notes=found, more=more, page=page, q=q or "", tag=tag or "", private=private)


@router.get("/vault/{name:path}", response_class=HTMLResponse, include_in_schema=False)
def note_page(request: Request, name: NoteName, private: bool = False) -> str:
    return render("note.html", request, n=_note(request, name, private), private=private)


class NotePage(BaseModel):
    notes: list[notes_lib.NoteRow]
    page: int
    more: bool


Refusals: dict[int | str, dict[str, Any]] = {
    400: {"description": "refused input (one line in `error`)"},
    403: {"description": "`private` asked for by an agent that is no owner, or a private note without it"},
}


@router.get("/api/vault", response_model=NotePage, responses=Refusals, tags=["vault"])
def vault_api(request: Request, q: Filter = None, tag: Tag = None, private: bool = False, page: Page = 1) -> Any:
    """The vault's notes by path, 50 a page, with their tags; private notes only with
    `private`, for owners."""
    found, more = _list(request, q, tag, private, page)
    return {"notes": plain(found), "page": page, "more": more}


@router.get(
    "/api/vault/{name:path}",
    response_model=notes_lib.Note,
    responses={**Refusals, 404: {"description": "no such note"}},
    tags=["vault"],
)
def note_api(request: Request, name: NoteName, private: bool = False) -> Any:
    """One note as indexed, by its vault path or id: its sections (heading and text, in
    order), links, tags and the notes linking to it."""
    return plain(_note(request, name, private))
