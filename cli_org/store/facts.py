"""Shared facts: remember, forget, supersede and list, through row-level security."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg import errors as pgerr

from ..checks.rules import KINDS, check_id
from ..checks.write import check_fact, check_field
from ..db import Conn, first
from ..db.connect import current_agent
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError, NearDuplicate, NotFound, ScanRefused
from ..text import one_line
from .activity import say_via
from .approvals import approved as is_approved
from .erase import Erasure, erasure_of
from .links import ShownLink, add_link, confirmed_by, shown_links
from .vectors import fact_text, store_unembedded, store_vectors

if TYPE_CHECKING:
    from ..vault.embedders import Embedder
    from .related import Related


@dataclass
class Remembered:
    id: int
    duplicate: bool = False
    superseded: int | None = None
    # Another agent's current fact said this already (issue 36): the new fact is linked as
    # confirming it (`confirms`), and recall shows the two once. Its id and author.
    confirms: int | None = None
    confirmed: str | None = None
    # Current facts the new one disagrees with, each now linked `contradicts` (issue 36).
    contradicts: list[Related] = field(default_factory=list)


@dataclass
class Fact:
    id: int
    subject: str
    claim: str
    source: str
    author: str
    project: str | None
    confidence: str
    kind: str
    via: str | None
    valid_from: datetime
    valid_to: datetime | None
    retired_by: str | None
    retired_reason: str | None
    supersedes: int | None
    superseded_by: int | None
    created_at: datetime

    @property
    def current(self) -> bool:
        return self.valid_to is None


@dataclass
class PinBack:
    """The pin a fact's retirement ended, seen after its restore (migration 0026)."""

    project: str | None  # None: org-wide
    pinned_by: str
    back: bool  # False: the scope filled up since, and holds its cap


@dataclass
class Restored(Fact):
    pin: PinBack | None = None  # None: the retirement ended no pin


@owns_transaction
def remember(
    conn: Conn,
    subject: str,
    claim: str,
    *,
    source: str | None,
    project: str | None = None,
    inferred: bool = False,
    kind: str = "fact",
    supersedes: int | None = None,
    via: str | None = None,
    allow_duplicate: bool = False,
    embedder: Embedder | None = None,
    source_hash: str | None = None,
) -> Remembered:
    """Store one sourced claim as the connected agent; nothing is written on any error.
    Given the query model, the new fact's vector is stored with it (store/vectors.py: recall
    never computes one). `source_hash`: what the cited file says now (sources.source_hash_at,
    which the faces call), stored for `eval stale` and `tidy` (migration 0042).

    What the claim is to the current facts (of its project, or org-wide; every author) is
    judged first (store/related.py, sameness.judge; issue 36):
    - the same fact as one of the writer's own: refused with NearDuplicate naming it, unless
      `allow_duplicate` (`supersedes` replaces a fact by design and is not refused);
    - the same fact as another agent's: stored as the writer's own (each agent's assertion is
      its own row, so nobody's retirement makes another's write disappear: migration 0008,
      claim squatting) and linked `confirms` to that fact, which recall and the context block
      then show once, "confirmed by" the writer; Remembered.confirms and .confirmed name it;
    - a contradiction: stored, and linked `contradicts` to each fact it disagrees with (at most
      CONTRADICTIONS_LINKED), which Remembered.contradicts lists for the writer to see.

    Where the check runs: here, not in the database. It is a rule of tidiness, not of safety
    (a member writing SQL can store a paraphrase anyway, and `tidy` and `cli-org review` find
    what slips through). The race it leaves: two writers of one claim at once each judge before
    the other commits and both write; `tidy` merges such a pair."""
    subject, claim, source = checked_fact(conn, subject, claim, source, project, via)
    if kind not in KINDS:
        raise InputError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if supersedes is not None:
        check_id(supersedes)
    params = {
        "subject": subject,
        "claim": claim,
        "source": source,
        "project": project,
        "confidence": "inferred" if inferred else "confirmed",
        "kind": kind,
        "via": via,
        "source_hash": source_hash,
    }
    with translated(conn):
        try:
            vectors = _embedded(conn, embedder, subject, claim)
            result = _store(conn, params, supersedes, allow_duplicate, vectors, embedder)
            if embedder is not None and vectors is not None and not result.duplicate:
                store_vectors(conn, embedder, [{"id": result.id, **params}], vectors=vectors)
        except BaseException:
            conn.rollback()
            raise
        conn.commit()  # every return path ends the transaction the lookups opened
    return result


