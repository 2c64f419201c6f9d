"""Full-text search over archived messages: newest matching message first, no model call."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError, NotFound
from ..limits import check_query
from ..recall.terms import positive_words
from .records import HARNESSES

MAX_LIMIT = 50


@dataclass
class MessageHit:
    harness: str
    session: str
    project: str | None
    occurred_at: datetime | None
    kind: str
    tool_name: str | None
    rank: float
    snippet: str


@owns_transaction
def search_messages(conn: Conn, query: str, *, limit: int = 10, harness: str | None = None) -> list[MessageHit]:
    """Messages matching every keyword (web-search syntax: "phrase", -word, or)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    if harness is not None and harness not in HARNESSES:
        raise InputError(f"harness {harness!r} is not one of {', '.join(HARNESSES)}")
    check_query(query)  # not blank, not too long
    if not positive_words(query):
        raise InputError("give at least one keyword that is not excluded with '-'")
    params = {"query": query, "limit": limit, "harness": harness}
    with translated(conn):
        if not first(conn, sql("archive.search_terms"), params)["terms"]:
            raise InputError(f"{query!r} has no searchable words (only stop words or punctuation)")
        rows = conn.execute(sql("archive.search_messages"), params).fetchall()
    return [MessageHit(**{**r, "snippet": re.sub(r"\s+", " ", r["snippet"]).strip()}) for r in rows]


@dataclass
class ToolCall:
    """A tool call with its result, matched by the harness's call id."""

    name: str
    call_id: str | None
    command: str | None  # the command line, for shell tools
    input: str | None  # the arguments as the transcript gives them
    result: str | None = None
    result_at: datetime | None = None


@dataclass
class Turn:
    """One message of a session; a tool call's result is folded into its call."""

    position: int
    part: int
    kind: str
    occurred_at: datetime | None
    text: str | None
    tool: ToolCall | None = None


@dataclass
class Session:
    harness: str
    external_id: str
    parent: str | None
    project: str | None
    cwd: str | None
    git_branch: str | None
    model: str | None
    title: str | None
    started_at: datetime | None
    ended_at: datetime | None
    messages: list[Turn]
    tool_calls: int  # how many of the messages are tool calls
    total: int = 0  # archived messages (rows) in the whole session
    first: int = 0  # the first row shown (a page: see show_session's `limit`)
    shown: int = 0  # archived rows on this page (a tool call and its result are one message)
    more: bool = False  # rows follow the ones shown
    cut: int = 0  # messages whose text was cut to `text_chars`


@owns_transaction
def show_session(
    conn: Conn,
    external_id: str,
    *,
    harness: str | None = None,
    offset: int = 0,
    limit: int | None = None,
    text_chars: int | None = None,
) -> Session:
    """One archived session whole: its messages in order, tool calls with their results.

    With `limit`: `limit` archived rows from `offset` (a page; a tool call's result is folded
    into its call when both are on the page), and with `text_chars` each text cut to that many
    characters, so that a page of a long session stays bounded (the web page)."""
    if harness is not None and harness not in HARNESSES:
        raise InputError(f"harness {harness!r} is not one of {', '.join(HARNESSES)}")
    if limit is not None and not 1 <= limit <= 1000:
        raise InputError(f"limit must be between 1 and 1000, not {limit}")
    if text_chars is not None and text_chars < 1:
        raise InputError(f"text_chars must be positive, not {text_chars}")
    if len(external_id) > 500 or "\x00" in external_id:
        raise InputError("a session id is at most 500 characters, without NUL")
    offset = max(offset, 0)
    with translated(conn):
        try:
            found = conn.execute(
                sql("archive.session_find"), {"external_id": external_id, "harness": harness}
            ).fetchall()
            if not found:
                raise NotFound(f"no archived session {external_id!r}; see `cli-org sessions search`")
            if len(found) > 1:
                raise InputError(
                    f"session {external_id!r} exists in {', '.join(r['harness'] for r in found)}; pass --harness"
                )
            row = found[0]
            params = {"id": row["id"], "offset": offset, "limit": limit, "chars": text_chars}
            rows = conn.execute(sql("archive.session_messages"), params).fetchall()
            total = first(conn, sql("archive.session_size"), {"id": row["id"]})["n"] if limit else len(rows)
        finally:
            conn.rollback()  # read-only: end the transaction the reads opened
    turns: list[Turn] = []
    calls: dict[str, ToolCall] = {}
    cut = sum(1 for m in rows if m["length"] is not None and m["text"] is not None and len(m["text"]) < m["length"])
    for m in rows:
        if m["kind"] == "tool" and m["tool_call_id"] in calls and calls[m["tool_call_id"]].result is None:
            call = calls[m["tool_call_id"]]
            call.result, call.result_at = m["text"], m["occurred_at"]
            continue
        turn = Turn(m["position"], m["part"], m["kind"], m["occurred_at"], m["text"])
        if m["tool_name"]:
            turn.tool = ToolCall(m["tool_name"], m["tool_call_id"], m["command"], m["text"])
            turn.text = None
            if m["tool_call_id"]:
                calls.setdefault(m["tool_call_id"], turn.tool)
        turns.append(turn)
    info = {k: v for k, v in row.items() if k != "id"}
    return Session(
        **info,
        messages=turns,
        tool_calls=sum(t.tool is not None for t in turns),
        total=total,
        first=offset,
        shown=len(rows),
        more=offset + len(rows) < total,
        cut=cut,
    )


@dataclass
class SessionRow:
    harness: str
    external_id: str
    project: str | None
    model: str | None
    title: str | None
    started_at: datetime | None
    ended_at: datetime | None
    messages: int


@owns_transaction
def list_sessions(
    conn: Conn, *, harness: str | None = None, project: str | None = None, limit: int = 50, offset: int = 0
) -> list[SessionRow]:
    """Archived sessions, newest first (by start), a page of `limit` from `offset`, each with
    how many messages it holds."""
    if harness is not None and harness not in HARNESSES:
        raise InputError(f"harness {harness!r} is not one of {', '.join(HARNESSES)}")
    if not 1 <= limit <= 1000:
        raise InputError(f"limit must be between 1 and 1000, not {limit}")
    if project is not None and (len(project) > 500 or "\x00" in project):
        raise InputError("a project is at most 500 characters, without NUL")
    params = {"harness": harness, "project": project, "limit": limit, "offset": max(offset, 0)}
    with translated(conn):
        return [SessionRow(**r) for r in conn.execute(sql("archive.session_list"), params)]
