"""The tidy-up: proposals, with evidence, to merge near-duplicate facts and to retire facts
whose source file is gone; `apply` acts with the caller's rights and logs each change.
Facts whose cited file changed are proposed for review only.

Never by age. Three rules, each in one place:

- Near duplicates (`near_duplicate` and `scope`, in duplicates.py: `remember` refuses a new
  one by the same rule): two current facts of the same subject (case and outer space aside)
  whose claims share at least DUPLICATE_OVERLAP of their words and state the same numbers in
  the same order,
  both of one project or one of them org-wide, whoever wrote them. A subject stays part of
  the rule: the same short claim ("runs at 02:00") says different things of deploys and of
  backups.
- Missing sources (`missing_source`): a fact of a project whose source is a relative path
  that exists under none of the roots given (the project root, the vault). Org-wide facts are
  never retired for a missing file: a relative path says nothing about which checkout it
  meant. URLs, #messages, t_cards and absolute or home paths are never judged.
- Changed sources (`changed_source`, the rule in sources.py): a fact whose cited file, or
  cited lines, no longer hash as when it was written (the hash `remember` stored). Shown for
  review and never applied: a changed file does not make the fact false, a person (or the
  agent) reads it and supersedes or keeps the fact.

Which fact a merge keeps (`strength`): a fact is never edited, so the kept one must already
hold what matters. First what cannot move to another fact: the stronger kind
(rules.KIND_STRENGTH), confirmed before inferred (rules.CONFIDENCES), org-wide before a
project's (an org-wide fact reaches every session, a project's only that project's: keeping
the org-wide copy takes nothing from anyone, keeping the project's would take the claim from
every other project). Then the pin, which can move, and the newest last. When the retired
fact still holds something stronger, its pin moves to the kept fact in the same scope (unpin,
then pin, through org_unpin and org_pin, so the caps hold); anything else stronger (a kind,
a confidence, a reach, a pin with no place on the kept fact) cannot move, and the proposal
says it `needs_person` and why: `apply` skips it unless forced.

Across authors: each agent's assertion is its own row (migration 0008, claim squatting), so a
merge of two authors' facts is applied only by someone who may retire both (their team lead
or an owner: org_may_retire); a member's own tidy never retires its claim for another's, nor
the reverse. It records who agreed: a `confirms` link from the retired fact to the kept one
(store/links.py), so the kept fact stays "confirmed by" the retired one's author.

Applying: a merge supersedes the retired fact by the kept one (org_supersede) when the caller
wrote the kept fact and it supersedes nothing yet; otherwise it forgets the retired fact
naming the kept one (org_forget), which needs only forget's rights. A missing source is
forgotten. Either way memory_tidy_log records the change with its evidence, and the fact
comes back with `cli-org restore` (a superseded one after its successor is retired).
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psycopg import errors as pgerr

from ..checks.rules import CONFIDENCES, KIND_STRENGTH
from ..checks.write import source_form
from ..db import Conn, first
from ..db.errors import first_line, translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied, InputError, NotFound
from ..local.files import FileRefused, lstat_under
from .activity import say_via
from .duplicates import DUPLICATE_OVERLAP, near_duplicate, scope
from .facts import Fact
from .links import add_link
from .sources import changed
from .sources import tidy_roots as tidy_roots  # the roots `tidy` judges under, for its faces

Pins = dict[int, str | None]  # fact id -> the scope of its live pin (None: org-wide)


@dataclass
class Standing:
    """What a merge weighs of one fact, shown for both facts before it is applied."""

    id: int
    author: str
    kind: str
    confidence: str
    project: str | None  # None: org-wide
    pinned: bool
    pin_project: str | None  # the pin's scope when pinned (None: org-wide)


@dataclass
class Proposal:
    action: str  # "merge", "missing_source" or "changed_source" (for review: never applied)
    fact_id: int
    kept_id: int | None  # the fact a merge keeps
    subject: str
    claim: str
    author: str
    project: str | None
    evidence: dict[str, Any]
    done: str | None = None  # after apply: "superseded" or "forgotten"
    error: str | None = None  # after apply: why it could not be done
    retired: Standing | None = None  # a merge: the fact it retires (this proposal's fact)
    kept: Standing | None = None  # a merge: the fact it keeps
    moves_pin: bool = False  # a merge: the retired fact's pin goes to the kept fact
    needs_person: str | None = None  # a merge that would lose something: why; skipped unless forced
    skipped: bool = False  # after apply: needs a person and was not forced


@dataclass
class TidyReport:
    project: str | None
    applied: bool
    roots: list[str]
    threshold: float
    proposals: list[Proposal] = field(default_factory=list)


def missing_source(fact: Fact, roots: list[Path]) -> dict[str, Any] | None:
    """The evidence that a project fact's source file is gone, or None."""
    if fact.project is None or not roots or source_form(fact.source) != "path":
        return None
    path = re.sub(r":\d+(-\d+)?$", "", fact.source)
    if path.startswith(("/", "~")):
        return None
    looked = [os.path.join(root, path) for root in roots]
    # Walked component by component without following a symlink (local/files.py): 12 µs a
    # source against 3 for os.path.exists (10,000 missing sources: 122 against 33 ms).
    for root in roots:
        try:
            if lstat_under(root, path) is not None:
                return None
        except FileRefused:  # outside the root or through a symlink: not judged, never retired
            return None
    return {"rule": "missing_source", "source": fact.source, "looked_in": looked}


