"""The session context block: the one renderer of what an agent sees at the start of a
session (and, with --for, on each turn).

What goes in, most useful first (docs/recall.md, Session context):
1. the agent's own notebook, each store with "N% used, x/cap chars" (a note above 80%);
2. pinned facts: org-wide, then the project's;
3. open todos: org-wide, then the project's, and how many proposals wait for the agent (for
   an owner or a team lead, one line of what waits for its review: store/review.py);
4. current facts grouped by kind: decisions, rules, failures, workflows, preferences, model
   notes, then plain facts; newest first within a kind (a pinned fact is not repeated);
5. with `for_text`, the recall hits for it (the volatile part, after everything stable).

Stable: the same state gives byte-identical output. Nothing in the block depends on the
clock: ages are dates ("since 2026-11-28", UTC), never "3d". Parts 1-4 form a cacheable
prefix; part 5 and the omitted list come after it.

Budget: tokens are counted as ceil(characters / 4) over the whole printed block, its final
newline included (TOKEN_CHARS). The block never passes the budget. Entries are taken in the
order above; one that does not fit is skipped (a smaller later one may still fit).

Reads only what it can show (the read window): no budget holds more fact entries than its
characters over SHORTEST_FACT_ENTRY, so the block reads only that many facts in scope (and
room for the pinned and already delivered ones it skips), in its own order: the newest of
the first kind, then of the next, a statement per kind until the window is read. A fact past
them is never read, even where a short one would still fit a gap. A store of up to that many
facts in all gives the block it gave when every fact was read. (Issue 38: reading the window
for every kind read seven times the rows, and the block at 1M facts spent most of its time
on facts it could never show.)

What is not shown is bookkeeping, not context (the `--json` form and the web page, never
the text an agent reads). `omitted` lists what was read and not shown: "budget", and
"duplicate of #N" (the same subject and claim, ignoring case and spacing, as a newer fact
read), "confirms #N" (another agent's own words of fact #N, read too: issue 36);
`omitted_counts` counts everything in scope not shown by reason: "budget" (those
listed and the facts never read), "duplicate", "retired", "superseded". With `for_text` the
stable part takes at most
STABLE_SHARE percent of the budget, whatever the hits, so its prefix is the same on every
turn; the hits have the rest.

With `session`, every entry shown is remembered in the database (context_delivered,
migration 0015; an agent sees only its own rows), and a later call in that session shows
only entries not delivered yet. Nothing new: the block is empty (the CLI prints nothing).
With `again` (the conversation was compacted, cleared or resumed: hooks.py), everything is
shown as if nothing had been delivered, and remembered again.

Another agent's block (`agent`: `cli-org context --of NAME`, the web page's agent page): the
session-start block that agent gets, built with every read made as the caller, so row-level
security decides what it holds and the caller is never shown what it may not read. Facts,
pins and todos every member reads, so they are the agent's; the notebook is the agent's own
where the caller may read it (the agent, its team lead, an owner: migration 0013's rule) and
otherwise left out and named in `hidden`, never read. Not the record of what was delivered:
context_delivered (migration 0015) keeps only entry keys, not the lines, and only the agent
itself reads its rows; a block is stable (the same state gives the same bytes), so building
it again gives what the agent gets now. A block for a turn (`for_text`) or a session is
refused for another agent: its recall and its delivery record would be the caller's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..db import Conn, first
from ..db.connect import current_agent
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied, InputError, NotFound
from ..recall.marks import NOTE, Marks, folded, mark_text, read_marks
from ..store.facts import Fact, fact_words
from ..store.notebook import Notebook
from ..store.notebook import show as show_notebook
from ..store.pins import list_pins
from ..store.review import is_reviewer, waiting_counts, waiting_line
from ..store.todos import list_todos
from ..text import one_line

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import Settings
    from ..recall.answer import RecallHit, RecallResult
    from ..vault.embedders import Embedder

TOKEN_CHARS = 4  # one token is counted for every 4 characters, rounded up
DEFAULT_BUDGET = 1500
MIN_BUDGET = 16  # room for the header and a short entry
FORMATS = ("text", "markdown", "json")
KIND_ORDER = ("decision", "rule", "failure", "workflow", "preference", "model_note", "fact")
KIND_TITLES = {
    "decision": "Decisions",
    "rule": "Rules",
    "failure": "Failures",
    "workflow": "Workflows",
    "preference": "Preferences",
    "model_note": "Model notes",
    "fact": "Facts",
}
NEAR_FULL = 80  # percent of a notebook store above which the block says so
HIT_LIMIT = 8
MAX_SESSION = 200


def tokens(text: str) -> int:
    """The token count of `text` by the stated rule: ceil(characters / 4)."""
    return math.ceil(len(text) / TOKEN_CHARS)


@dataclass
class Entry:
    key: str  # the id shown in the omitted list: "fact #12", "notebook #3", "todo #4"
    line: str  # the line as printed, without the bullet
    mark: str = ""  # what a session remembers (the key, with the version of a notebook entry)
    disputed: bool = False  # marked "contradicts #N": the block says once what to do (marks.NOTE)

    def __post_init__(self) -> None:
        self.mark = self.mark or self.key


@dataclass
class Section:
    name: str  # notebook:memory, pinned, todos, kind:decision, hits
    title: str
    stable: bool  # part of the cacheable prefix
    entries: list[Entry] = field(default_factory=list)


@dataclass
class Omitted:
    key: str
    reason: str  # budget, retired, superseded by #N, duplicate of #N


@dataclass
class Hidden:
    part: str  # "notebook"
    reason: str


@dataclass
class Context:
    agent: str
    project: str | None
    for_text: str | None
    session: str | None
    budget: int
    format: str
    text: str  # the block as printed ("" when there is nothing to deliver)
    chars: int
    tokens: int
    prefix_chars: int  # characters of the stable, cacheable prefix at the start of `text`
    sections: list[Section]  # what is shown
    omitted: list[Omitted]  # what was read and not shown, with the reason (never in `text`)
    # Everything not shown by reason, counted: "budget" (over it, or past what the budget
    # could hold and so never read), "duplicate", "retired", "superseded". Only in the JSON
    # format (fmt "json"); empty otherwise and for hits only.
    omitted_counts: dict[str, int]
    # What another agent's block holds and the caller may not read: left out, never read.
    # Always empty for the caller's own block.
    hidden: list[Hidden] = field(default_factory=list)


def _date(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def _fact_line(f: Fact, *, kind: bool = False, marks: Marks | None = None) -> str:
    where = f", {f.project}" if f.project else ""
    label = f"{f.kind}, " if kind else ""
    return f"#{f.id} {fact_words(f)} ({label}{f.author}{where}, since {_date(f.created_at)}){mark_text(marks)}"


def _fact_entry(f: Fact, marks: dict[int, Marks], *, kind: bool = False) -> Entry:
    mine = marks.get(f.id)
    return Entry(f"fact #{f.id}", _fact_line(f, kind=kind, marks=mine), disputed=bool(mine and mine.disputed))


def _in_scope(project: str | None, own: str | None) -> bool:
    return own is None or own == project


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


# The shortest fact entry a block can hold: "- #1 s: c (a, since 2026-01-01)" and its
# newline. No budget holds more fact entries than its characters over this, so the block
# reads at most that many of each kind and scope: the read window.
SHORTEST_FACT_ENTRY = 32


def _notebook(conn: Conn, agent: str | None) -> tuple[str, Notebook | None, list[Hidden]]:
    """The notebook of the caller, or of `agent` where the caller may read it (otherwise
    None and why, unread)."""
    if agent is None:
        book = show_notebook(conn)
        return book.agent, book, []
    found = first(conn, sql("notebook.agent_exists"), {"agent": agent})
    if not found["found"]:
        raise NotFound(f"no agent named {agent!r}")
    why = f"only {agent}, its team lead or an owner may read its notebook"
    if found["readable"]:
        try:
            return agent, show_notebook(conn, agent=agent), []
        except AccessDenied as exc:  # a login role that is no agent reads nobody's notebook
            why = str(exc)
    note = " (the agent's block holds it first, so it may show fewer entries below it)"
    return agent, None, [Hidden("notebook", why + note)]


def _stable(
    conn: Conn, project: str | None, budget_chars: int, delivered: int, count: bool, agent: str | None = None
) -> tuple[str, list[Section], list[Omitted], dict[str, int], list[Hidden]]:
    """The notebook, pins, todos and facts as sections, the facts read but not shown, and the
    counts of the facts in scope by state (current, retired, superseded).

    Reads only what it can show (the read window): of each kind and scope, the newest facts up
    to the most entries the budget can hold, with room for the pinned and delivered ones it
    skips. The rest of the store is counted, never listed, when `count` asks (the JSON form:
    a count reads every fact in scope from an index, 0.3 s at 100k facts on a loaded machine,
    and the text an agent reads never shows it)."""
    whose, notebook, hidden = _notebook(conn, agent)
    sections: list[Section] = []
    for store in notebook.stores if notebook else []:
        title = f"Notebook, {store.target}: {store.percent}% used, {store.used}/{store.cap} chars"
        if store.percent > NEAR_FULL:
            title += f" (above {NEAR_FULL}%: replace or remove entries before adding)"
        entries = [
            Entry(f"notebook #{e.id}", one_line(e.body), f"notebook #{e.id} v{e.version}") for e in store.entries
        ]
        sections.append(Section(f"notebook:{store.target}", title, True, entries))

    pins = [p for p in list_pins(conn, project=project) if _in_scope(project, p.project)]
    rows = conn.execute(sql("context.pinned"), {"ids": [p.fact_id for p in pins], "project": project})
    by_id = {f.id: f for f in (Fact(**r) for r in rows)}
    pinned = [by_id[p.fact_id] for p in pins if p.fact_id in by_id]
    pinned_ids = {f.id for f in pinned}
    pinned_section = Section("pinned", "Pinned", True)  # its entries once the marks are read, below
    sections.append(pinned_section)

    open_todos = [t for t in list_todos(conn, project=project) if _in_scope(project, t.project)]
    todo_entries = [
        Entry(
            f"todo #{t.id}",
            f"#{t.id} {one_line(t.text)} ({t.author}{', ' + t.project if t.project else ''}, "
            f"since {_date(t.created_at)})",
        )
        for t in open_todos
    ]
    sections.append(Section("todos", "Open todos", True, todo_entries))

    # Issue 36: an owner's or a team lead's own block says in one line what waits for it
    # (store/review.py); the proposals of issue 35 are counted in it, not repeated.
    reviews = agent is None and bool(whose) and is_reviewer(conn)
    if reviews:
        counts = waiting_counts(conn)
        if line := waiting_line(counts):
            key = "review " + ",".join(f"{k}={n}" for k, n in counts.items() if n)
            sections.append(Section("review", "Review", True, [Entry(key, line)]))
    elif agent is not None and first(conn, sql("review.agent_reviews"), {"agent": agent})["yes"]:
        why = "what waits for an owner or a team lead is counted with its own rights, not the caller's"
        hidden.append(Hidden("review", why))
    # Issue 35: an agent confirms the lessons proposed from its sessions at session start.
    waiting = int(first(conn, sql("proposals.count_pending"), {"agent": whose})["n"]) if whose and not reviews else 0
    if waiting:
        line = (
            f"{waiting} {'lesson' if waiting == 1 else 'lessons'} proposed from your sessions "
            f"{'waits' if waiting == 1 else 'wait'} for you to accept or reject (MCP org_proposals; cli-org proposals)"
        )
        sections.append(Section("proposals", "Proposals", True, [Entry(f"proposals {waiting}", line)]))

    window = budget_chars // SHORTEST_FACT_ENTRY + len(pinned_ids) + delivered
    current: list[Fact] = []
    for kind in KIND_ORDER:  # in the block's order, until the window is read
        if len(current) >= window:
            break
        rows = conn.execute(sql("context.facts"), {"kind": kind, "project": project, "window": window - len(current)})
        current += [Fact(**r) for r in rows]
    current.sort(key=lambda f: (-f.created_at.timestamp(), -f.id))  # a duplicate gives way to the newer copy
    # The links of every fact read, in one statement: confirmed by, contradicts (recall/marks.py).
    marks = read_marks(conn, [f.id for f in (*pinned, *current)], {f.id: [f.author] for f in (*pinned, *current)})
    pinned_section.entries = [_fact_entry(f, marks, kind=True) for f in pinned]
    omitted: list[Omitted] = []
    seen: dict[tuple[str, str], int] = {(_normal(f.subject), _normal(f.claim)): f.id for f in pinned}
    by_kind: dict[str, list[Entry]] = {k: [] for k in KIND_ORDER}
    again = folded([f.id for f in (*pinned, *current)], marks)  # another agent's words of a fact read
    for f in current:
        if f.id in pinned_ids:
            continue
        if f.id in again:
            omitted.append(Omitted(f"fact #{f.id}", f"confirms #{marks[f.id].confirms[0]}"))
            continue
        same = (_normal(f.subject), _normal(f.claim))
        if same in seen:
            omitted.append(Omitted(f"fact #{f.id}", f"duplicate of #{seen[same]}"))
            continue
        seen[same] = f.id
        by_kind[f.kind].append(_fact_entry(f, marks))
    for kind in KIND_ORDER:
        sections.append(Section(f"kind:{kind}", KIND_TITLES[kind], True, by_kind[kind]))
    if not count:
        return whose, sections, omitted, {}, hidden
    counts = first(conn, sql("context.counts"), {"project": project})
    tally = {
        "unread": counts["current"] - len({f.id for f in current} | {f.id for f in pinned if f.current}),
        "duplicate": len(omitted),
        "retired": counts["retired"],
        "superseded": counts["superseded"],
    }
    return whose, sections, omitted, tally, hidden


def _hit_key(hit: RecallHit) -> str:
    data = hit.data
    if hit.arm == "fact":
        return f"fact #{data['id']}"
    if hit.arm == "memory":
        return f"memory {data['file']}:{data['line']}"
    return f"vault {data['path']}#{data.get('heading') or ''}"


def _head_line(agent: str, project: str | None, fmt: str) -> str:
    head = f"Org context for {agent}" + (f", project {project}" if project else "")
    return f"# {head}" if fmt == "markdown" else f"== {head} =="


def _title_line(title: str, fmt: str) -> str:
    return f"## {title}" if fmt == "markdown" else f"{title}:"


def _render(agent: str, project: str | None, sections: list[Section], fmt: str) -> tuple[str, int]:
    """The block and the length of its stable prefix. Every line
    ends with a newline: a header, then per section a blank line, its title, its entries."""
    if not any(s.entries for s in sections):
        return "", 0
    out = [_head_line(agent, project, fmt)]
    prefix = 0
    for s in sections:
        if not s.entries:
            continue
        if not s.stable and not prefix:
            prefix = sum(len(line) + 1 for line in out)
        out.append("")
        out.append(_title_line(s.title, fmt))
        out.extend(f"- {e.line}" for e in s.entries)
    text = "\n".join(out) + "\n"
    return text, prefix or len(text)


MARKS_TITLE = "Marks"
MARKS_KEY = "marks"  # the note's key: a session is told once (context_delivered)
STABLE_SHARE = 66  # percent of the budget the stable part may take when --for adds hits


def _fit(
    agent: str,
    project: str | None,
    sections: list[Section],
    extra: list[Omitted],
    budget_chars: int,
    fmt: str,
    note: bool = True,
) -> tuple[list[Section], list[Omitted]]:
    """Greedy, in order: an entry is kept when the body with it stays within the budget. An
    entry whose key is already kept (a recall hit for a fact shown above) is not repeated.
    The stable part takes at most STABLE_SHARE of the budget when there are hits, so that its
    prefix is the same on every turn; the hits have the rest. The first entry marked
    "contradicts" kept (when `note`) also pays for the one line that says what to do about it
    (marks.NOTE), which follows the part it is in: the stable part, or the hits."""
    volatile = any(not s.stable for s in sections)
    stable_limit = budget_chars * STABLE_SHARE // 100 if volatile else budget_chars
    kept = [Section(s.name, s.title, s.stable) for s in sections]
    keys: set[str] = set()
    cut: list[Omitted] = []
    used = len(_head_line(agent, project, fmt)) + 1
    noted: Section | None = None
    for s, k in zip(sections, kept, strict=True):
        for e in s.entries:
            if e.key in keys:
                continue
            cost = len(e.line) + 3  # "- " and the newline
            if not k.entries:
                cost += 1 + len(_title_line(k.title, fmt)) + 1  # the blank line and the title
            explain = note and e.disputed and noted is None
            if explain:
                cost += 1 + len(_title_line(MARKS_TITLE, fmt)) + 1 + len(NOTE) + 3
            if used + cost <= (stable_limit if s.stable else budget_chars):
                k.entries.append(e)
                keys.add(e.key)
                used += cost
                if explain:
                    noted = k
            else:
                cut.append(Omitted(e.key, "budget"))
    cut = [o for o in cut if o.key not in keys]
    if noted is not None:
        # after the stable sections when a stable entry asked for it, else at the very end
        at = max(i for i, k in enumerate(kept) if k.stable == noted.stable) + 1
        kept.insert(at, Section("marks", MARKS_TITLE, noted.stable, [Entry(MARKS_KEY, NOTE)]))
    return kept, cut + extra


@owns_transaction
def build_context(
    conn: Conn,
    *,
    settings: Settings,
    project: str | None = None,
    for_text: str | None = None,
    session: str | None = None,
    budget: int = DEFAULT_BUDGET,
    fmt: str = "text",
    embedder: Embedder | None = None,
    hits_only: bool = False,
    recalled: Callable[[RecallResult], object] | None = None,
    again: bool = False,
    admit: Callable[[list[RecallHit]], list[RecallHit]] | None = None,
    log: bool = True,
    arms: tuple[str, ...] | None = None,
    agent: str | None = None,
) -> Context:
    """The block for the connected agent (see the module's doc for what, in which order).

    `hits_only` (with `for_text`) keeps only the recall hits: a per-turn hook adds what
    matches the turn, never the stable part the session start delivered or left out.
    `admit` picks the hits to show from the recall's, asked of `arms` (default: all; the
    prompt hook's own bar, hooks.py). `agent`: that agent's session-start block, read as the
    caller (the module's doc, "Another agent's block")."""
    if fmt not in FORMATS:
        raise InputError(f"--format is one of {', '.join(FORMATS)}, not {fmt!r}")
    if budget < MIN_BUDGET:
        raise InputError(f"--budget must be at least {MIN_BUDGET} tokens, not {budget}")
    if session is not None and (not session.strip() or len(session) > MAX_SESSION):
        raise InputError(f"--session must be 1 to {MAX_SESSION} characters, not blank")
    if for_text is not None and not for_text.strip():
        raise InputError("--for is empty; say what the turn is about")
    if hits_only and for_text is None:
        raise InputError("only the hits were asked for, but no text to find them for")
    if agent is not None and (for_text is not None or session is not None):
        raise InputError("another agent's block is its session-start block: no --for, no --session")
    shape = "markdown" if fmt == "markdown" else "text"
    with translated(conn):
        sections: list[Section]
        extra: list[Omitted]
        done: set[str] = set()
        if session is not None and not again:
            done = {r["hit_key"] for r in conn.execute(sql("context.delivered"), {"session": session})}
        tally: dict[str, int] = {}
        hidden: list[Hidden] = []
        if hits_only:  # the per-turn hook: nothing stable is shown, so none of it is read
            whose, sections, extra = current_agent(conn), [], []
        else:
            whose, sections, extra, tally, hidden = _stable(
                conn, project, budget * TOKEN_CHARS, len(done), count=fmt == "json", agent=agent
            )
        if for_text is not None:
            from ..recall import ARMS
            from ..recall.answer import recall

            result = recall(
                conn,
                for_text,
                settings=settings,
                project=project,
                limit=HIT_LIMIT,
                embedder=embedder,
                log=log,
                arms=arms or ARMS,
            )
            if recalled is not None:  # the caller records a recall the replica served (cli_org/org)
                recalled(result)
            # The notebook is in the block already, first; its entries are not hits again.
            picked = admit(result.hits) if admit is not None else result.hits
            hits = [
                Entry(_hit_key(h), h.text, disputed=bool(h.data.get("contradicts") or h.data.get("contradicted_by")))
                for h in picked
                if not h.data.get("notebook")
            ]
            sections.append(Section("hits", f'Relevant to "{one_line(for_text, 80)}"', False, hits))
        if hits_only:
            sections, extra = [s for s in sections if not s.stable], []
        if done:
            for s in sections:
                s.entries = [e for e in s.entries if e.mark not in done]
        kept, omitted = _fit(whose, project, sections, extra, budget * TOKEN_CHARS, shape, note=MARKS_KEY not in done)
        counts = {}
        if tally:
            budget_cut = sum(1 for o in omitted if o.reason == "budget")
            counts = {"budget": budget_cut + tally.pop("unread"), **tally}
        text, prefix = _render(whose, project, kept, shape)
        if session is not None and text:
            for key in [e.mark for s in kept for e in s.entries]:
                conn.execute(sql("context.deliver"), {"session": session, "key": key})
            conn.commit()
    return Context(
        agent=whose,
        project=project,
        for_text=for_text,
        session=session,
        budget=budget,
        format=fmt,
        text=text,
        chars=len(text),
        tokens=tokens(text),
        prefix_chars=prefix,
        sections=[s for s in kept if s.entries],
        omitted=omitted,
        omitted_counts=counts,
        hidden=hidden,
    )
