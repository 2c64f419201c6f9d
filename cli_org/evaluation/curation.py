"""The store's health in one summary: current, retired and superseded facts; confirmed
against inferred; facts per author and per kind; the share tagged with a project; the claim
length's median and maximum; and the work waiting for `cli-org tidy` (near-duplicate merges)
and `cli-org eval stale` (stale sources). Read as the caller: row-level security decides
what is counted, so a member's summary covers what that member may read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..store.duplicates import DUPLICATE_OVERLAP
from ..store.facts import Fact
from ..store.tidy import proposals_for

# Authors listed by name (the most prolific first); the rest are counted in `other_authors`.
AUTHORS_SHOWN = 20
# The facts the near-duplicate count reads at most: only facts sharing a scope with another
# can be merged (tidy.py), and the count runs the rule on those rows only. A store where more
# facts than this share scopes is counted on the first ones and says "at least".
DUPLICATE_CANDIDATES = 5_000
# The web page counts near-duplicates among this many newest current facts (where new ones
# wait); `facts summary` and /facts/tidy count over every fact.
PAGE_NEWEST = 10_000


@dataclass
class Count:
    name: str
    facts: int


@dataclass
class CurationSummary:
    facts: int  # every fact ever written that the caller may read
    current: int
    retired: int  # not current, and superseded by no fact
    superseded: int  # not current, replaced by a newer fact
    confirmed: int  # of the current facts
    inferred: int
    with_project: int  # current facts tagged with a project
    project_share: float | None  # with_project / current; None when nothing is current
    claim_median: float | None  # characters, current facts
    claim_max: int | None
    by_author: list[Count] = field(default_factory=list)  # current facts, the most first
    other_authors: int = 0  # current facts of the authors not listed
    by_kind: list[Count] = field(default_factory=list)
    near_duplicates: int = 0  # merges `cli-org tidy` would propose
    near_duplicates_at_least: bool = False  # True: counted on DUPLICATE_CANDIDATES facts only
    near_duplicates_newest: int | None = None  # counted among this many newest current facts; None: all
    stale_sources: int | None = None  # items `cli-org eval stale` lists; None: no root was given
    stale_root: str | None = None


@owns_transaction
def pending_merges(conn: Conn, *, limit: int = DUPLICATE_CANDIDATES, newest: int | None = None) -> tuple[int, bool]:
    """How many merges `tidy` would propose now (its rule, on the facts that share a scope;
    with `newest`, among that many newest current facts only), and whether the count stopped
    at `limit` candidate facts (then it is a lower bound)."""
    with translated(conn):
        params = {"limit": limit + 1, "newest": newest}
        rows = conn.execute(sql("curation.duplicate_candidates"), params).fetchall()
    capped = len(rows) > limit
    merges = [p for p in proposals_for([Fact(**r) for r in rows[:limit]], [], DUPLICATE_OVERLAP) if p.action == "merge"]
    return len(merges), capped


@owns_transaction
def curation_summary(
    conn: Conn, *, stale_root: Path | None = None, duplicates_newest: int | None = None
) -> CurationSummary:
    """The summary above. With `stale_root`, also the count of what `eval stale` would list
    under it (it reads files: the CLI passes it; the web page does not, see pages/facts.py).
    With `duplicates_newest`, near-duplicates are counted among that many newest facts."""
    from .stale import stale

    with translated(conn):
        t = first(conn, sql("curation.totals"))
        authors = [Count(**r) for r in conn.execute(sql("curation.by_author"), {"limit": AUTHORS_SHOWN})]
        kinds = [Count(**r) for r in conn.execute(sql("curation.by_kind"))]
    merges, capped = pending_merges(conn, newest=duplicates_newest)
    current = int(t["current"])
    summary = CurationSummary(
        facts=int(t["facts"]),
        current=current,
        retired=int(t["retired"]),
        superseded=int(t["superseded"]),
        confirmed=int(t["confirmed"]),
        inferred=int(t["inferred"]),
        with_project=int(t["with_project"]),
        project_share=round(t["with_project"] / current, 4) if current else None,
        claim_median=float(t["claim_median"]) if t["claim_median"] is not None else None,
        claim_max=t["claim_max"],
        by_author=authors,
        other_authors=current - sum(a.facts for a in authors),
        by_kind=kinds,
        near_duplicates=merges,
        near_duplicates_at_least=capped,
        near_duplicates_newest=duplicates_newest,
    )
    if stale_root is not None:
        summary.stale_sources = len(stale(conn, stale_root).items)
        summary.stale_root = str(stale_root)
    conn.commit()
    return summary
