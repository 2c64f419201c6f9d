"""Bounded notebooks: two small stores per agent, `memory` (its own notes) and `user` (about
the person it works for), kept in PostgreSQL one row per entry, every change versioned.

The rules (docs/facts.md, Notebooks), each held here and, where a member could go around the
library with plain SQL, in the database too (migration 0013):
- an entry identical to a live one is a no-op that says so;
- a write that would pass the store's cap is refused with the current usage and the entries
  listed; nothing is dropped or trimmed to make room;
- replace, patch and remove need exactly one live entry containing the substring (patch: a
  span that occurs once in it, replaced in place; replace swaps the whole entry);
- the write checks of facts apply to every entry (checks.check_text; the database runs its
  own copy of the checks in the trigger).
Usage is the sum of the live entries' lengths in characters.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..checks.rules import NOTEBOOK_CAPS, NOTEBOOK_STORES
from ..checks.write import check_text
from ..db import Conn, first
from ..db.connect import current_agent
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied, DatabaseError, InputError, NotFound
from ..local.files import read_file
from ..text import one_line
from .activity import say_via

SEPARATOR = "§"  # a line holding only this separates entries in a notebook file
_SEPARATOR_LINE = re.compile(r"^[ \t]*§[ \t]*$", re.MULTILINE)
PREVIEW = 80  # characters of an entry shown in a refusal


@dataclass
class Entry:
    id: int
    agent: str
    store: str
    body: str
    version: int
    created_at: datetime
    changed_at: datetime
    changed_by: str | None


@dataclass
class Store:
    agent: str
    target: str
    cap: int
    used: int
    percent: int
    entries: list[Entry] = field(default_factory=list)


@dataclass
class Notebook:
    agent: str
    stores: list[Store]


@dataclass
class Change:
    """What a write did: `added`, `replaced`, `patched`, `removed`, or `unchanged` (and why)."""

    target: str
    action: str
    entry_id: int | None
    used: int
    cap: int
    note: str | None = None


@dataclass
class Version:
    entry_id: int
    version: int
    agent: str
    store: str
    action: str  # added, replaced, removed
    body: str
    at: datetime
    by: str | None


@dataclass
class Imported:
    target: str
    file: str
    entries: int  # in the file
    added: int
    already: int  # identical to a live entry (or repeated in the file): nothing to do
    used: int
    cap: int


class NotebookFull(InputError):
    """A write would pass the store's cap; carries the usage and the live entries."""

    def __init__(self, message: str, used: int, cap: int, entries: list[Entry]):
        super().__init__(message)
        self.used, self.cap, self.entries = used, cap, entries


class NoSingleMatch(InputError):
    """replace / patch / remove found no entry, or several, containing the substring (or
    patch's span occurs more than once in its entry)."""

    def __init__(self, message: str, candidates: list[Entry]):
        super().__init__(message)
        self.candidates = candidates


def _target(target: str) -> str:
    if target not in NOTEBOOK_STORES:
        raise InputError(f"--target is {' or '.join(NOTEBOOK_STORES)}, not {target!r}")
    return target


def check_entry(text: str, target: str) -> str:
    """An entry as it will be stored (outer space stripped, line ends as \\n), or InputError."""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        raise InputError("the entry is empty")
    if _SEPARATOR_LINE.search(text):
        raise InputError(f"the entry contains a line holding only {SEPARATOR}, the entry separator")
    cap = NOTEBOOK_CAPS[_target(target)]
    if len(text) > cap:
        raise InputError(f"the entry is {len(text)} chars; the whole {target} notebook holds {cap}")
    # The write checks of facts; a line break inside an entry is allowed and read as a space.
    check_text("entry", text.replace("\n", " "))
    return text


def parse_entries(text: str) -> list[str]:
    """The entries of a notebook file: separated by lines holding only §, empty ones dropped."""
    text = text.replace("\r\n", "\n").removeprefix("\ufeff")
    return [part.strip() for part in _SEPARATOR_LINE.split(text) if part.strip()]


