"""Saved runs: store a golden run in eval_runs, load one back by name, list them all."""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from psycopg import errors as pgerr

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError, NotFound
from .golden import CaseResult, Figures, GoldenRun


def git_commit(start: Path | None = None) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=start or Path.cwd(), capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@owns_transaction
def save_run(conn: Conn, name: str, run: GoldenRun, *, golden_file: str, project: str | None) -> int:
    with translated(conn):
        size = first(conn, sql("evaluation.vault_size"))
        try:
            with conn.transaction():
                row = first(
                    conn,
                    sql("evaluation.save_run"),
                    {
                        "name": name,
                        "git_commit": git_commit(),
                        "embedder": size["embedder"],
                        "vault_files": size["files"],
                        "vault_chunks": size["chunks"],
                        "golden_file": golden_file,
                        "k": run.k,
                        "project": project,
                        "summary": json.dumps(
                            {"overall": asdict(run.overall), "by_tag": {t: asdict(f) for t, f in run.by_tag.items()}}
                        ),
                        "cases": json.dumps([asdict(c) for c in run.cases]),
                    },
                )
        except pgerr.UniqueViolation:
            raise InputError(f"a run of yours named {name!r} exists already; pick another name") from None
        except pgerr.CheckViolation:
            raise InputError(f"run name {name!r}: letters, digits and . _ : @ + - only") from None
        conn.commit()
    return int(row["id"])


# The ranges of a stored run's numbers, as the database checks them on new rows
# (migration 0023, org_eval_run_ok); a row stored before is read through the same ranges,
# so no reader does arithmetic on a forged 1e308 or NaN.
_RATES = ("hit_rate", "mrr")
_AMOUNTS = ("n", "chars_median", "chars_p95", "ms_median", "ms_p95")
_MOST = 1e9


def _in_range(name: str, value: object, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{name} {value!r} is not a number from {low:g} to {high:g}")


def _figures(raw: dict[str, Any]) -> Figures:
    figures = Figures(**raw)
    for name in _RATES:
        _in_range(name, getattr(figures, name), 0, 1)
    for name in _AMOUNTS:
        _in_range(name, getattr(figures, name), 0, _MOST)
    return figures


def _case(raw: dict[str, Any]) -> CaseResult:
    case = CaseResult(**raw)
    if case.position is not None:
        _in_range("position", case.position, 1, 1000)
    _in_range("chars", case.chars, 0, _MOST)
    _in_range("ms", case.ms, 0, _MOST)
    return case


@dataclass
class SavedRun:
    name: str  # AUTHOR/NAME when an agent saved it
    author: str | None
    created_at: datetime
    git_commit: str | None
    embedder: str | None
    vault_files: int | None
    k: int
    overall: Figures
    cases: list[CaseResult]
    golden_file: str | None = None
    project: str | None = None


def _label(row: dict[str, Any]) -> str:
    return f"{row['author']}/{row['name']}" if row["author"] else row["name"]


def _named_row(conn: Conn, name: str) -> dict[str, Any]:
    author, _, plain = name.rpartition("/")
    with translated(conn):
        rows = conn.execute(sql("evaluation.get_run"), {"name": plain, "author": author or None}).fetchall()
    if not rows:
        raise NotFound(f"no saved run named {name!r}; see `cli-org eval history`")
    if len(rows) > 1:
        names = ", ".join(_label(r) for r in rows)
        raise InputError(f"several agents saved a run named {name!r}: {names}; name one as AUTHOR/NAME")
    return rows[0]


def _saved(row: dict[str, Any]) -> SavedRun:
    try:
        return SavedRun(
            _label(row),
            row["author"],
            row["created_at"],
            row["git_commit"],
            row["embedder"],
            row["vault_files"],
            row["k"],
            _figures(row["summary"]["overall"]),
            [_case(c) for c in row["cases"]],
            row["golden_file"],
            row["project"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"saved run {_label(row)!r} is malformed ({type(exc).__name__}: {exc})") from None


@owns_transaction
def load_run(conn: Conn, name: str) -> SavedRun:
    """A saved run by NAME (yours first, else the one run of that name) or AUTHOR/NAME.

    Names are unique per author (migration 0008), so a name another agent chose never
    hides or replaces yours; a run that is not what a run should be is refused by name."""
    return _saved(_named_row(conn, name))


@owns_transaction
def load_with_previous(conn: Conn, name: str) -> tuple[SavedRun, SavedRun | None]:
    """The run `name` and the run of the same golden file and k saved just before it (its
    trend's previous point), or None when it is the first of its set."""
    row = _named_row(conn, name)
    with translated(conn):
        before = conn.execute(sql("evaluation.previous_run"), {"id": row["id"]}).fetchone()
    return _saved(row), (_saved(before) if before else None)


@dataclass
class HistoryRow:
    name: str  # AUTHOR/NAME when an agent saved it
    author: str | None
    created_at: datetime
    git_commit: str | None
    embedder: str | None
    vault_files: int | None
    golden_file: str
    k: int
    overall: Figures | None  # None when the saved run is malformed
    problem: str | None = None
    previous: str | None = None  # the run of the same golden file and k saved just before


@dataclass
class Trend:
    """The saved runs of one golden file at one k, oldest first: the only runs whose figures
    can be drawn as one line (another file asks other questions; another k counts other hits)."""

    golden_file: str
    k: int
    runs: list[HistoryRow]


def trends(runs: list[HistoryRow]) -> list[Trend]:
    """`runs` (oldest first) split into one trend per (golden file, k), the trend with the
    newest run first."""
    by_set: dict[tuple[str, int], list[HistoryRow]] = {}
    for r in runs:
        by_set.setdefault((r.golden_file, r.k), []).append(r)
    found = [Trend(g, k, rs) for (g, k), rs in by_set.items()]
    return sorted(found, key=lambda t: (t.runs[-1].created_at, t.golden_file, t.k), reverse=True)


@owns_transaction
def run_history(conn: Conn, *, limit: int | None = None, offset: int = 0) -> list[HistoryRow]:
    """Saved runs, oldest first: every one, or the newest `limit` after skipping the newest
    `offset` (a page of the web page's history); a malformed one is listed with what is wrong."""
    with translated(conn):
        rows = conn.execute(sql("evaluation.runs"), {"limit": limit, "offset": offset}).fetchall()
    out = []
    for r in rows:
        overall, problem = None, None
        try:
            overall = _figures(r["summary"]["overall"])
        except (KeyError, TypeError, ValueError) as exc:
            overall, problem = None, f"malformed ({type(exc).__name__}: {exc})"
        out.append(
            HistoryRow(
                _label(r),
                r["author"],
                r["created_at"],
                r["git_commit"],
                r["embedder"],
                r["vault_files"],
                r["golden_file"],
                r["k"],
                overall,
                problem,
                _label({"name": r["previous_name"], "author": r["previous_author"]}) if r["previous_name"] else None,
            )
        )
    return out
