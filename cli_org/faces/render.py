"""The text the faces print for a result: the CLI and the MCP server show the same lines.

Plain functions from a library dataclass to text; no click, no I/O. Rendered here: fact
lists, notebook changes and pages, search hits, archived messages, the usage tables. Two
texts are built by the library instead, because their size is library data: recall's answer
(its characters are counted and logged, `RecallResult.text`) and the session context block
(fitted to a token budget, `Context.text`); faces print those as they are. A fact's words
in a line (`fact_words` in cli_org/store/facts.py) are written once for all three. JSON for
machines is `plain()`: a dataclass (or a list or dict of them) as JSON-ready values.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..text import one_line

if TYPE_CHECKING:
    from ..archive.sessions import MessageHit
    from ..archive.usage import UsageDetail
    from ..evaluation.curation import CurationSummary
    from ..recall.answer import RecallResult
    from ..store.erase import Erased
    from ..store.facts import Fact, Remembered, Restored
    from ..store.links import Link, ShownLink
    from ..store.notebook import Change, Notebook
    from ..store.pins import Pin
    from ..store.projects import Project
    from ..store.proposals import Proposal
    from ..store.review import Review
    from ..store.tidy import Standing
    from ..store.todos import Todo
    from ..vault.search import NoteHit


def _record(value: object) -> bool:
    """A dataclass instance (is_dataclass() is true of the class as well)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def plain(value: Any) -> Any:
    """JSON-ready: dataclasses as dicts, datetimes as ISO strings, anything else unknown as str."""
    if _record(value):
        return plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def recall_data(result: RecallResult) -> dict[str, Any]:
    """What `recall --json` prints."""
    return {
        "query": result.query,
        "project": result.project,
        "limit": result.limit,
        "arms": result.arms,
        "chars": result.chars,
        "ms": round(result.ms, 1),
        # one notice a line: facts without a vector, then the vault's
        "notice": "\n".join(result.notices) or None,
        "hits": [{"arm": h.arm, "why": h.why, **h.data} for h in result.hits],
    }


def remembered_line(result: Remembered) -> str:
    if result.duplicate and result.superseded:
        return f"{result.id} (already known; supersedes {result.superseded})"
    if result.duplicate:
        return f"{result.id} (already known: an identical current fact exists)"
    line = f"{result.id} (supersedes {result.superseded})" if result.superseded else str(result.id)
    if result.confirms:
        line += (
            f"\nconfirms #{result.confirms} by {result.confirmed}: the same fact in your words;"
            " recall shows it once, confirmed by you"
        )
    for other in result.contradicts:
        line += f"\ncontradicts #{other.id} by {other.author}: {one_line(other.claim, 160)}"
    if result.contradicts:
        line += "\nboth stay current until a person chooses (cli-org review); say which one you trusted"
    return line


def erased_line(what: str, done: Erased) -> str:
    """An erase's summary: the places it changed, and the facts that still quote the text."""
    changed = ", ".join(f"{place} {n}" for place, n in done.places.items() if n)
    line = f"erased {what}" + (f"; rows changed: {changed}" if changed else "")
    if done.still_quoted_by:
        ids = ", ".join(f"#{i}" for i in done.still_quoted_by)
        line += f"; still quoted by fact{'s' if len(done.still_quoted_by) > 1 else ''} {ids}: erase them too"
    return line


def fact_line(f: Fact) -> str:
    from ..store.facts import age, fact_words

    tags = ", ".join(
        x
        for x in (
            f.kind if f.kind != "fact" else "",
            f.confidence if f.confidence != "confirmed" else "",
            f.project or "",
        )
        if x
    )
    return (
        f"#{f.id} {fact_words(f, None)}  [{one_line(f.source)}; {f.author}; "
        f"{age(f.created_at)}{'; ' + tags if tags else ''}]"
    )


def fact_end(f: Fact) -> str:
    """How a fact stopped being current, said once: superseded (by which fact) or retired (why)."""
    when = f"{f.valid_to:%Y-%m-%d %H:%M}"
    if f.superseded_by:
        return f"superseded by #{f.superseded_by} on {when} by {f.retired_by}"
    return f"retired {when} by {f.retired_by}: {one_line(f.retired_reason)}"


def facts_text(found: list[Fact]) -> str:
    """What `cli-org facts` prints."""
    if not found:
        return "no facts"
    lines = []
    for f in found:
        lines.append(fact_line(f))
        if f.supersedes:
            lines.append(f"    supersedes #{f.supersedes}")
        if not f.current:
            lines.append(f"    {fact_end(f)}")
    return "\n".join(lines)


def scope(project: str | None) -> str:
    """Where a pin holds: a project, or the whole org."""
    return f"project {project}" if project else "org-wide"