def checked_fact(
    conn: Conn, subject: str, claim: str, source: str | None, project: str | None, via: str | None
) -> tuple[str, str, str]:
    """check_fact, with the texts an owner approved (store/approvals.py) let past the secret
    and injection scans: a field the scan refuses is looked up, and refused only if unapproved."""
    approved: set[str] = set()
    while True:
        try:
            return check_fact(subject, claim, source, project, via, frozenset(approved))
        except ScanRefused as exc:
            if exc.text in approved or not is_approved(conn, exc.text):
                raise
            approved.add(exc.text)


def _embedded(conn: Conn, embedder: Embedder | None, subject: str, claim: str) -> list[Any] | None:
    """The new fact's vector, computed once for the judging and the storing; None without a
    model or on a database without vectors."""
    from ..db.migrate import vectors_ready

    if embedder is None or not vectors_ready(conn):
        return None
    return list(embedder.embed([fact_text(subject, claim)]))


# Contradicted facts a new claim is linked to at most: the nearest few (a claim that disagrees
# with more is about something broader, and a person sorts that out in `cli-org review`).
CONTRADICTIONS_LINKED = 3


def _store(
    conn: Conn,
    params: dict[str, Any],
    supersedes: int | None,
    allow_duplicate: bool,
    vectors: list[Any] | None,
    embedder: Embedder | None,
) -> Remembered:
    me = current_agent(conn)
    say_via(conn, params["via"])  # a fact it supersedes records the harness that retired it
    existing = conn.execute(sql("facts.find_current"), params).fetchone()
    if existing:
        return _known(conn, existing["id"], supersedes)
    # Imported here: the judge's tables cost a cold command that never writes ~8 ms (recall
    # imports this module; python -X importtime, 2026-12-04).
    from .related import related

    subject, claim = params["subject"], params["claim"]
    literal = model = None
    if vectors is not None and embedder is not None:
        from ..vault.embedders import vector_literal

        literal, model = vector_literal(vectors[0]), embedder.name
    found = [
        r
        for r in related(conn, subject, claim, params["project"], literal, model)
        # the same claim, stored by another session of this agent since our lookup: no
        # paraphrase but the claim itself (the insert finds it: _known); and what it replaces
        if r.id != supersedes and not (r.author == me and (r.subject, r.claim) == (subject, claim))
    ]
    same = [r for r in found if r.relation == "same"]
    if same and supersedes is None and not allow_duplicate:
        mine = [r for r in same if r.author == me]
        if mine:
            raise _near_duplicate(mine[0])
    # insisting (`allow_duplicate`) says the claim is not the other's either: no confirms link
    theirs = None if allow_duplicate else next((r for r in same if r.author != me), None)
    contradicted = [r for r in found if r.relation == "contradicts"][:CONTRADICTIONS_LINKED]
    try:
        with conn.transaction():  # a savepoint: the lookups above opened the transaction
            new_id = first(conn, sql("facts.insert"), params)["id"]
            if supersedes is not None:
                conn.execute(sql("facts.supersede"), {"old": supersedes, "new": new_id})
    except pgerr.UniqueViolation:
        # Another session of this agent stored the same claim between our lookup and insert.
        return _known(conn, first(conn, sql("facts.find_current"), params)["id"], supersedes)
    for other in contradicted:
        add_link(conn, new_id, "contradicts", other.id)
    if theirs is not None:
        add_link(conn, new_id, "confirms", theirs.id)
        return Remembered(new_id, superseded=supersedes, confirms=theirs.id, confirmed=theirs.author)
    return Remembered(new_id, superseded=supersedes, contradicts=contradicted)


# A plain claim, as most are: what the first write of a process and of a database session
# compiles (the patterns its strings may match, the database's folding of the text).
_PLAIN = ("deploys", "The api is deployed at night from the release branch.", "docs/deploy.md")


def warm_up_checks() -> None:
    """The client's part of warm_up_writes, which needs no connection (the injection check
    waits for the query model)."""
    check_fact(*_PLAIN)


@owns_transaction
def warm_up_writes(conn: Conn) -> None:
    """Pay a first write's one-time costs now, writing nothing: a long-lived server calls this
    when it starts, so that its first `remember` costs what a later one does (the client's
    checks import and compile, the connection's write scan compiles)."""
    warm_up_checks()
    subject, claim, source = _PLAIN
    first(conn, sql("facts.warm_scan"), {"subject": subject, "claim": claim, "source": source})


# Characters of the existing claim a near-duplicate refusal quotes (the id leads to the rest).
QUOTED_CLAIM = 80


