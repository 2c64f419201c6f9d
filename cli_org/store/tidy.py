"""The tidy-up: proposals, with evidence, to merge near-duplicate facts and to retire facts
whose source file is gone; `apply` acts with the caller's rights and logs each change.
Facts whose cited file changed are proposed for review only.

Never by age. Three rules, each in one place:

- Near duplicates (`near_duplicate` and `scope`, in duplicates.py: `remember` refuses a new
  one by the same rule): two current facts of the same author, subject (case and outer
  space aside) and project whose claims share at least DUPLICATE_OVERLAP of their words
  (Jaccard overlap of the lower-cased word sets) and state the same numbers. Same author
  only: each agent's assertion is its own row (migration 0008, claim squatting), so tidy
  never retires one agent's claim in favour of another's. The newer fact is kept.
- Missing sources (`missing_source`): a fact of a project whose source is a relative path
  that exists under none of the roots given (the project root, the vault). Org-wide facts are
  never retired for a missing file: a relative path says nothing about which checkout it
  meant. URLs, #messages, t_cards and absolute or home paths are never judged.
- Changed sources (`changed_source`, the rule in sources.py): a fact whose cited file, or
  cited lines, no longer hash as when it was written (the hash `remember` stored). Shown for
  review and never applied: a changed file does not make the fact false, a person (or the
  agent) reads it and supersedes or keeps the fact.

Applying: a merge supersedes the older fact by the kept one (org_supersede) when the caller
wrote the kept fact and it supersedes nothing yet; otherwise it forgets the older fact
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

from ..checks.write import source_form
from ..db import Conn, first
from ..db.errors import first_line, translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied
from ..local.files import FileRefused, lstat_under
from .activity import say_via
from .duplicates import DUPLICATE_OVERLAP, near_duplicate, scope
from .facts import Fact
from .sources import changed
from .sources import tidy_roots as tidy_roots  # the roots `tidy` judges under, for its faces


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


def proposals_for(
    current: list[Fact],
    roots: list[Path],
    threshold: float = DUPLICATE_OVERLAP,
    hashes: dict[int, str] | None = None,
) -> list[Proposal]:
    """Every proposal for these current facts, merges first; pure (reads files only).
    `hashes`: the source hash stored with each fact that has one (migration 0042)."""
    out: list[Proposal] = []
    groups: dict[tuple[str, str, str | None], list[Fact]] = defaultdict(list)
    for f in current:
        groups[scope(f.author, f.subject, f.project)].append(f)
    merged: set[int] = set()
    for group in groups.values():
        kept: list[Fact] = []
        for f in sorted(group, key=lambda g: g.id, reverse=True):  # the newest is kept
            for keeper in kept:
                evidence = near_duplicate(f.claim, keeper.claim, threshold)
                if evidence:
                    evidence["kept_claim"] = keeper.claim
                    out.append(_proposal("merge", f, keeper.id, evidence))
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
    return out


def changed_source(fact: Fact, stored: str | None, roots: list[Path]) -> dict[str, Any] | None:
    """The evidence that the file (or lines) a fact cites no longer hashes as when it was
    written (store/sources.py), or None. Any fact, org-wide too: it is only shown for review."""
    change = changed(fact.source, stored, roots)
    return change.evidence if change else None


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
    via: str | None = None,
) -> TidyReport:
    """Propose (and with `apply`, make) the changes above. Each change is made in its own
    savepoint with its log row; one the caller may not make is reported, not fatal.

    `only`: the proposals for these fact ids alone (the web page applies the ones it showed,
    proposed afresh: a fact tidied or changed since is not touched). When every chosen change
    is refused for the caller's rights, nothing was done: AccessDenied says why in one line.
    `newest`: judge only that many newest current facts (a bounded round, for the web page).
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
        found = proposals_for(current, roots, threshold, hashes)
        if only is not None:
            found = [p for p in found if p.fact_id in only]
        report = TidyReport(project, apply, [str(r) for r in roots], threshold, found)
        if apply:
            me = first(conn, sql("facts.me"))["name"]
            if me is None:
                raise AccessDenied("tidy --apply acts as an agent: set ORG_AGENT or pass --as NAME")
            say_via(conn, via)
            by_id = {f.id: f for f in current}
            for p in report.proposals:
                if p.action != "changed_source":  # a changed file does not make the fact false
                    _apply(conn, me, p, by_id)
            refused = [p for p in report.proposals if p.error]
            if only is not None and refused and len(refused) == len(report.proposals):
                raise AccessDenied(f"tidy: {me} may not make these changes: {refused[0].error}")
        conn.commit()
    return report


def _apply(conn: Conn, me: str, p: Proposal, by_id: dict[int, Fact]) -> None:
    try:
        with conn.transaction():
            if p.action == "merge":
                kept = by_id[p.kept_id] if p.kept_id is not None else None
                if kept is not None and kept.author == me and kept.supersedes is None:
                    conn.execute(sql("facts.supersede"), {"old": p.fact_id, "new": kept.id})
                    kept.supersedes = p.fact_id
                    p.done = "superseded"
                else:
                    why = f"near-duplicate of #{p.kept_id} (cli-org tidy)"
                    conn.execute(sql("facts.forget"), {"id": p.fact_id, "why": why})
                    p.done = "forgotten"
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
    except (pgerr.InsufficientPrivilege, pgerr.ObjectNotInPrerequisiteState, pgerr.InvalidParameterValue) as exc:
        p.done = None
        p.error = first_line(exc)