def pinned_line(done: str, p: Pin) -> str:
    """What `pin` and `unpin` print (done: pinned, unpinned)."""
    return f"{done} {p.fact_id} ({scope(p.project)})"


def pins_text(found: list[Pin]) -> str:
    """What `cli-org pins` prints."""
    lines = []
    for p in found:
        line = f"#{p.fact_id} {one_line(p.subject)}: {one_line(p.claim, 100)}  [{scope(p.project)}; {p.pinned_by}]"
        if p.unpinned_at:
            line += f"  unpinned {p.unpinned_at:%Y-%m-%d %H:%M} by {p.unpinned_by}: {one_line(p.unpin_reason)}"
        lines.append(line)
    return "\n".join(lines) or "no pins"


def restored_text(fact: Restored) -> str:
    """What `cli-org restore` prints: the fact back, and whether its pin came back too."""
    lines = [f"restored {fact.id}"]
    if fact.pin and fact.pin.back:
        lines.append(f"pinned again ({scope(fact.pin.project)}; pinned by {fact.pin.pinned_by})")
    elif fact.pin:
        lines.append(
            f"not pinned again: {scope(fact.pin.project)} holds its cap of pins; unpin one, then pin {fact.id}"
        )
    return "\n".join(lines)


def todos_text(found: list[Todo]) -> str:
    """What `cli-org todo list` prints."""
    lines = []
    for t in found:
        state = f"done {t.done_at:%Y-%m-%d} by {t.done_by}" if t.done_at else "open"
        lines.append(f"#{t.id} [{t.project or 'org-wide'}; {t.author}; {state}] {one_line(t.text)}")
    return "\n".join(lines) or "no todos"


def proposal_line(p: Proposal) -> str:
    """One proposal: its id, kind, subject and claim, then its project, agent and session."""
    where = f"{p.project}; " if p.project else ""
    line = (
        f"#{p.id} [{p.kind}] {one_line(p.subject)}: {one_line(p.claim, 160)}  "
        f"[{where}{p.agent or 'unassigned'}; {p.harness} session {one_line(p.session, 12)}]"
    )
    if p.state == "accepted":
        line += f"  accepted as #{p.fact_id} by {p.decided_by}"
    elif p.state == "rejected":
        line += f"  rejected by {p.decided_by}" + (f": {one_line(p.reason)}" if p.reason else "")
    return line


def standing_words(s: Standing) -> str:
    """What a tidy merge weighs of a fact, in words: "rule, inferred, org-wide, pinned org-wide"."""
    reach = "org-wide" if s.project is None else f"project {s.project}"
    pin = "not pinned" if not s.pinned else f"pinned {'org-wide' if s.pin_project is None else 'in ' + s.pin_project}"
    return f"{s.kind}, {s.confidence}, {reach}, {pin}"


def proposals_text(found: list[Proposal], state: str = "pending") -> str:
    """What `cli-org proposals` and org_proposals print."""
    if not found:
        return "no proposals" if state == "all" else f"no {state} proposals"
    return "\n".join(proposal_line(p) for p in found)


def change_line(change: Change) -> str:
    """What a notebook write prints."""
    usage = f"{change.used}/{change.cap} chars"
    if change.action == "unchanged":
        return f"unchanged: {change.note} ({change.target} {usage})"
    return f"{change.action} #{change.entry_id} ({change.target} {usage})"


def notebook_text(found: Notebook, separator: str) -> str:
    """What `cli-org notebook show` prints."""
    lines: list[str] = []
    for n, store in enumerate(found.stores):
        if n:
            lines.append("")
        lines.append(f"{store.target.upper()} ({found.agent}): {store.percent}% used, {store.used}/{store.cap} chars")
        if not store.entries:
            lines.append("(empty)")
        for i, entry in enumerate(store.entries):
            if i:
                lines.append(separator)
            lines.append(entry.body)
    return "\n".join(lines)


def note_hit_lines(hit: NoteHit) -> str:
    """One vault search hit: score and where, then the snippet indented."""
    where = f"{hit.path} # {hit.heading}" if hit.heading and hit.heading != hit.title else hit.path
    return f"{hit.score:.3f}  {one_line(where)}\n       {one_line(hit.snippet)}"


def message_hit_line(h: MessageHit) -> str:
    """One archived message that matched `sessions search`."""
    when = f"{h.occurred_at:%Y-%m-%d %H:%M}" if h.occurred_at else "?"
    role = f"{h.kind}:{h.tool_name}" if h.tool_name else h.kind
    return f"{when}  {h.harness}  {one_line(h.session)}  {role}  {one_line(h.snippet)}"