def _near_duplicate(r: Related) -> NearDuplicate:
    """The refusal of a claim that says what the writer's own current fact `r` says."""
    if r.similarity is not None:
        how = f"{r.similarity:.2f} alike in meaning"
    else:
        how = f"{r.evidence.get('overlap', 1):.0%} of the words"
    return NearDuplicate(
        f"says what your current fact #{r.id} says ({how}; numbers, names and negation agree): "
        f"{one_line(r.claim, QUOTED_CLAIM)!r}; to replace it pass --supersedes {r.id}, "
        "to store this claim beside it pass --allow-duplicate",
        r.id,
        r.claim,
        float(r.evidence.get("overlap", r.similarity or 1.0)),
    )


def _known(conn: Conn, existing: int, supersedes: int | None) -> Remembered:
    """The agent already holds this claim as fact `existing`.

    Without --supersedes that is the answer. With --supersedes N the caller wants N gone and
    this claim current: N is retired and linked both ways to the existing fact, as if the
    claim had been written now. Refused when that link cannot be made (docs/facts.md, remember)."""
    if supersedes is None:
        return Remembered(existing, duplicate=True)
    if supersedes == existing:
        raise InputError(f"fact {existing} already says this; there is nothing to supersede")
    links = first(conn, sql("facts.links"), {"id": existing})
    if links["supersedes"] is not None:
        raise InputError(
            f"your identical fact #{existing} already supersedes #{links['supersedes']} and a fact supersedes "
            f"one other; retire #{supersedes} with `cli-org forget {supersedes} WHY`"
        )
    conn.execute(sql("facts.supersede"), {"old": supersedes, "new": existing})
    return Remembered(existing, duplicate=True, superseded=supersedes)


@owns_transaction
def forget(conn: Conn, fact_id: int, why: str, *, via: str | None = None) -> None:
    """Retire a fact: only its author, the author's team lead or an owner may."""
    check_id(fact_id)
    if not why or not why.strip():
        raise InputError("say why the fact is retired")
    check_field("reason", why.strip())
    with translated(conn):
        current_agent(conn)
        say_via(conn, via)
        with conn.transaction():
            conn.execute(sql("facts.forget"), {"id": fact_id, "why": why.strip()})
        conn.commit()


@owns_transaction
def restore(
    conn: Conn, fact_id: int, why: str, *, embedder: Embedder | None = None, via: str | None = None
) -> Restored:
    """Bring a forgotten fact back (migration 0014, org_restore): its author, the author's
    team lead or an owner may. A superseded fact comes back only once its successor is
    retired; a fact whose identical claim by the same author is current again stays retired.
    The pin its retirement ended comes back too, unless its scope is full (migration 0026)."""
    check_id(fact_id)
    if not why or not why.strip():
        raise InputError("say why the fact comes back")
    check_field("reason", why.strip())
    with translated(conn):
        me = current_agent(conn)
        say_via(conn, via)
        with conn.transaction():
            conn.execute(sql("facts.restore"), {"id": fact_id, "why": why.strip()})
        fact = _get(conn, fact_id)
        pin = conn.execute(sql("pins.after_restore"), {"id": fact_id}).fetchone()
        if embedder is not None and fact is not None and fact.author == me:
            # a fact retired before it had a vector gets its author's now; a restorer who is
            # not the author leaves it to the author or the admin (`cli-org facts embed`)
            store_unembedded(conn, embedder, [fact_id])
        conn.commit()
    if fact is None:  # never: org_restore() found it
        raise NotFound(f"no fact with id {fact_id}")
    return Restored(**vars(fact), pin=PinBack(**pin) if pin else None)


