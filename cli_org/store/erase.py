"""The audited erase (migration 0036): a fact's text, or an archived message's, removed from
every place the database keeps it, by an owner, with who, when and why kept.

The database does the work and the checks (org_erase_fact, org_erase_message: SECURITY
DEFINER functions that refuse anyone but an owner); this module checks the input first, so
bad input is one clear line before anything is sent, and names the session's row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..checks.rules import HARNESSES, MAX_ID, check_id
from ..checks.write import check_field
from ..db import Conn, first
from ..db.connect import current_agent
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError, NotFound
from .activity import say_via

# A string to erase besides the claim is at least this long (the database says the same):
# a shorter one would match far too much of the archive.
MIN_ALSO = 8
MAX_ALSO = 20


@dataclass
class Erased:
    """What an erase changed: rows per place, and the other facts that still quote the text
    (each needs its own erase)."""

    places: dict[str, int]
    still_quoted_by: list[int] = field(default_factory=list)


@dataclass
class Erasure:
    """A fact's erasure, as `facts show` and the fact's page say it."""

    at: datetime
    by: str
    via: str | None
    reason: str


def _why(why: str) -> str:
    if not why or not why.strip():
        raise InputError("say why it is erased (--reason)")
    why = why.strip()
    check_field("reason", why)
    return why


def _result(places: dict[str, Any]) -> Erased:
    still = places.pop("still quoted by facts", [])
    return Erased({k: int(v) for k, v in places.items()}, [int(i) for i in still])


@owns_transaction
def erase_fact(conn: Conn, fact_id: int, why: str, *, also: Sequence[str] = (), via: str | None = None) -> Erased:
    """Erase fact `fact_id`'s text: its subject, claim and source become markers, its vectors
    go, and wherever its claim (or a string of `also`, each part of the fact's text) is quoted
    it is replaced by '[erased]'. The fact is retired for good. Owners only."""
    check_id(fact_id)
    why = _why(why)
    if len(also) > MAX_ALSO:
        raise InputError(f"at most {MAX_ALSO} strings to erase at once")
    for a in also:
        if len(a) < MIN_ALSO or "\x00" in a:
            raise InputError(f"a string to erase is at least {MIN_ALSO} characters, without NUL")
    with translated(conn):
        try:
            current_agent(conn)
            say_via(conn, via)
            row = first(conn, sql("erase.fact"), {"id": fact_id, "why": why, "also": list(also)})
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
    return _result(dict(row["places"]))


@owns_transaction
def erase_message(
    conn: Conn, session: str, position: int, why: str, *, harness: str | None = None, via: str | None = None
) -> Erased:
    """Erase the archived message at `position` of session `session` (its external id, as
    `sessions show` takes it): every part of that record loses its text, command and raw
    record, and wherever its text is quoted it is replaced by '[erased]'. Owners only."""
    if harness is not None and harness not in HARNESSES:
        raise InputError(f"harness {harness!r} is not one of {', '.join(HARNESSES)}")
    if not session or len(session) > 500 or "\x00" in session:
        raise InputError("a session id is 1 to 500 characters, without NUL")
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position <= MAX_ID:
        raise InputError(f"a message position is a whole number from 0 to {MAX_ID}")
    why = _why(why)
    with translated(conn):
        try:
            current_agent(conn)
            found = conn.execute(sql("archive.session_find"), {"external_id": session, "harness": harness}).fetchall()
            if not found:
                raise NotFound(f"no archived session {session!r}; see `cli-org sessions search`")
            if len(found) > 1:
                where = ", ".join(r["harness"] for r in found)
                raise InputError(f"session {session!r} exists in {where}; pass --harness")
            say_via(conn, via)
            row = first(conn, sql("erase.message"), {"session": found[0]["id"], "position": position, "why": why})
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
    return _result(dict(row["places"]))


def erasure_of(conn: Conn, fact_id: int) -> Erasure | None:
    """The erasure of a fact, or None (read inside the caller's transaction)."""
    row = conn.execute(sql("erase.of_fact"), {"id": fact_id}).fetchone()
    if row is None:
        return None
    return Erasure(row["erased_at"], row["erased_by"], row["erased_via"], row["reason"])