def table(rows: list[dict[str, Any]], headers: list[str]) -> str:
    """Rows as plain columns under their headers, no rules: every table the CLI prints."""
    from tabulate import tabulate

    return tabulate([[r.get(h) for h in headers] for r in rows], headers=headers, tablefmt="plain")


def restricted_line(project: str | None, agents: list[str] | None) -> str | None:
    """The line `facts show` and the page print for a fact of a restricted project."""
    if not project or not agents:
        return None
    return f"project {project} is restricted to {', '.join(agents)} (and their team leads, owners)"


def shown_link_line(link: ShownLink) -> str:
    """One live link of a fact as `facts show` prints it, read from that fact: `this depends-on
    #12 ...`, `#14 ... contradicts this`, or an agent's confirmation in its own words."""
    when = f"{link.author}, {link.created_at:%Y-%m-%d %H:%M}"
    if link.other_id is None:
        return f"link {link.id}: {link.author} confirms this in its own words [{when}]: {one_line(link.reason, 100)}"
    other = f"#{link.other_id} {one_line(link.other_subject)}: {one_line(link.other_claim, 80)}"
    if not link.other_current:
        other += " (not current)"
    said = f"this {link.kind} {other}" if link.direction == "out" else f"{other} {link.kind} this"
    line = f"link {link.id}: {said} [{when}]"
    return line + (f": {one_line(link.reason, 100)}" if link.reason else "")


def link_line(link: Link) -> str:
    """What `link` and `unlink` print (the MCP tools too)."""
    what = f"#{link.from_id} {link.kind} #{link.to_id}" if link.from_id else f"{link.author} confirms #{link.to_id}"
    if link.removed_at is not None:
        return f"unlinked {link.id} ({what})"
    return f"link {link.id}: {what}"


def projects_text(found: list[Project]) -> str:
    if not found:
        return "no projects"
    rows = [
        {
            "project": p.project,
            "facts": p.facts,
            "todos": p.todos,
            "sessions": p.sessions,
            "restricted to": ", ".join(p.restricted_to) if p.restricted_to else "-",
        }
        for p in found
    ]
    return table(rows, ["project", "facts", "todos", "sessions", "restricted to"])


