"""Proposals from the archive (issue 35): read each session's new messages, find the lasting
lessons in them (lessons.py) and store each as a proposal (store/proposals.py), never a fact.

Run by `archive import` after its import and by `archive propose`, as the administrator (the
login role, which reads every session). What is not proposed, and why, is counted: a claim
that is already a current fact (by words or meaning), a claim the write checks refuse (a secret
in a transcript), a claim proposed before in the project (in any state: a rejected one never
comes back). Each session commits with how far it was read, so a second run reads only what
is new, and an interrupted run loses nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from ..db import Conn, first, locks
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied, InputError, NotFound
from ..limits import LOCK_WAIT
from .lessons import candidates, lessons, turns_from_rows

if TYPE_CHECKING:
    from ..vault.embedders import Embedder

# Messages before the new ones that the detector reads again: a correction answers the turn
# before it, and a fix follows its failure by a few tool calls.
CONTEXT = 20

# Which agent a session belongs to, from its harness and working folder (the harness set-up's
# record: setup/record.py agent_for); None: nobody says, the importer assigns it.
AgentFor = Callable[[str, str | None], str | None]
ProposeProgress = Callable[[int, int], None]


@dataclass
class ProposeSummary:
    sessions: int = 0  # sessions with new messages
    messages: int = 0  # new messages read
    proposed: int = 0
    known: int = 0  # already a current fact
    refused: int = 0  # refused by the write checks
    repeated: int = 0  # proposed before in the project


@owns_transaction
def propose(
    conn: Conn,
    *,
    embedder: Embedder | None = None,
    agent_for: AgentFor | None = None,
    again: bool = False,
    progress: ProposeProgress | None = None,
    lock_wait: float = LOCK_WAIT,
    named: str | None = None,
    load_embedder: Callable[[], Embedder | None] | None = None,
) -> ProposeSummary:
    """Propose the lessons of every archived session's messages not read before (with
    `again`, of every message: what was proposed before is still not proposed twice).
    `named`: an agent the caller names for the sessions (agent_for may answer it), which
    must exist. `load_embedder` gives the query model on first need instead of `embedder`:
    a session with no candidate sentence (most of them) needs none, and loading it costs more
    than proposing from a small import (benchmarks/RESULTS.md, Proposals)."""
    if named is not None:
        known_agent(conn, named)
    with translated(conn):
        if not first(conn, sql("fact_vectors.is_admin"))["admin"]:
            conn.rollback()
            raise AccessDenied("proposals are made from the archive by its importer: run it without --as")
        with locks.held(conn, locks.ARCHIVE, "archive imports", lock_wait):
            model = _Model(embedder, load_embedder)
            summary = _propose(conn, model, agent_for, again, progress)
    return summary


@owns_transaction
def known_agent(conn: Conn, name: str) -> None:
    """NotFound unless `name` is an agent (an agent named for the sessions must exist)."""
    with translated(conn):
        found = conn.execute(sql("proposals.agent_exists"), {"name": name}).fetchone()
        conn.rollback()
    if found is None:
        raise NotFound(f"no agent named {name}; `cli-org agents list` shows them")


class _Model:
    """The query model, asked for only when a session holds a candidate sentence."""

    def __init__(self, embedder: Embedder | None, load: Callable[[], Embedder | None] | None):
        self.embedder, self.load = embedder, load

    def __call__(self) -> Embedder | None:
        if self.embedder is None and self.load is not None:
            self.embedder, self.load = self.load(), None
        return self.embedder


def _propose(
    conn: Conn, model: _Model, agent_for: AgentFor | None, again: bool, progress: ProposeProgress | None
) -> ProposeSummary:
    summary = ProposeSummary()
    agents = {r["name"] for r in conn.execute("SELECT name FROM org_agents")}
    sessions = conn.execute(sql("proposals.sessions_to_read"), {"all": again}).fetchall()
    conn.commit()
    for n, s in enumerate(sessions, start=1):
        start = 0 if again or s["proposed_to"] is None else s["proposed_to"] + 1
        rows = conn.execute(sql("proposals.messages_from"), {"session": s["id"], "from": start - CONTEXT}).fetchall()
        new = {r["source_key"] for r in rows if r["position"] >= start}
        summary.sessions += 1
        summary.messages += sum(1 for r in rows if r["position"] >= start)
        turns = turns_from_rows(rows)
        # The model only for a candidate sentence among the new messages (else: failures and fixes)
        possible = candidates(turns)
        embedder = model() if any(c.key in new for c in possible) else None
        found = [lesson for lesson in lessons(turns, embedder, possible) if lesson.key in new]
        if found:  # few sessions: the checks, the facts and the setup record are read for them only
            from ..store.proposals import check_proposal, claim_key, known_claim

            agent = agent_for(s["harness"], s["cwd"]) if agent_for else None
            agent = agent if agent in agents else None
        for lesson in found:
            try:
                check_proposal(lesson.subject, lesson.claim, s["project"])
            except InputError:
                summary.refused += 1
                continue
            if known_claim(conn, lesson.subject, lesson.claim, s["project"], embedder) is not None:
                summary.known += 1
                continue
            params = {
                "session_id": s["id"],
                "message_key": lesson.key,
                "agent": agent,
                "project": s["project"],
                "subject": lesson.subject,
                "claim": lesson.claim,
                "kind": lesson.kind,
                "why": lesson.why,
                "score": lesson.score,
                "claim_key": claim_key(lesson.claim),
            }
            try:
                with conn.transaction():  # a savepoint: the database's own write checks
                    made = conn.execute(sql("proposals.insert"), params).fetchone()
            except psycopg.errors.CheckViolation:
                summary.refused += 1
                continue
            if made is None:
                summary.repeated += 1
            else:
                summary.proposed += 1
        conn.execute(sql("proposals.read_to"), {"session": s["id"], "to": s["last"]})
        conn.commit()
        if progress:
            progress(n, len(sessions))
    return summary