def strength(f: Fact, pins: Pins) -> tuple[int, int, bool, bool, bool, int]:
    """A fact's weight in a merge, larger is stronger, in the order of the module's docstring:
    kind, confidence, reach (org-wide), then pinned, pinned org-wide, and the newest."""
    pinned = f.id in pins
    return (
        -KIND_STRENGTH.index(f.kind),
        -CONFIDENCES.index(f.confidence),
        f.project is None,
        pinned,
        pinned and pins[f.id] is None,
        f.id,
    )


def _where(project: str | None) -> str:
    return "org-wide" if project is None else f"in project {project}"


def weigh(retired: Fact, kept: Fact, pins: Pins) -> tuple[bool, list[str]]:
    """Whether the retired fact's pin moves to the kept one, and what stronger it holds that
    cannot move (empty: the merge loses nothing)."""
    r, k = retired, kept
    lost = []
    if KIND_STRENGTH.index(r.kind) < KIND_STRENGTH.index(k.kind):
        lost.append(f"#{r.id} is a {r.kind} and #{k.id} a {k.kind} (a fact's kind never changes)")
    if CONFIDENCES.index(r.confidence) < CONFIDENCES.index(k.confidence):
        lost.append(f"#{r.id} is {r.confidence} and #{k.id} {k.confidence}")
    if r.project is None and k.project is not None:
        lost.append(f"#{r.id} is org-wide and #{k.id} only in project {k.project}")
    if r.id not in pins:
        return False, lost
    pin = pins[r.id]
    if k.id in pins:  # a fact holds one pin; the kept one's covers the retired one's if as wide
        if pins[k.id] is not None and pins[k.id] != pin:
            lost.append(f"#{r.id} is pinned {_where(pin)} and #{k.id} is pinned {_where(pins[k.id])}")
        return False, lost
    if k.project is not None and pin != k.project:
        lost.append(f"#{r.id} is pinned {_where(pin)}, where #{k.id} (of project {k.project}) cannot be")
        return False, lost
    return True, lost


def _comparable(a: Fact, b: Fact) -> bool:
    """Facts one merge may join: of one project, or one of them org-wide."""
    return a.project == b.project or a.project is None or b.project is None


