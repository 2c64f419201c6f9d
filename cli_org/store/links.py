"""Typed links between facts (issue 36, migration 0041): FROM depends-on / explains / confirms /
contradicts TO, each a row with its author and time, under row-level security (a member links
only as itself, between facts it may read: repeatable/links.sql). Unlinking marks the row
removed; nothing is deleted. A `confirms` link with no FROM fact is an agent's confirmation of
TO: it wrote the same fact in other words, and `remember` recorded that instead of a copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..checks.rules import LINK_KINDS, check_id
from ..checks.write import check_field
from ..db import Conn, first
from ..db.connect import current_agent
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError, NotFound
from .activity import say_via


@dataclass
class Link:
    id: int
    from_id: int | None  # None: the author's own confirmation of to_id
    kind: str
    to_id: int
    author: str
    reason: str | None  # why; for an author's confirmation, the words it wrote
    via: str | None
    created_at: datetime
    removed_by: str | None
    removed_at: datetime | None
    removed_reason: str | None


def check_kind(kind: str) -> str:
    if kind not in LINK_KINDS:
        raise InputError(f"link kind {kind!r} is not one of {', '.join(LINK_KINDS)}")
    return kind


def add_link(conn: Conn, from_id: int | None, kind: str, to_id: int, reason: str | None = None) -> Link:
    """Link as the connected agent, inside the caller's transaction; the live link already
    there is returned as it is. Both facts must be current and readable by the caller."""
    check_kind(kind)
    check_id(to_id)
    if from_id is None and kind != "confirms":
        raise InputError(f"a {kind} link needs the fact it comes from")
    if from_id is not None:
        check_id(from_id)
        if from_id == to_id:
            raise InputError(f"fact {to_id} cannot be linked to itself")
    if reason is not None:
        reason = reason.strip() or None
        check_field("reason", reason)
    ends = {r["id"]: r for r in conn.execute(sql("links.fact_state"), {"ids": [i for i in (from_id, to_id) if i]})}
    for end in (from_id, to_id):
        if end is None:
            continue
        if end not in ends:
            raise NotFound(f"no fact with id {end}")
        if not ends[end]["current"]:
            raise InputError(f"fact {end} is retired; link current facts (cli-org facts show {end})")
    params = {"from_id": from_id, "kind": kind, "to_id": to_id, "reason": reason}
    row = conn.execute(sql("links.insert"), params).fetchone() or first(conn, sql("links.live_between"), params)
    return Link(**first(conn, sql("links.get"), {"id": row["id"]}))


@owns_transaction
def link(conn: Conn, from_id: int, kind: str, to_id: int, *, reason: str | None = None, via: str | None = None) -> Link:
    """`cli-org link FROM KIND TO`: one link, as the connected agent."""
    with translated(conn):
        current_agent(conn)
        say_via(conn, via)
        made = add_link(conn, from_id, kind, to_id, reason)
        conn.commit()
    return made


@owns_transaction
def unlink(conn: Conn, link_id: int, why: str, *, via: str | None = None) -> Link:
    """Remove a link (dismiss a contradiction): its author, the author's team lead or an owner
    may (org_unlink). The row stays, with who removed it, when and why."""
    check_id(link_id, "link")
    if not why or not why.strip():
        raise InputError("say why the link is removed")
    check_field("reason", why.strip())
    with translated(conn):
        current_agent(conn)
        say_via(conn, via)
        first(conn, sql("links.unlink"), {"id": link_id, "why": why.strip()})
        removed = Link(**first(conn, sql("links.get"), {"id": link_id}))
        conn.commit()
    return removed


@owns_transaction
def links_of(conn: Conn, fact_ids: list[int]) -> dict[int, list[Link]]:
    """The live links touching each of these facts (at either end), oldest first; a fact with
    none is absent. Runs in the caller's transaction when it has one."""
    if not fact_ids:
        return {}
    out: dict[int, list[Link]] = {}
    with translated(conn):
        for row in conn.execute(sql("links.of_facts"), {"ids": list(fact_ids)}):
            found = Link(**row)
            for end in {found.from_id, found.to_id}:
                if end in fact_ids:
                    out.setdefault(end, []).append(found)
    return out


@dataclass
class ShownLink:
    """A live link as one fact's page shows it: which way it points from that fact ("out":
    the fact is FROM; "in": the fact is TO) and the fact at its other end (other_id None:
    the link's author confirmed the fact in its own words, held in `reason`)."""

    id: int
    direction: str  # "out" or "in"
    kind: str
    other_id: int | None
    other_subject: str | None
    other_claim: str | None
    other_author: str | None
    other_current: bool | None
    author: str
    reason: str | None
    via: str | None
    created_at: datetime


def shown_links(conn: Conn, fact_id: int) -> list[ShownLink]:
    """The live links of one fact, both ways, oldest first, in the caller's transaction."""
    return [ShownLink(**row) for row in conn.execute(sql("links.shown"), {"id": fact_id})]


def confirmed_by(shown: list[ShownLink]) -> list[str]:
    """Who confirmed the fact these links are shown for: the authors of its own-words
    confirmations and of the facts that confirm it, each once, oldest first."""
    out: list[str] = []
    for found in shown:
        if found.kind == "confirms" and found.direction == "in":
            who = found.author if found.other_id is None else found.other_author
            if who and who not in out:
                out.append(who)
    return out
