"""The activity feed: what changed, newest first, by agent and by harness.

Read from what the store already records (sql/activity.sql): facts written (with their
author and `via`), retired and superseded (the fact's row, and memory_restores for a
retirement a restore undid), restored, pins pinned and unpinned, notebook versions, todos
added and done, typed links made and removed (migration 0041); and, only when asked for
("reads"), recall calls and tool calls. Every source is read as the caller, so row-level
security decides what shows: a notebook's versions only to whom may read that notebook
(migration 0013).

Bounded: a page is at most MAX_LIMIT events, each source is walked newest first down its own
time index (migration 0032) and stops after a page, and the next page starts from a cursor
(keyset paging), never from an offset.

Which harness made a write: a fact carries it in `via`; for the other writes the library says
it to the database once per transaction (say_via) and the database stamps it on the rows the
write makes (migration 0032), so a member records its own writes' harness and no one else's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..checks.rules import AGENT_NAME
from ..checks.write import check_field
from ..db import Conn
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError

# Every kind of event, in the feed's words; READS are left out unless asked for.
WRITES = (
    "written",
    "superseded",
    "retired",
    "restored",
    "pinned",
    "unpinned",
    "notebook",
    "todo_added",
    "todo_done",
    "erased",
    "linked",
    "unlinked",
)
READS = ("recall", "tool_call")
KINDS = WRITES + READS
# Names for several kinds at once (--kind facts).
GROUPS = {
    "facts": ("written", "superseded", "retired", "restored", "erased"),
    "pins": ("pinned", "unpinned"),
    "links": ("linked", "unlinked"),
    "todos": ("todo_added", "todo_done"),
    "writes": WRITES,
    "reads": READS,
    "all": KINDS,
}

DEFAULT_LIMIT = 50
MAX_LIMIT = 200  # a page: one screenful, and each source reads at most this many rows + 1
DEFAULT_SINCE = "1d"  # the question the feed answers first: what changed since yesterday?

_SPAN = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_VIA_FILTER = re.compile(r"^[A-Za-z0-9_.-]{1,64}(@[A-Za-z0-9_.-]{1,128})?$")
_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)  # since "all": PostgreSQL's timestamptz reaches it


@dataclass
class ActivityEvent:
    at: datetime
    kind: str  # one of KINDS
    who: str | None  # the agent who did it (None: the admin, for a logged call)
    via: str | None  # the harness it came through, RUNTIME@HOST, where recorded
    fact_id: int | None  # the fact it is about (written ... unpinned; a link's FROM fact)
    ref: int  # the row's id in its own table (a todo's id, a notebook entry's id, ...)
    subject: str | None  # the fact's subject; a notebook's AGENT/STORE; a tool call's face
    detail: str | None  # the claim (cut), the reason, the todo, the notebook change, the query
    project: str | None
    other: int | None  # the fact this one supersedes (written) or was superseded by; a link's TO fact


@dataclass
class Activity:
    events: list[ActivityEvent]
    since: datetime | None  # None: from the beginning
    kinds: list[str]
    next: str | None  # the cursor of the next (older) page; None: this is the last


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """A span back from now (`30m`, `12h`, `1d`, `2w`), a date or time (`2026-12-01`,
    `2026-12-01T09:00`, UTC unless it says its zone), or `all` (None: no bound)."""
    if text is None or not text.strip():
        text = DEFAULT_SINCE
    text = text.strip()
    if text == "all":
        return None
    now = now or datetime.now(UTC)
    span = _SPAN.match(text)
    if span:
        return now - timedelta(**{_UNITS[span[2]]: int(span[1])})
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(
            f"since {text[:40]!r} is not a span (30m, 12h, 1d, 2w), a date or time (2026-12-01, "
            "2026-12-01T09:00) or 'all'"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_kinds(names: list[str] | tuple[str, ...] | None) -> list[str]:
    """The kinds asked for (a kind or a group name, each; comma-separated works too), in the
    feed's order; none asked for: every write (WRITES)."""
    wanted: set[str] = set()
    for name in names or ():
        for part in name.split(","):
            part = part.strip()
            if not part:
                continue
            if part in GROUPS:
                wanted.update(GROUPS[part])
            elif part in KINDS:
                wanted.add(part)
            else:
                raise InputError(
                    f"kind {part[:40]!r} is not one of {', '.join(KINDS)}, or a group: {', '.join(GROUPS)}"
                )
    return [k for k in KINDS if k in wanted] if wanted else list(WRITES)