def proposals_for(
    current: list[Fact],
    roots: list[Path],
    threshold: float = DUPLICATE_OVERLAP,
    pins: Pins | None = None,
    project: str | None = None,
    hashes: dict[int, str] | None = None,
) -> list[Proposal]:
    """Every proposal for these current facts, merges first; pure (reads files only). With
    `project`, only the proposals that retire a fact of that project. `hashes`: the source
    hash stored with each fact that has one (migration 0042)."""
    pins = pins or {}
    out: list[Proposal] = []
    groups: dict[str, list[Fact]] = defaultdict(list)
    for f in current:
        groups[scope(f.author, f.subject, f.project)[1]].append(f)  # the rule's subject key
    merged: set[int] = set()
    for group in groups.values():
        kept: list[Fact] = []
        for f in sorted(group, key=lambda g: strength(g, pins), reverse=True):  # the strongest is kept
            for keeper in kept:
                evidence = _comparable(f, keeper) and near_duplicate(f.claim, keeper.claim, threshold)
                if evidence:
                    evidence["kept_claim"] = keeper.claim
                    out.append(_merge(f, keeper, evidence, pins))
                    merged.add(f.id)
                    break
            else:
                kept.append(f)
    out.sort(key=lambda p: p.fact_id)
    for f in current:
        if f.id in merged:
            continue
        evidence = missing_source(f, roots)
        if evidence:
            out.append(_proposal("missing_source", f, None, evidence))
            continue
        change = changed_source(f, (hashes or {}).get(f.id), roots)
        if change:
            out.append(_proposal("changed_source", f, None, change))
    if project is not None:
        out = [p for p in out if p.project == project]
    return out


def changed_source(fact: Fact, stored: str | None, roots: list[Path]) -> dict[str, Any] | None:
    """The evidence that the file (or lines) a fact cites no longer hashes as when it was
    written (store/sources.py), or None. Any fact, org-wide too: it is only shown for review."""
    change = changed(fact.source, stored, roots)
    return change.evidence if change else None


def _standing(f: Fact, pins: Pins) -> Standing:
    return Standing(f.id, f.author, f.kind, f.confidence, f.project, f.id in pins, pins.get(f.id))


def _merge(f: Fact, keeper: Fact, evidence: dict[str, Any], pins: Pins) -> Proposal:
    p = _proposal("merge", f, keeper.id, evidence)
    p.retired, p.kept = _standing(f, pins), _standing(keeper, pins)
    p.moves_pin, lost = weigh(f, keeper, pins)
    p.needs_person = "; ".join(lost) or None
    return p


def _proposal(action: str, f: Fact, kept: int | None, evidence: dict[str, Any]) -> Proposal:
    return Proposal(action, f.id, kept, f.subject, f.claim, f.author, f.project, evidence)


@owns_transaction
def tidy(
    conn: Conn,
    *,
    project: str | None = None,
    roots: list[Path] | None = None,
    apply: bool = False,
    threshold: float = DUPLICATE_OVERLAP,
    only: set[int] | None = None,
    newest: int | None = None,
    force: bool | set[int] = False,
    via: str | None = None,
) -> TidyReport:
    """Propose (and with `apply`, make) the changes above. Each change is made in its own
    savepoint with its log row; one the caller may not make is reported, not fatal.

    `only`: the proposals for these fact ids alone (the web page applies the ones it showed,
    proposed afresh: a fact tidied or changed since is not touched). When every change tried
    is refused for the caller's rights, nothing was done: AccessDenied says why in one line.
    `newest`: judge only that many newest current facts (a bounded round, for the web page).
    `force`: apply the merges that need a person too (True: all; a set: these fact ids).
    `via`: the harness the changes record (Activity, migration 0032)."""
    roots = [r for r in (roots or []) if r.is_dir()]
    with translated(conn):
        query, params = (
            ("tidy.current", {"project": project})
            if newest is None
            else ("tidy.current_newest", {"project": project, "newest": newest})
        )
        rows = conn.execute(sql(query), params).fetchall()
        hashes = {r["id"]: r["source_hash"] for r in rows if r["source_hash"] is not None}
        current = [Fact(**{k: v for k, v in r.items() if k != "source_hash"}) for r in rows]
        pins: Pins = {r["fact_id"]: r["project"] for r in conn.execute(sql("tidy.pins"))}
        found = proposals_for(current, roots, threshold, pins, project, hashes)
        if only is not None:
            found = [p for p in found if p.fact_id in only]
        report = TidyReport(project, apply, [str(r) for r in roots], threshold, found)
        if apply:
            me = first(conn, sql("facts.me"))["name"]
            if me is None:
                raise AccessDenied("tidy --apply acts as an agent: set ORG_AGENT or pass --as NAME")
            say_via(conn, via)
            by_id = {f.id: f for f in current}
            may: dict[str, bool] = {}
            for p in report.proposals:
                if p.action == "changed_source":  # a changed file does not make the fact false
                    p.skipped = True
                    continue
                if p.needs_person and not (force is True or (force and p.fact_id in force)):
                    p.skipped = True
                    continue
                _apply(conn, me, p, by_id, pins, may)
            tried = [p for p in report.proposals if not p.skipped]
            if tried and all(p.error for p in tried):
                raise AccessDenied(f"tidy: {me} may not make these changes: {tried[0].error}")
        conn.commit()
    return report


