"""Proposals (issue 35): lessons found in archived sessions, waiting to be accepted as facts.

The archive's import makes them (archive/propose.py, as the administrator); the agent whose
session it was, its team lead or an owner decides each one (org_proposal_accept and
org_proposal_reject, migrations/repeatable/proposals.sql, which say who may). An accepted
proposal is a fact like any other: its author is that agent, its source names the session
and the message.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..checks.rules import PROPOSAL_STATES, check_agent_name, check_id
from ..checks.write import check_field, check_text
from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError, NotFound
from .activity import say_via
from .duplicates import words
from .facts import checked_fact

if TYPE_CHECKING:
    from ..vault.embedders import Embedder

STATES = (*PROPOSAL_STATES, "all")  # what a list shows
MAX_LIMIT = 500


# What an edit is checked with for its source: the database writes the real one
# (sessions/HARNESS/SESSION/MESSAGE, org_proposal_accept), of the same form.
_SOURCE = "sessions/HARNESS/SESSION/MESSAGE"


@dataclass
class Proposal:
    id: int
    agent: str | None
    project: str | None
    subject: str
    claim: str
    kind: str
    why: str
    score: float
    harness: str
    session: str  # the harness's session id
    message: str  # the source_key of the message it came from
    session_id: int
    state: str
    fact_id: int | None
    decided_by: str | None
    decided_at: datetime | None
    reason: str | None
    created_at: datetime


def claim_key(claim: str) -> str:
    """A digest of the claim's words, in any order and case: the same claim proposed again
    (by another session, or after a rejection) has the same key. A digest, not the words, so
    that an erased secret leaves nothing in it."""
    return hashlib.sha256(" ".join(sorted(words(claim))).encode()).hexdigest()


@owns_transaction
def list_proposals(
    conn: Conn, *, state: str = "pending", project: str | None = None, agent: str | None = None, limit: int = 100
) -> list[Proposal]:
    """The proposals the caller may decide (its own, its team's as a lead, all as an owner)."""
    if state not in STATES:
        raise InputError(f"state {state!r} is not one of {', '.join(STATES)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    check_field("project", project)
    if agent is not None:
        check_agent_name(agent)
    with translated(conn):
        rows = conn.execute(
            sql("proposals.list"), {"state": state, "project": project, "agent": agent, "limit": limit}
        ).fetchall()
        conn.commit()
    return [Proposal(**r) for r in rows]


@owns_transaction
def count_pending(conn: Conn, agent: str | None = None) -> int:
    """How many pending proposals the caller may decide (of `agent`'s sessions, when named)."""
    with translated(conn):
        n = int(first(conn, sql("proposals.count_pending"), {"agent": agent})["n"])
        conn.commit()
    return n


def _get(conn: Conn, proposal_id: int) -> Proposal:
    row = conn.execute(sql("proposals.get"), {"id": proposal_id}).fetchone()
    if row is None:  # not there, or not the caller's to decide (the read policy)
        raise NotFound(f"no proposal with id {proposal_id}")
    return Proposal(**row)


@owns_transaction
def accept(
    conn: Conn,
    proposal_id: int,
    *,
    claim: str | None = None,
    subject: str | None = None,
    agent: str | None = None,
    via: str | None = None,
    embedder: Embedder | None = None,
) -> Proposal:
    """Make the proposal a fact, as proposed or with the claim and subject edited; `agent`
    names the author of one that belongs to no agent yet (an owner's choice). An edit passes
    the write checks of `remember`; the database checks them again, and who may."""
    check_id(proposal_id, "proposal")
    if agent is not None:
        check_agent_name(agent)
    with translated(conn):
        try:
            say_via(conn, via)
            if claim is not None or subject is not None:
                proposed = _get(conn, proposal_id) if claim is None or subject is None else None
                subject, claim, _ = checked_fact(
                    conn,
                    subject if subject is not None else proposed.subject if proposed else "",
                    claim if claim is not None else proposed.claim if proposed else "",
                    _SOURCE,
                    None,
                    via,
                )
            fact_id = first(
                conn, sql("proposals.accept"), {"id": proposal_id, "agent": agent, "subject": subject, "claim": claim}
            )["fact_id"]
            accepted = _get(conn, proposal_id)
            if embedder is not None:
                from .vectors import store_unembedded

                # Only the author's own vector is trusted for every reader (migration 0017):
                # a lead's or owner's acceptance leaves it to the author's next write or embed.
                if accepted.decided_by == accepted.agent:
                    store_unembedded(conn, embedder, [fact_id])
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
    return accepted


@owns_transaction
def reject(conn: Conn, proposal_id: int, *, reason: str | None = None, via: str | None = None) -> Proposal:
    """Reject a proposal: it stays, rejected, and its claim is never proposed again."""
    check_id(proposal_id, "proposal")
    if reason is not None:
        reason = reason.strip() or None
        check_field("reason", reason)
    with translated(conn):
        try:
            say_via(conn, via)
            conn.execute(sql("proposals.reject"), {"id": proposal_id, "reason": reason})
            rejected = _get(conn, proposal_id)
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
    return rejected


def known_claim(
    conn: Conn, subject: str, claim: str, project: str | None, embedder: Embedder | None = None
) -> int | None:
    """The id of a current fact (of the project, or org-wide) that already says `claim`: the
    rule `remember` refuses or confirms by (store/related.py, sameness.judge), by words, and by
    meaning given the query model; None when none does. Runs in the caller's transaction."""
    from ..db.migrate import vectors_ready
    from .related import related
    from .vectors import fact_text

    vector = model = None
    if embedder is not None and vectors_ready(conn):
        from ..vault.embedders import vector_literal

        vector, model = vector_literal(embedder.embed([fact_text(subject, claim)])[0]), embedder.name
    same = [r for r in related(conn, subject, claim, project, vector, model) if r.relation == "same"]
    return same[0].id if same else None


def check_proposal(subject: str, claim: str, project: str | None) -> None:
    """What a proposal carries passes the write checks of facts before it is stored (the
    database's trigger checks again): a secret or an injection in a transcript is never proposed."""
    check_field("project", project)
    check_text("subject", subject)
    check_text("claim", claim)