@owns_transaction
def list_facts(
    conn: Conn,
    *,
    include_retired: bool = False,
    subject: str | None = None,
    project: str | None = None,
    author: str | None = None,
    kind: str | None = None,
    text: str | None = None,
    newest_first: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> list[Fact]:
    """Facts (current ones unless `include_retired`) matching every filter given; `text`:
    a substring of the subject, claim or source, any case. `limit`/`offset` page through
    them (the web page shows a page at a time)."""
    if limit is not None and limit < 0 or offset < 0:
        raise InputError("limit and offset may not be negative")
    params = {
        "all": include_retired,
        "subject": subject,
        "project": project,
        "author": author,
        "kind": kind,
        "text": text or None,
        "limit": limit,
        "offset": offset,
    }
    with translated(conn):
        return [Fact(**row) for row in conn.execute(sql("facts.list_newest" if newest_first else "facts.list"), params)]


@dataclass
class Event:
    """One thing that happened to a fact: written, superseded, retired or restored."""

    at: datetime
    who: str | None
    what: str  # "written", "superseded", "retired", "restored", "erased"
    detail: str | None  # the source when written, the reason when retired, restored or erased
    other: int | None = None  # the fact that superseded this one


@dataclass
class FactRecord:
    """One fact whole: the row, what happened to it, and its supersession chain, oldest
    first, this fact included (`older` and `newer` are the parts before and after it)."""

    fact: Fact
    events: list[Event]
    older: list[Fact]  # what it superseded, the oldest first
    newer: list[Fact]  # what superseded it, the nearest first
    chain: list[int]  # every id of the chain, oldest first
    erased: Erasure | None = None  # its text was erased (migration 0036): who, when, why
    restricted_to: list[str] | None = None  # the fact's project is readable only by these (migration 0035)
    links: list[ShownLink] = field(default_factory=list)  # its live typed links, both ways (migration 0041)
    confirmed_by: list[str] = field(default_factory=list)  # the agents who confirmed it (links.confirmed_by)


_CHAIN_LIMIT = 1000  # links followed each way; a chain is a few facts, a cycle would never end


@owns_transaction
def show_fact(conn: Conn, fact_id: int) -> FactRecord:
    """A fact with its history and its supersession chain both ways."""
    check_id(fact_id)
    with translated(conn):
        try:
            fact = _get(conn, fact_id)
            if fact is None:
                raise NotFound(f"no fact with id {fact_id}")
            restores = list(conn.execute(sql("facts.restores"), {"id": fact_id}))
            erased = erasure_of(conn, fact_id)
            shown = shown_links(conn, fact_id)
            restricted_to = None
            if fact.project is not None:
                rows = conn.execute(sql("projects.access"), {"project": fact.project}).fetchall()
                restricted_to = [r["agent"] for r in rows] or None
            older: list[Fact] = []
            newer: list[Fact] = []
            seen = {fact.id}
            for attr, into in (("supersedes", older), ("superseded_by", newer)):
                at = fact
                while getattr(at, attr) is not None and getattr(at, attr) not in seen and len(seen) < _CHAIN_LIMIT:
                    linked = _get(conn, getattr(at, attr))
                    if linked is None:
                        break
                    at = linked
                    seen.add(at.id)
                    into.append(at)
        finally:
            conn.rollback()  # read-only: end the transaction the reads opened
    older.reverse()
    events = events_of(fact, restores)
    if erased is not None:
        events.append(Event(erased.at, erased.by, "erased", erased.reason))
    chain = [f.id for f in (*older, fact, *newer)]
    return FactRecord(fact, events, older, newer, chain, erased, restricted_to, shown, confirmed_by(shown))


def events_of(fact: Fact, restores: list[dict[str, Any]] | None = None) -> list[Event]:
    """What happened to a fact, oldest first. Each restore (memory_restores, migration 0014)
    keeps the retirement it undid, so a fact retired and restored twice shows all four."""
    events = [Event(fact.created_at, fact.author, "written", fact.source)]
    for r in restores or []:
        what = "superseded" if r["superseded_by"] is not None else "retired"
        events.append(Event(r["retired_at"], r["retired_by"], what, r["retired_reason"], r["superseded_by"]))
        events.append(Event(r["restored_at"], r["restored_by"], "restored", r["why"]))
    # org_supersede() sets valid_to and superseded_by together, org_forget() valid_to alone.
    if fact.valid_to is not None:
        what = "superseded" if fact.superseded_by is not None else "retired"
        events.append(Event(fact.valid_to, fact.retired_by, what, fact.retired_reason, fact.superseded_by))
    return events


def _get(conn: Conn, fact_id: int) -> Fact | None:
    row = conn.execute(sql("facts.get"), {"id": fact_id}).fetchone()
    return Fact(**row) if row else None


def age(moment: datetime | None) -> str:
    """How long ago, in the largest whole unit: 3d, 5h, 12m, now."""
    if moment is None:
        return ""
    seconds = (datetime.now(moment.tzinfo) - moment).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


# Recall's text answer and the context block carry at most this many characters of a claim
# (texts whose size is measured and budgeted); `facts` and --json carry the whole claim.
CLAIM_CHARS = 300


def fact_words(f: Fact, claim_chars: int | None = CLAIM_CHARS) -> str:
    """A fact's words in every printed line, `subject: claim`, each on one line; the claim
    cut to `claim_chars` characters (None: whole)."""
    return f"{one_line(f.subject)}: {one_line(f.claim, claim_chars)}"
