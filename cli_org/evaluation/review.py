"""The review list's refresh (issue 36; the list itself: store/review.py): the two scans whose
items are stored, tidy's merges over every current fact the refresher reads and the stale
sources of the session's project in its checkout, written under the refresher's run row (the
refresh's lock, migration 0043). Started in the background by an owner's or a team lead's
session start (session/hooks.py), or by `cli-org review --refresh`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from psycopg import errors as pgerr
from psycopg.pq import TransactionStatus

from ..db import Conn, first
from ..db.errors import first_line, translated
from ..db.queries import sql
from ..db.session import ConnectionRuleBroken
from ..errors import AccessDenied, DatabaseError
from ..store.review import REFRESH_AFTER, is_reviewer
from ..text import one_line

_FACT_WHERE = re.compile(r"^fact #(\d+)$")  # evaluation/stale.py's StaleItem.where for a fact


@dataclass
class Refreshed:
    ran: bool  # False: a refresh that finished while this one waited had done the work
    near_duplicates: int
    stale_sources: int | None  # None: no project and root to judge sources in
    refreshed_at: datetime | None


def refresh(
    conn: Conn,
    lock: Conn,
    *,
    project: str | None = None,
    root: Path | None = None,
    force: bool = True,
    after: timedelta = REFRESH_AFTER,
) -> Refreshed:
    """Refresh the caller's items: tidy's merges over every current fact it reads and, with a
    project and its checkout's root, that project's stale sources. `lock` is a second idle
    connection as the same agent: it holds the agent's run row for the whole refresh (the
    refresh's lock; taken without waiting: DatabaseError names a refresh running already) and
    records the end; `conn` does the work. Without `force` (a refresh a session start began),
    one that another finished within `after` is not run again. Both connections are idle
    again on every path."""
    for c in (conn, lock):
        if c.info.transaction_status != TransactionStatus.IDLE:
            raise ConnectionRuleBroken("refresh takes two idle connections")
    try:
        with translated(lock):
            if not is_reviewer(lock):
                raise AccessDenied("only an owner or a team lead refreshes the review list (it waits for them)")
            lock.execute(sql("review.ensure_run"))
            lock.commit()
        run = first(lock, sql("review.hold"))
    except pgerr.LockNotAvailable:
        lock.rollback()
        raise DatabaseError("a refresh of the review list by this agent is running now; it ends on its own") from None
    except BaseException:
        lock.rollback()
        raise
    try:
        done = run["refreshed_at"]
        if not force and done is not None and done > datetime.now(UTC) - after:
            lock.rollback()
            return Refreshed(False, 0, None, done)
        near, stale_count = _scan(conn, project, root)
        with translated(lock):
            lock.execute(sql("review.finished"), {"error": None})
            when = first(lock, sql("review.run"))["refreshed_at"]
            lock.commit()
        return Refreshed(True, near, stale_count, when)
    except BaseException as exc:
        conn.rollback()
        try:
            with translated(lock):  # still holding the row: the record of the failure
                lock.execute(sql("review.failed"), {"error": one_line(first_line(exc), 400)})
                lock.commit()
        except Exception:  # kept when it can be; the failure itself is raised either way
            lock.rollback()
        raise


def _scan(conn: Conn, project: str | None, root: Path | None) -> tuple[int, int | None]:
    """The two scans, then their items written in one transaction of `conn`."""
    from ..store.tidy import tidy
    from .stale import stale

    merges = [p for p in tidy(conn, roots=[]).proposals if p.action == "merge" and p.kept_id is not None]
    stale_ids: dict[int, str] = {}
    judged = project is not None and root is not None and root.is_dir()
    if judged and root is not None:
        for item in stale(conn, root).items:
            m = _FACT_WHERE.match(item.where)
            if m and int(m[1]) not in stale_ids:
                stale_ids[int(m[1])] = item.problem
    with translated(conn):
        if stale_ids:  # only the project's own facts: another project's paths mean another checkout
            rows = conn.execute(sql("review.fact_projects"), {"ids": list(stale_ids)}).fetchall()
            keep = {r["id"] for r in rows if r["project"] == project}
            stale_ids = {i: p for i, p in stale_ids.items() if i in keep}
        found = [p.fact_id for p in merges]
        conn.execute(sql("review.forget_items"), {"kind": "near-duplicate", "project": None, "fact_ids": found})
        for p in merges:
            detail = f"{round(100 * float(p.evidence.get('overlap', 1)))}% of the words"
            params = {"kind": "near-duplicate", "fact_id": p.fact_id, "other_id": p.kept_id, "detail": detail}
            conn.execute(sql("review.keep_item"), params)
        if judged:
            params = {"kind": "stale-source", "project": project, "fact_ids": list(stale_ids)}
            conn.execute(sql("review.forget_items"), params)
            for fact_id, problem in stale_ids.items():
                params = {"kind": "stale-source", "fact_id": fact_id, "other_id": None, "detail": problem[:200]}
                conn.execute(sql("review.keep_item"), params)
        conn.commit()
    return len(merges), len(stale_ids) if judged else None