def _preview(text: str) -> str:
    return one_line(text, PREVIEW)


def _listed(entries: list[Entry]) -> str:
    return "; ".join(f'#{e.id} "{_preview(e.body)}" ({len(e.body)})' for e in entries) or "(none)"


def _live(conn: Conn, agent: str, target: str) -> list[Entry]:
    return [Entry(**r) for r in conn.execute(sql("notebook.live"), {"agent": agent, "store": target})]


def _store(agent: str, target: str, entries: list[Entry]) -> Store:
    cap = NOTEBOOK_CAPS[target]
    used = sum(len(e.body) for e in entries)
    return Store(agent, target, cap, used, used * 100 // cap, entries)


def _whose(conn: Conn, agent: str | None) -> str:
    """The agent whose notebook is read: the caller's own, or one the caller may read."""
    me = current_agent(conn)
    if agent is None or agent == me:
        return me
    row = first(conn, sql("notebook.agent_exists"), {"agent": agent})
    if not row["found"]:
        raise NotFound(f"no agent named {agent!r}")
    if not row["readable"]:
        raise AccessDenied(
            f"agent {me} may not read the notebook of {agent}: only {agent}, their team lead or an owner may"
        )
    return agent


@owns_transaction
def show(conn: Conn, target: str | None = None, *, agent: str | None = None) -> Notebook:
    """The caller's notebook (or `agent`'s, for an owner or that agent's team lead)."""
    targets = NOTEBOOK_STORES if target is None else (_target(target),)
    with translated(conn):
        whose = _whose(conn, agent)
        return Notebook(whose, [_store(whose, t, _live(conn, whose, t)) for t in targets])


def _full(target: str, store: Store, after: int, what: str) -> NotebookFull:
    return NotebookFull(
        f"the {target} notebook holds {store.used}/{store.cap} chars; {what} would make it {after}/{store.cap}: "
        f"nothing was changed; shorten, replace or remove entries first. Entries: {_listed(store.entries)}",
        store.used,
        store.cap,
        store.entries,
    )


@owns_transaction
def add(conn: Conn, target: str, text: str, *, via: str | None = None) -> Change:
    """Add one entry to the caller's store; identical to a live entry: nothing to do."""
    text = check_entry(text, target)
    with translated(conn):
        me = current_agent(conn)
        conn.execute(sql("notebook.lock"))
        say_via(conn, via)
        store = _store(me, target, _live(conn, me, target))
        for e in store.entries:
            if e.body == text:
                return Change(target, "unchanged", e.id, store.used, store.cap, f"entry #{e.id} already says this")
        after = store.used + len(text)
        if after > store.cap:
            raise _full(target, store, after, f"this entry ({len(text)} chars)")
        new_id = first(conn, sql("notebook.insert"), {"store": target, "body": text})["id"]
        return Change(target, "added", new_id, after, store.cap)


def _one(store: Store, substring: str, verb: str) -> Entry:
    if not substring:
        raise InputError(f"say which entry to {verb}: the substring is empty")
    found = [e for e in store.entries if substring in e.body]
    if len(found) == 1:
        return found[0]
    if not found:
        raise NoSingleMatch(
            f'no entry of the {store.target} notebook contains "{_preview(substring)}"; '
            f"entries: {_listed(store.entries)}",
            store.entries,
        )
    raise NoSingleMatch(
        f'{len(found)} entries of the {store.target} notebook contain "{_preview(substring)}"; give a substring '
        f"that only one contains. Candidates: {_listed(found)}",
        found,
    )


@owns_transaction
def replace(conn: Conn, target: str, old: str, new: str, *, via: str | None = None) -> Change:
    """Replace the one entry containing `old` with `new` (the whole entry becomes `new`)."""
    new = check_entry(new, target)
    return _rewrite(conn, target, old, "replace", lambda entry: new, via=via)


@owns_transaction
def patch(conn: Conn, target: str, old: str, new: str, *, via: str | None = None) -> Change:
    """Replace the span `old` with `new` inside the one entry containing it ("oat milk" to
    "soy milk"); the rest of the entry stays. The span must occur once: in one entry, once
    in it. The entry it makes is checked as any entry is (the cap, the write checks)."""

    def patched(entry: Entry) -> str:
        times = entry.body.count(old)
        if times > 1:
            raise NoSingleMatch(
                f'"{_preview(old)}" occurs {times} times in entry #{entry.id} of the {target} notebook; '
                "give a span that occurs once",
                [entry],
            )
        return check_entry(entry.body.replace(old, new, 1), target)

    return _rewrite(conn, target, old, "patch", patched, via=via)


def _rewrite(
    conn: Conn, target: str, old: str, verb: str, new_body: Callable[[Entry], str], *, via: str | None
) -> Change:
    """Give the one entry containing `old` the body `new_body(entry)`, under the store's rules."""
    _target(target)
    with translated(conn):
        me = current_agent(conn)
        conn.execute(sql("notebook.lock"))
        say_via(conn, via)
        store = _store(me, target, _live(conn, me, target))
        entry = _one(store, old, verb)
        new = new_body(entry)
        if entry.body == new:
            return Change(target, "unchanged", entry.id, store.used, store.cap, f"entry #{entry.id} already says this")
        twin = next((e for e in store.entries if e.body == new), None)
        if twin is not None:
            raise InputError(f"entry #{twin.id} already says this; remove #{entry.id} instead of changing it")
        after = store.used - len(entry.body) + len(new)
        if after > store.cap:
            doing = "replacing" if verb == "replace" else "patching"
            raise _full(target, store, after, f"{doing} #{entry.id} ({len(entry.body)} chars by {len(new)})")
        first(conn, sql("notebook.replace"), {"id": entry.id, "body": new})
        return Change(target, f"{verb}d" if verb == "replace" else "patched", entry.id, after, store.cap)


@owns_transaction
def remove(conn: Conn, target: str, substring: str, *, via: str | None = None) -> Change:
    """Mark the one entry containing `substring` removed (kept, with who and when)."""
    _target(target)
    with translated(conn):
        me = current_agent(conn)
        conn.execute(sql("notebook.lock"))
        say_via(conn, via)
        store = _store(me, target, _live(conn, me, target))
        entry = _one(store, substring, "remove")
        first(conn, sql("notebook.remove"), {"id": entry.id})
        return Change(target, "removed", entry.id, store.used - len(entry.body), store.cap)


@owns_transaction
def history(conn: Conn, target: str | None = None, *, agent: str | None = None) -> list[Version]:
    """Every version of every entry of the caller's notebook (or `agent`'s), oldest first."""
    if target is not None:
        _target(target)
    with translated(conn):
        whose = _whose(conn, agent)
        return [Version(**r) for r in conn.execute(sql("notebook.history"), {"agent": whose, "store": target})]


HISTORY_PAGE = 50  # versions per page of an agent's notebook history (web page)


@dataclass
class DiffLine:
    op: str  # "+" added, "-" removed, " " kept
    text: str


@dataclass
class VersionChange:
    """One stored version of an entry, with what changed from the entry's version before."""

    entry_id: int
    version: int
    store: str
    action: str  # added, replaced, removed
    body: str
    at: datetime
    by: str | None
    delta: int  # characters the store gained (negative: lost) with this version
    diff: list[DiffLine]


@dataclass
class NotebookHistory:
    agent: str
    target: str | None  # one store, or None: both
    versions: list[VersionChange]  # newest first, one page
    page: int
    more: bool
    refused: str | None = None  # why the history is not shown; then `versions` is empty


def line_diff(before: str | None, after: str, action: str) -> list[DiffLine]:
    """What changed between two versions of an entry, line by line: every line added for a
    new entry, every line removed for a removed one, a line diff for a replacement."""
    if action == "removed":
        return [DiffLine("-", line) for line in after.splitlines()]
    if before is None or action == "added":
        return [DiffLine("+", line) for line in after.splitlines()]
    return [
        DiffLine(line[0], line[2:])
        for line in difflib.ndiff(before.splitlines(), after.splitlines())
        if line[:1] in ("+", "-", " ")
    ]


@owns_transaction
def history_page(
    conn: Conn, agent: str, target: str | None = None, *, page: int = 1, per_page: int = HISTORY_PAGE
) -> NotebookHistory:
    """One page of every stored version of `agent`'s notebook, newest first, each with its
    line diff from the entry's version before. Where the caller may not read that notebook
    (org_notebook_readable, the rule row-level security applies to notebook_versions) the
    history is empty and `refused` says why; an unknown agent is NotFound."""
    if target is not None:
        _target(target)
    if not 1 <= page <= 100_000 or not 1 <= per_page <= 500:
        raise InputError(f"page {page} of {per_page} versions is out of range")
    with translated(conn):
        try:
            whose = _whose(conn, agent)
        except AccessDenied as exc:
            conn.rollback()
            return NotebookHistory(agent, target, [], page, False, str(exc))
        params = {"agent": whose, "store": target, "limit": per_page + 1, "offset": (page - 1) * per_page}
        rows = conn.execute(sql("notebook.history_page"), params).fetchall()
    changes = [
        VersionChange(
            r["entry_id"],
            r["version"],
            r["store"],
            r["action"],
            r["body"],
            r["at"],
            r["by"],
            -len(r["body"])
            if r["action"] == "removed"
            else len(r["body"]) - (len(r["before"]) if r["before"] is not None and r["action"] != "added" else 0),
            line_diff(r["before"], r["body"], r["action"]),
        )
        for r in rows[:per_page]
    ]
    return NotebookHistory(whose, target, changes, page, len(rows) > per_page)


@owns_transaction
def import_file(conn: Conn, target: str, path: Path) -> Imported:
    """Bring a notebook file (entries separated by lines holding §) into the caller's store,
    under the same rules, in one transaction: every entry arrives, or nothing changes and the
    refusal names each entry that did not fit and why."""
    _target(target)
    data = read_file(Path(path)).data  # the one safe read: a regular file, bounded (files.py)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 ({exc.reason} at byte {exc.start}); nothing was imported") from None
    raw = parse_entries(text)
    if not raw:
        raise InputError(f"{path} holds no entries (entries are separated by lines holding only {SEPARATOR})")
    problems: list[str] = []
    checked: list[tuple[int, str]] = []
    for n, entry in enumerate(raw, 1):
        try:
            checked.append((n, check_entry(entry, target)))
        except InputError as exc:
            problems.append(f'entry {n} "{_preview(entry)}": {exc}')
    with translated(conn):
        me = current_agent(conn)
        conn.execute(sql("notebook.lock"))
        store = _store(me, target, _live(conn, me, target))
        known = {e.body for e in store.entries}
        new: list[str] = []
        already = 0
        used = store.used
        for n, entry in checked:
            if entry in known:
                already += 1
                continue
            if used + len(entry) > store.cap:
                problems.append(
                    f'entry {n} "{_preview(entry)}": does not fit ({len(entry)} chars; {used}/{store.cap} used by then)'
                )
                continue
            known.add(entry)
            new.append(entry)
            used += len(entry)
        if problems:
            raise InputError(
                f"nothing imported from {path}: {len(problems)} of {len(raw)} entries did not fit "
                f"(the {target} notebook holds {store.used}/{store.cap} chars): " + "; ".join(problems)
            )
        for entry in new:
            conn.execute(sql("notebook.insert"), {"store": target, "body": entry})
        # Before reporting success: every entry of the file is now a live entry of the store.
        arrived = {e.body for e in _live(conn, me, target)}
        missing = [n for n, entry in checked if entry not in arrived]
        if missing:
            raise DatabaseError(f"nothing imported from {path}: entries {missing} did not arrive")
        return Imported(target, str(path), len(raw), len(new), already, used, store.cap)
