"""What a fact's live links say where recall and the context block show it (issue 36):
"confirmed by scout" (other agents saw it too), "contradicts #12" / "contradicted by #14" (a
current fact disagrees: the agent chooses and says which it trusted), and the current facts
it depends on, which recall brings along one hop (`needed by #7`).

One statement reads the links of every fact shown (`links.marks`), through the caller's own
connection: row-level security hides a link whose other fact the caller may not read (a
restricted project), so nothing of that fact shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..db import Conn
from ..db.queries import sql
from ..store.facts import Fact

# The one line that explains the contradiction mark, said once under an answer or a block
# that carries one: 80 characters (the context block's entry adds 2 and a newline, its
# section title "Marks:" 7 and a blank line 1).
NOTE = "contradicts #N: two current facts disagree; choose one and say which you trusted"


# A mark names at most this many agents or facts, then says how many more: any member can
# write facts that contradict or confirm one fact, and fifty of them must not make its line
# a list (a recall line stays one readable line; the --json lists stay whole).
MARK_NAMES = 3


def _some(items: list[str]) -> str:
    more = len(items) - MARK_NAMES
    return ", ".join(items[:MARK_NAMES]) + (f" and {more} more" if more > 0 else "")


@dataclass
class Marks:
    confirmed_by: list[str] = field(default_factory=list)  # agents who confirmed it (not its authors)
    contradicts: list[int] = field(default_factory=list)  # current facts it contradicts
    contradicted_by: list[int] = field(default_factory=list)  # current facts that contradict it
    needs: list[Fact] = field(default_factory=list)  # current facts it depends on, oldest link first
    confirms: list[int] = field(default_factory=list)  # current facts of other agents it says again

    @property
    def disputed(self) -> bool:
        return bool(self.contradicts or self.contradicted_by)


def read_marks(conn: Conn, fact_ids: list[int], authors: dict[int, list[str]] | None = None) -> dict[int, Marks]:
    """The marks of each fact that has any (one statement; none when there is no fact).
    `authors`: who wrote each fact (every copy's author), left out of its confirmers."""
    if not fact_ids:
        return {}
    out: dict[int, Marks] = {}
    names = [f.name for f in fields(Fact)]
    for row in conn.execute(sql("links.marks"), {"ids": list(dict.fromkeys(fact_ids))}):
        hit, kind = row["hit"], row["link_kind"]
        other = Fact(**{n: row[n] for n in names}) if row["id"] is not None else None
        live = other is not None and other.current
        marks = out.setdefault(hit, Marks())
        if kind == "confirms" and row["link_to"] == hit:
            # an agent's own confirmation, or a current fact of another agent saying the same
            who = row["link_author"] if row["link_from"] is None else (other.author if live and other else None)
            if who and who not in marks.confirmed_by and who not in (authors or {}).get(hit, []):
                marks.confirmed_by.append(who)
        elif kind == "confirms" and live and other:  # this fact says another agent's again
            marks.confirms.append(other.id)
        elif kind == "contradicts" and live and other:
            (marks.contradicts if row["link_from"] == hit else marks.contradicted_by).append(other.id)
        elif kind == "depends-on" and live and other and row["link_from"] == hit:
            marks.needs.append(other)
    return {k: v for k, v in out.items() if v.confirmed_by or v.disputed or v.needs or v.confirms}


def folded(shown: list[int], marks: dict[int, Marks]) -> set[int]:
    """The facts shown that say again what another fact shown says (an agent's own words of
    another agent's fact, linked `confirms` by `remember`: issue 36): shown once, as the fact
    they confirm, which is marked "confirmed by" their authors. A chain folds into its end."""
    ids = set(shown)
    return {i for i in shown if i in marks and any(c in ids and c != i for c in marks[i].confirms)}


def mark_text(marks: Marks | None, needed_by: int | None = None) -> str:
    """The marks as a line ends with them: " [confirmed by scout; contradicts #12]" ("" for none)."""
    parts = []
    if needed_by is not None:
        parts.append(f"needed by #{needed_by}")
    if marks is not None:
        if marks.confirmed_by:
            parts.append("confirmed by " + _some(marks.confirmed_by))
        if marks.confirms:
            parts.append("confirms " + _some([f"#{i}" for i in marks.confirms]))
        if marks.contradicts:
            parts.append("contradicts " + _some([f"#{i}" for i in marks.contradicts]))
        if marks.contradicted_by:
            parts.append("contradicted by " + _some([f"#{i}" for i in marks.contradicted_by]))
    return f" [{'; '.join(parts)}]" if parts else ""
