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
    from ..recall.answer import RecallResult
    from ..store.facts import Fact, Remembered
    from ..store.notebook import Change, Notebook
    from ..vault.search import NoteHit


def _record(value) -> bool:
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


def recall_data(result: RecallResult) -> dict:
    """What `recall --json` prints."""
    return {
        "query": result.query,
        "project": result.project,
        "limit": result.limit,
        "arms": result.arms,
        "chars": result.chars,
        "ms": round(result.ms, 1),
        "notice": result.notice,
        "hits": [{"arm": h.arm, "why": h.why, **h.data} for h in result.hits],
    }


def remembered_line(result: Remembered) -> str:
    if result.duplicate and result.superseded:
        return f"{result.id} (already known; supersedes {result.superseded})"
    if result.duplicate:
        return f"{result.id} (already known: an identical current fact exists)"
    if result.superseded:
        return f"{result.id} (supersedes {result.superseded})"
    return str(result.id)


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