def _may_retire(conn: Conn, author: str, may: dict[str, bool]) -> bool:
    if author not in may:
        may[author] = bool(first(conn, sql("tidy.may_retire"), {"author": author})["may"])
    return may[author]


def _apply(conn: Conn, me: str, p: Proposal, by_id: dict[int, Fact], pins: Pins, may: dict[str, bool]) -> None:
    kept = by_id.get(p.kept_id) if p.kept_id is not None else None
    both = (
        kept is None
        or kept.author == p.author
        or (_may_retire(conn, p.author, may) and _may_retire(conn, kept.author, may))
    )
    if kept is not None and not both:
        p.error = (
            f"a merge across authors (#{p.fact_id} by {p.author} into #{kept.id} by {kept.author}) "
            f"needs someone who may retire both, their team lead or an owner; {me} may not"
        )
        return
    try:
        with conn.transaction():
            if kept is not None:
                _merge_into(conn, me, p, kept, pins)
            else:
                why = f"source {p.evidence['source']} no longer exists (cli-org tidy)"
                conn.execute(sql("facts.forget"), {"id": p.fact_id, "why": why})
                p.done = "forgotten"
            params = {
                "action": p.action,
                "fact_id": p.fact_id,
                "kept_id": p.kept_id,
                "evidence": json.dumps(p.evidence),
            }
            conn.execute(sql("tidy.log"), params)
    except (
        pgerr.InsufficientPrivilege,
        pgerr.ObjectNotInPrerequisiteState,
        pgerr.InvalidParameterValue,
        InputError,
        NotFound,
    ) as exc:
        p.done = None
        p.evidence.pop("confirms_link", None)
        p.evidence.pop("moved_pin", None)
        p.error = first_line(exc)


def _merge_into(conn: Conn, me: str, p: Proposal, kept: Fact, pins: Pins) -> None:
    """One merge, inside the caller's savepoint: the confirmation across authors and the pin
    first (both need the retired fact current), then the retirement."""
    if kept.author != p.author:
        made = add_link(conn, p.fact_id, "confirms", kept.id, "the same claim, merged by cli-org tidy")
        p.evidence["confirms_link"] = made.id
    if p.moves_pin:
        pin_scope = pins[p.fact_id]
        conn.execute(sql("pins.unpin"), {"id": p.fact_id})  # first: the scope's cap counts it
        conn.execute(sql("pins.pin"), {"id": kept.id, "project": pin_scope})
        pins[kept.id] = pin_scope
        p.evidence["moved_pin"] = _where(pin_scope)
    if kept.author == me and kept.supersedes is None:
        conn.execute(sql("facts.supersede"), {"old": p.fact_id, "new": kept.id})
        kept.supersedes = p.fact_id
        p.done = "superseded"
    else:
        why = f"near-duplicate of #{kept.id} (cli-org tidy)"
        conn.execute(sql("facts.forget"), {"id": p.fact_id, "why": why})
        p.done = "forgotten"