def cursor_of(event: ActivityEvent, src: int, sub: int) -> str:
    return f"{event.at.isoformat()}~{src}~{event.ref}~{sub}"


def _parse_cursor(text: str) -> tuple[datetime, int, int, int]:
    try:
        at, src, ref, sub = text.split("~")
        moment = datetime.fromisoformat(at)
        if moment.tzinfo is None:
            raise ValueError(at)
        return moment, int(src), int(ref), int(sub)
    except ValueError:
        raise InputError(f"before {text[:60]!r} is not a cursor this feed gave (the `next` of a page)") from None


@owns_transaction
def feed(
    conn: Conn,
    *,
    since: datetime | None = None,
    agent: str | None = None,
    via: str | None = None,
    kinds: list[str] | tuple[str, ...] | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Activity:
    """One page of what happened since `since` (None: ever), newest first, as the caller may
    see it: by `agent` (who did it), through `via` (a harness, `claude-code`, or a whole
    `claude-code@host`), of `kinds` (parse_kinds: every write when none), older than the
    cursor `before` (the previous page's `next`)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit is 1 to {MAX_LIMIT}, not {limit}")
    if agent is not None and not AGENT_NAME.match(agent):
        raise InputError(f"agent {agent[:40]!r} is not an agent's name (a-z, 0-9, '_' or '-', at most 32)")
    if via is not None and not _VIA_FILTER.match(via):
        raise InputError(f"via {via[:80]!r} must be a harness (claude-code) or runtime@host")
    chosen = parse_kinds(kinds)
    params = query_params(since=since, agent=agent, via=via, kinds=chosen, before=before, limit=limit)
    with translated(conn):
        # never a prepared statement: its generic plan keeps every branch and filter that the
        # parameters switch off, and walked whole tables (p50 191 ms where the plan for the
        # values took 69 ms, python -m benchmarks.activity)
        rows = conn.execute(sql("activity.feed"), params, prepare=False).fetchall()
    events, keys = [], []
    for row in rows[:limit]:
        src, sub = row.pop("src"), row.pop("sub")
        events.append(ActivityEvent(**row))
        keys.append((src, sub))
    more = len(rows) > limit
    next_cursor = cursor_of(events[-1], *keys[-1]) if more and events else None
    return Activity(events, since, chosen, next_cursor)


def query_params(
    *, since: datetime | None, agent: str | None, via: str | None, kinds: list[str], before: str | None, limit: int
) -> dict[str, object]:
    """The parameters of sql activity.feed for a page (benchmarks/activity.py explains the
    statement with them)."""
    cursor = _parse_cursor(before) if before else (None, None, None, None)
    params: dict[str, object] = {f"k_{k}": k in kinds for k in KINDS}
    params.update(
        since=since or _EARLIEST,
        agent=agent,
        via_name=via.split("@", 1)[0] if via else None,  # the harness's name: an index's key
        via_whole=via if via and "@" in via else None,
        b_at=cursor[0],
        b_src=cursor[1],
        b_ref=cursor[2],
        b_sub=cursor[3],
        n=limit + 1,  # one more than a page: whether another follows
    )
    return params


def say_via(conn: Conn, via: str | None) -> None:
    """Tell the database which harness the writes of this transaction come through (None:
    not known); it stamps it on the rows they make (migration 0032). Call it inside the
    write's transaction: the setting ends with it (the long-lived-process rule)."""
    if via is None:
        return
    check_field("via", via)
    conn.execute(sql("activity.say_via"), {"via": via})
