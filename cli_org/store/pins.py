"""Pins: a few current facts delivered in every session, capped per scope.

The rules live in the database (migration 0014, org_pin/org_unpin): the caps of
rules.PIN_CAP_ORG and rules.PIN_CAP_PROJECT counted under a table lock, only current facts,
the rights of forget, and retiring a fact unpins it. This module calls them and reads back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..checks.rules import check_id
from ..checks.write import check_field
from ..db import Conn, first
from ..db.connect import current_agent
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from .activity import say_via


@dataclass
class Pin:
    pin_id: int
    fact_id: int
    project: str | None  # None: org-wide
    pinned_by: str
    pinned_at: datetime
    unpinned_by: str | None
    unpinned_at: datetime | None
    unpin_reason: str | None
    subject: str
    claim: str


@owns_transaction
def pin(conn: Conn, fact_id: int, project: str | None = None, *, via: str | None = None) -> Pin:
    """Pin a current fact org-wide, or in `project` (a project's fact is pinned in its own
    project). Pinning a fact already pinned there changes nothing."""
    check_field("project", project)
    check_id(fact_id)
    with translated(conn):
        current_agent(conn)
        say_via(conn, via)
        pin_id = first(conn, sql("pins.pin"), {"id": fact_id, "project": project})["pin_id"]
        row = first(conn, sql("pins.get"), {"pin_id": pin_id})
        conn.commit()
    return Pin(**row)


@owns_transaction
def unpin(conn: Conn, fact_id: int, *, via: str | None = None) -> Pin:
    """Unpin a fact; the pin's row stays, with who unpinned it and when."""
    check_id(fact_id)
    with translated(conn):
        current_agent(conn)
        say_via(conn, via)
        pin_id = first(conn, sql("pins.unpin"), {"id": fact_id})["pin_id"]
        row = first(conn, sql("pins.get"), {"pin_id": pin_id})
        conn.commit()
    return Pin(**row)


@owns_transaction
def list_pins(
    conn: Conn,
    *,
    project: str | None = None,
    include_unpinned: bool = False,
    past: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> list[Pin]:
    """The live pins (org-wide ones, and with `project` that project's), oldest first.

    With `past`: only the pins no longer in force, most recently unpinned first, a page of
    `limit` from `offset` (the live ones are few by their caps; the past ones only grow)."""
    check_field("project", project)
    if not past:
        with translated(conn):
            rows = conn.execute(sql("pins.list"), {"project": project, "all": include_unpinned}).fetchall()
        return [Pin(**r) for r in rows]
    if limit is not None and not 1 <= limit <= 1000:
        raise InputError(f"limit must be between 1 and 1000, not {limit}")
    params = {"project": project, "limit": limit, "offset": max(offset, 0)}
    with translated(conn):
        rows = conn.execute(sql("pins.past"), params).fetchall()
    return [Pin(**r) for r in rows]
