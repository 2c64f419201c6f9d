"""The review list (issue 36): what waits for a person to settle, refreshed on its own.

Four kinds of item, each with the ids it names and the command that settles it:
- contradictions: live `contradicts` links (memory_links, migration 0041) between two current
  facts; counted live (a few rows, read by the links' own index);
- proposals: lessons proposed from sessions and still pending (store/proposals.py); live;
- near-duplicates: the merges `cli-org tidy` proposes (store/tidy.py, its rule, called
  read-only); a scan over every current fact, so stored by the refresh;
- stale sources: facts of a project whose cited source is missing or changed in that
  project's checkout (evaluation/stale.py); reads files, so stored by the refresh.

Stored (migration 0043): the two scans' items, by fact id and without fact text, and each
agent's refresh record. An item whose fact has since been retired is not shown (read live).

Who sees what: an item waits for whoever may settle it, by forget's rule: the author of one of
its facts (or of the link), that author's team lead, or an owner. `cli-org review` lists what
waits for the caller; the session-start block of an owner or a team lead says it in one line.

The refresh runs as the owner or team lead whose session started it (the database refuses a
member's items: repeatable/review.sql), with that agent's reads: it replaces only the items it
can see, so a restricted project's items are refreshed by the sessions of those who may read
it (an owner reads every project). Each agent's sessions refresh at most once in
REFRESH_AFTER, in a process of its own that the hook starts and does not wait for
(`start_refresh`); two sessions starting at once claim it once (`claim_refresh`), and a
refresh holds its agent's run row for its whole length, so a second one started by hand is
refused while it runs (the scans and that lock: evaluation/review.py).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from ..text import one_line

# The rule: the list is refreshed when a session starts and the last refresh is more
# than a day old. A day also bounds the cost: a refresh reads every current fact (tidy's rule)
# and the project's cited files, work no session should pay for more than once a day.
REFRESH_AFTER = timedelta(days=1)
# Items of one kind listed at most (the rest are counted): a list longer than this is read by
# running `cli-org tidy` or `cli-org proposals` themselves.
MAX_ITEMS = 200
# A claim is quoted in a list line cut to this many characters (the ids name the whole fact).
CLAIM_CHARS = 90
KINDS = ("contradiction", "near-duplicate", "proposal", "stale-source")
_NAMES = {  # one and many, for the line
    "contradiction": ("contradiction", "contradictions"),
    "near-duplicate": ("near-duplicate", "near-duplicates"),
    "proposal": ("proposal", "proposals"),
    "stale-source": ("stale source", "stale sources"),
}


@dataclass
class ReviewItem:
    kind: str  # one of KINDS
    ids: list[int]  # the facts it names (a proposal: the proposal's id)
    what: str  # one line
    settle: str  # the command that settles it
    link_id: int | None = None  # a contradiction's link
    project: str | None = None


@dataclass
class Review:
    agent: str
    reviewer: bool  # an owner or a team lead: its session start says what waits
    counts: dict[str, int]  # by kind, every one (items may list fewer: MAX_ITEMS)
    items: list[ReviewItem] = field(default_factory=list)
    refreshed_at: datetime | None = None  # the caller's last refresh; None: never
    error: str | None = None  # why the caller's last refresh failed

    @property
    def waiting(self) -> int:
        return sum(self.counts.values())


def count_phrase(counts: dict[str, int]) -> str:
    """'3 contradictions, 2 near-duplicates and 5 proposals', in KINDS order; '' for none."""
    parts = [f"{n} {_NAMES[k][n != 1]}" for k in KINDS if (n := counts.get(k, 0))]
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def waiting_line(counts: dict[str, int]) -> str:
    """The session-start line of an owner or a team lead; '' when nothing waits."""
    phrase = count_phrase(counts)
    if not phrase:
        return ""
    verb = "waits" if sum(counts.values()) == 1 else "wait"
    return f"{phrase} {verb} for review: cli-org review"


def _counts(conn: Conn) -> dict[str, int]:
    stored = {r["kind"]: int(r["n"]) for r in conn.execute(sql("review.item_counts"))}
    proposals = int(first(conn, sql("proposals.count_pending"), {"agent": None})["n"])
    counts = {
        "contradiction": int(first(conn, sql("review.contradiction_count"))["n"]),
        "near-duplicate": stored.get("near-duplicate", 0),
        "proposal": proposals,
        "stale-source": stored.get("stale-source", 0),
    }
    return counts


def is_reviewer(conn: Conn) -> bool:
    """Whether the caller is an owner or a team lead (its sessions refresh the list)."""
    return bool(first(conn, sql("review.is_reviewer"))["yes"])


def waiting_counts(conn: Conn) -> dict[str, int]:
    """What waits for the caller, by kind (inside the caller's transaction: the context block)."""
    return _counts(conn)


@owns_transaction
def review(conn: Conn, *, limit: int = MAX_ITEMS) -> Review:
    """What waits for the caller to settle, grouped by kind (KINDS order), with the caller's
    last refresh."""
    from ..db.connect import current_agent
    from .proposals import list_proposals

    if not 1 <= limit <= MAX_ITEMS:
        raise InputError(f"limit must be between 1 and {MAX_ITEMS}, not {limit}")
    with translated(conn):
        me = current_agent(conn)
        counts = _counts(conn)
        run = conn.execute(sql("review.run")).fetchone()
        contradictions = conn.execute(sql("review.contradictions"), {"limit": limit})
        items = [_contradiction(r) for r in contradictions]
        dups = conn.execute(sql("review.items"), {"kind": "near-duplicate", "limit": limit})
        items += [_near_duplicate(r) for r in dups]
        if counts["proposal"]:
            items += [
                ReviewItem(
                    "proposal",
                    [p.id],
                    f"proposal #{p.id} ({p.agent or 'no agent yet'}): {p.subject}: {one_line(p.claim, CLAIM_CHARS)}",
                    f"cli-org proposals accept {p.id}  (or: cli-org proposals reject {p.id})",
                    project=p.project,
                )
                for p in list_proposals(conn, limit=limit)
            ]
        stale = conn.execute(sql("review.items"), {"kind": "stale-source", "limit": limit})
        items += [_stale(r) for r in stale]
        reviewer = is_reviewer(conn)
        conn.commit()
    return Review(
        me,
        reviewer,
        counts,
        items,
        run["refreshed_at"] if run else None,
        run["error"] if run else None,
    )


def _contradiction(r: dict[str, Any]) -> ReviewItem:
    a, b = r["from_id"], r["to_id"]
    what = (
        f"#{a} ({r['from_author']}) {one_line(r['claim'], CLAIM_CHARS)} | contradicts | "
        f"#{b} ({r['to_author']}) {one_line(r['other_claim'], CLAIM_CHARS)}"
    )
    settle = f"cli-org remember ... --supersedes {b} (or {a}), cli-org forget {b} WHY, or cli-org unlink {r['id']} WHY"
    return ReviewItem("contradiction", [a, b], what, settle, link_id=r["id"], project=r["project"])


def _near_duplicate(r: dict[str, Any]) -> ReviewItem:
    what = (
        f"#{r['fact_id']} ({r['author']}) {one_line(r['claim'], CLAIM_CHARS)} | same as | "
        f"#{r['other_id']} ({r['other_author']}) {one_line(r['other_claim'], CLAIM_CHARS)} ({r['detail']})"
    )
    where = f" --project {r['project']}" if r["project"] else ""
    return ReviewItem(
        "near-duplicate",
        [r["fact_id"], r["other_id"]],
        what,
        f"cli-org tidy{where} --apply (merges #{r['fact_id']} into #{r['other_id']})",
        project=r["project"],
    )


def _stale(r: dict[str, Any]) -> ReviewItem:
    what = f"#{r['fact_id']} ({r['author']}) {one_line(r['claim'], CLAIM_CHARS)} [source {r['source']}: {r['detail']}]"
    settle = f"cli-org remember ... --supersedes {r['fact_id']}, or cli-org forget {r['fact_id']} WHY"
    return ReviewItem("stale-source", [r["fact_id"]], what, settle, project=r["project"])


# --- the refresh -------------------------------------------------------------------------


@owns_transaction
def claim_refresh(conn: Conn, after: timedelta = REFRESH_AFTER) -> bool:
    """Claim the caller's refresh when the caller is an owner or a team lead and none was
    claimed within `after`; True when this call claimed it (then start it). One statement that
    never waits for a refresh that is running (review.claim)."""
    params = {"after": after.total_seconds()}
    with translated(conn):
        claimed = bool(first(conn, sql("review.due"), params)["yes"])  # a read: most session starts end here
        if claimed:
            claimed = conn.execute(sql("review.claim"), params).fetchone() is not None
        conn.commit()
    return claimed


def start_refresh(agent: str, *, project: str | None, root: Path | None) -> None:
    """Start `cli-org review --refresh --due` as `agent` in a process of its own that outlives
    the caller (a new session, no terminal, its output discarded): the session-start hook
    returns without waiting for it, and whatever it meets never reaches the session."""
    import subprocess  # here: the session-start block imports this module, and rarely starts one

    argv = [sys.executable, "-m", "cli_org", "review", "--refresh", "--due", "--as", agent]
    if project:
        argv += ["--project", project]
    if root is not None:
        argv += ["--root", str(root)]
    env = {k: v for k, v in os.environ.items() if k != "ORG_AGENT"}
    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
        close_fds=True,
    )