def counted(n: int, noun: str) -> str:
    """1 file, 2 files."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def curation_text(s: CurationSummary) -> str:
    """What `cli-org facts summary` prints: one line a figure, greppable."""
    share = f"{s.project_share:.0%}" if s.project_share is not None else "-"
    median = f"{s.claim_median:,.0f}" if s.claim_median is not None else "-"
    lines = [
        f"facts: {s.current} current, {s.retired} retired, {s.superseded} superseded ({s.facts} written)",
        f"current: {s.confirmed} confirmed, {s.inferred} inferred; {s.with_project} with a project ({share})",
        f"claim length: median {median}, max {s.claim_max if s.claim_max is not None else '-'} characters",
        "per author: "
        + (", ".join(f"{one_line(a.name)} {a.facts}" for a in s.by_author) or "-")
        + (f", others {s.other_authors}" if s.other_authors else ""),
        "per kind: " + (", ".join(f"{k.name} {k.facts}" for k in s.by_kind) or "-"),
        f"near-duplicates waiting for `cli-org tidy`: {'at least ' if s.near_duplicates_at_least else ''}"
        f"{s.near_duplicates}" + (f" (in the newest {s.near_duplicates_newest})" if s.near_duplicates_newest else ""),
    ]
    if s.stale_sources is not None:
        lines.append(f"stale items waiting for `cli-org eval stale` under {one_line(s.stale_root)}: {s.stale_sources}")
    return "\n".join(lines)


REVIEW_TITLES = {
    "contradiction": "Contradictions",
    "near-duplicate": "Near-duplicates",
    "proposal": "Proposals",
    "stale-source": "Stale sources",
}


def review_text(r: Review) -> str:
    """What `cli-org review` prints: the items by kind, each with the command that settles it."""
    from ..store.review import KINDS, count_phrase

    when = f"{r.refreshed_at:%Y-%m-%d %H:%M} UTC" if r.refreshed_at else "never"
    foot = f"(stored items last refreshed by {r.agent}: {when}"
    foot += f"; the last refresh failed: {one_line(r.error)})" if r.error else ")"
    if not r.waiting:
        return "nothing waits for review\n" + foot
    lines = [f"{count_phrase(r.counts)} wait for review by {r.agent}"]
    for kind in KINDS:
        items = [i for i in r.items if i.kind == kind]
        if not r.counts.get(kind):
            continue
        more = r.counts[kind] - len(items)
        lines += ["", f"{REVIEW_TITLES[kind]} ({r.counts[kind]}):"]
        for i in items:
            lines.append(f"- {i.what}")
            lines.append(f"    settle: {i.settle}")
        if more > 0:
            lines.append(f"- and {more} more")
    return "\n".join([*lines, "", foot])


def usage_text(found: UsageDetail, detail: bool) -> str:
    """What `cli-org usage` prints; with `detail`, the tables of `usage --detail` as well."""
    from ..archive.usage import MAX_DAYS

    days = found.days
    lines = [f"last {days} days, from archived sessions:"]
    rows = [
        {
            "harness": h.harness,
            "sessions": h.sessions,
            "using": h.sessions_using,
            "recall": h.recall_calls,
            "remember": h.remember_calls,
            "adoption": f"{h.adoption_pct:.1f}%",
        }
        for h in found.harnesses
    ]
    if rows:
        lines.append(table(rows, ["harness", "sessions", "using", "recall", "remember", "adoption"]))
    else:
        span = found.archive
        if span is not None and span.sessions and span.newest is not None:
            lines.append(
                f"no sessions in the last {days} days; {counted(span.sessions, 'archived session')}, "
                f"newest on {span.newest:%Y-%m-%d}"
                + (f": widen the window with --days {span.wider_days}" if span.wider_days else "")
            )
        else:
            wider = f"--days {min(days * 4, MAX_DAYS)}" if days < MAX_DAYS else None
            lines.append(
                f"no archived sessions in the last {days} days; "
                + (f"widen the window ({wider}) or " if wider else "")
                + "import sessions with `cli-org archive import`"
            )
    q = found.quoted
    if q.recall_calls:
        lines.append(
            f"hits later quoted ({counted(q.sessions, 'session')}, {counted(q.recall_calls, 'recall call')},"
            f" {q.tied} tied):"
        )
        for a in q.arms:
            share = f"{a.share:.1%}" if a.share is not None else "n/a"
            lines.append(f"  {a.arm:<8} {counted(a.hits, 'hit')}, {a.quoted} quoted ({share})")
    if q.unjudged:
        lines.append(f"{counted(q.unjudged, 'session')} not judged yet: run `cli-org archive judge`")
    if detail:
        lines += _usage_detail(found)
    log = found.log
    rate = f"{log.adoption_pct:.1f}%" if log.adoption_pct is not None else "n/a"
    lines.append(
        f"cli-org's own log: {log.recall_calls} recalls, {log.remember_calls} remembers; "
        f"{log.agents_using} of {log.agents} agents used memory ({rate})"
    )
    if found.tools:
        lines.append("calls served by cli-org mcp (and other long-lived faces), per tool:")
        lines.append(table([vars(t) for t in found.tools], ["face", "tool", "calls", "refused", "agents"]))
    return "\n".join(lines)


def _titled(title: str, rows: list[dict[str, Any]], headers: list[str]) -> list[str]:
    return [title, table(rows, headers) if rows else "  none"]


def _usage_detail(found: UsageDetail) -> list[str]:
    """The tables of `usage --detail`: over time, per agent, per session."""
    over_time = [
        {
            found.bucket: f"{p.period:%Y-%m-%d}",
            "harness": p.harness,
            "sessions": p.sessions,
            "using": p.sessions_using,
            "recalled": p.sessions_recalled,
            "remembered": p.sessions_remembered,
        }
        for p in found.over_time
    ]
    agents = [
        {
            "agent": one_line(a.agent),
            "recalls": a.recalls,
            "remembers": a.remembers,
            "days": a.days_recalling,
            "chars median": a.chars_median if a.chars_median is not None else "-",
            "chars p95": a.chars_p95 if a.chars_p95 is not None else "-",
        }
        for a in found.agents
    ]
    sessions = [
        {
            "harness": s.harness,
            "session": one_line(s.session, 40),
            "started": f"{s.started_at:%Y-%m-%d %H:%M}" if s.started_at else "?",
            "recall": s.recall_calls,
            "remember": s.remember_calls,
            "result chars": s.result_chars_median if s.result_chars_median is not None else "-",
            "tied": s.tied,
            "hits": s.hits,
            "quoted": s.quoted,
        }
        for s in found.sessions
    ]
    per = found.recalls_per_using_session
    return [
        *_titled(
            f"per {found.bucket}, from archived sessions:",
            over_time,
            [found.bucket, "harness", "sessions", "using", "recalled", "remembered"],
        ),
        *_titled(
            "per agent, from cli-org's own log (characters per recall answer):",
            agents,
            ["agent", "recalls", "remembers", "days", "chars median", "chars p95"],
        ),
        *_titled(
            "per session" + (f" ({per:g} recall calls per session that recalled)" if per is not None else "") + ":",
            sessions,
            ["harness", "session", "started", "recall", "remember", "result chars", "tied", "hits", "quoted"],
        ),
    ]
