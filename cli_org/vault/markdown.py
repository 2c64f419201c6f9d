"""Parse one markdown note: frontmatter, title, heading-aware chunks, links and tags."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..text import pg_text

if TYPE_CHECKING:
    from yaml import SafeLoader
    from yaml.nodes import Node

# A chunk stays under this many characters; MiniLM reads about 256 word pieces, so longer
# text would be cut off before the embedder sees it.
MAX_CHUNK = 1200

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_WIKILINK = re.compile(r"\[\[([^\[\]|#]*)(?:#([^\[\]|]*))?(?:\|([^\[\]]*))?\]\]")
_MDLINK = re.compile(r"(?<!!)\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_TAG = re.compile(r"(?:(?<=\s)|^)#([A-Za-z][\w/-]*)")
_INLINE_CODE = re.compile(r"`+[^`]*`+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Link:
    target: str
    heading: str | None
    alias: str | None
    kind: str  # wikilink | markdown


@dataclass
class Chunk:
    ord: int
    heading: str  # heading path, "Title > Section"
    content: str


@dataclass
class Note:
    title: str
    frontmatter: dict[str, Any]
    chunks: list[Chunk]
    links: list[Link] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# Bounds on the YAML front matter, which is parsed on every scan of every changed note:
# real front matter is a few hundred bytes and two or three levels deep. Aliases are
# refused outright, which is what stops "billion laughs" (a 484-byte block that expanded
# to 445 MB in 6.8 s) and self-referencing anchors (`a: &a [*a]`, an endless structure).
MAX_FRONTMATTER = 64 << 10  # characters
MAX_FRONTMATTER_DEPTH = 32


class _Refused(Exception):
    """Front matter the bounded loader will not build; the message is the warning."""


@cache
def _loader() -> tuple[ModuleType, type[SafeLoader]]:
    import yaml
    from yaml.events import AliasEvent

    class BoundedLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Node | None, index: int) -> Node | None:
            if self.check_event(AliasEvent):
                raise _Refused("frontmatter uses YAML aliases; indexed without it")
            self.depth += 1
            try:
                if self.depth > MAX_FRONTMATTER_DEPTH:
                    raise _Refused(
                        f"frontmatter is nested deeper than {MAX_FRONTMATTER_DEPTH} levels; indexed without it"
                    )
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return yaml, BoundedLoader


def _load_yaml(raw: str) -> Any:
    yaml, loader_class = _loader()
    loader = loader_class(raw)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, list[str]]:
    """Frontmatter as a dict jsonb accepts, the body, and warnings about what was dropped."""
    if not text.startswith("---"):
        return {}, text, []
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text, []
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            raw, body = "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
            if len(raw) > MAX_FRONTMATTER:
                return {}, body, [f"frontmatter larger than {MAX_FRONTMATTER >> 10} KiB; indexed without it"]
            yaml, _ = _loader()
            try:
                data = _load_yaml(raw) if raw.strip() else {}
            except _Refused as exc:
                return {}, body, [str(exc)]
            except RecursionError:
                return {}, body, ["frontmatter is nested too deeply; indexed without it"]
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" at line {mark.line + 2}" if mark else ""
                return {}, body, [f"broken frontmatter{where}; indexed without it"]
            except (ValueError, TypeError, OverflowError) as exc:
                # A value the YAML constructors reject: a date such as 2024-13-01, an
                # integer of more than 4300 digits.
                return (
                    {},
                    body,
                    [f"frontmatter holds an unreadable value ({pg_text(str(exc))[:80]}); indexed without it"],
                )
            if not isinstance(data, dict):
                return {}, body, ["frontmatter is not a mapping; indexed without it"]
            warnings: list[str] = []
            return _jsonable(data, warnings, ""), body, warnings
    return {}, text, ["frontmatter block is never closed; indexed as text"]


def _jsonable(value: Any, warnings: list[str], where: str) -> Any:
    """The YAML value as JSON that jsonb accepts: NaN and infinities become null (with a
    warning), strings lose NUL and lone surrogates, dates and the like become strings."""
    if isinstance(value, dict):
        return {pg_text(str(k)): _jsonable(v, warnings, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v, warnings, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        warnings.append(f"frontmatter value {pg_text(where)} is not a finite number; stored as null")
        return None
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return str(value)  # beyond what a reader of the JSON can hold as a number
    if value is None or isinstance(value, bool | int | float):
        return value
    return pg_text(str(value))  # strings, dates and the like


def _frontmatter_tags(front: dict[str, Any]) -> list[str]:
    raw = front.get("tags") or front.get("tag") or []
    if isinstance(raw, str):
        raw = re.split(r"[,\s]+", raw)
    if not isinstance(raw, list):
        return []
    return [str(t).lstrip("#").strip() for t in raw if str(t).strip()]


def parse_note(text: str, path: str) -> Note:
    text = pg_text(text)
    front, body, warnings = split_frontmatter(text)
    sections, links, tags = _walk(body)
    title = str(front.get("title") or "").strip() or _first_heading(sections) or PurePosixPath(path).stem
    chunks: list[Chunk] = []
    for heading_path, block in sections:
        for piece in _pack(block):
            chunks.append(Chunk(len(chunks), " > ".join(heading_path) or title, piece))
    if not chunks:
        chunks.append(Chunk(0, title, title))
    # Each tag once, ignoring case; the first spelling seen wins.
    unique: dict[str, str] = {}
    for tag in [*_frontmatter_tags(front), *tags]:
        unique.setdefault(tag.lower(), tag)
    return Note(title, front, chunks, links, list(unique.values()), warnings)


def _first_heading(sections: list[tuple[list[str], str]]) -> str | None:
    return next((path[-1] for path, _ in sections if path), None)


def _walk(body: str) -> tuple[list[tuple[list[str], str]], list[Link], list[str]]:
    """Split into (heading path, lines) sections; collect links and tags outside code."""
    sections: list[tuple[list[str], list[str]]] = [([], [])]
    stack: list[tuple[int, str]] = []
    links: list[Link] = []
    tags: list[str] = []
    fence = None
    for line in body.split("\n"):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1) == fence:
                fence = None
            sections[-1][1].append(line)
            continue
        if m:
            fence = m.group(1)
            sections[-1][1].append(line)
            continue
        h = _HEADING.match(line)
        if h:
            level, name = len(h.group(1)), h.group(2).strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, name))
            sections.append(([n for _, n in stack], [line]))
            continue
        sections[-1][1].append(line)
        prose = _INLINE_CODE.sub(" ", line)
        for target, heading, alias in _WIKILINK.findall(prose):
            links.append(Link(target.strip(), heading.strip() or None, alias.strip() or None, "wikilink"))
        for label, target in _MDLINK.findall(prose):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith("#"):
                path, _, anchor = target.partition("#")
                links.append(Link(path, anchor or None, label.strip() or None, "markdown"))
        tags.extend(_TAG.findall(_WIKILINK.sub(" ", _MDLINK.sub(" ", prose))))
    return [(p, "\n".join(lines).strip()) for p, lines in sections if "\n".join(lines).strip()], links, tags


def _pack(block: str) -> list[str]:
    """Cut a section into pieces of at most MAX_CHUNK characters, at paragraph, then
    line, then sentence boundaries; a code block is split only when it alone is too long."""
    if len(block) <= MAX_CHUNK:
        return [block]
    return _greedy([part for para in _paragraphs(block) for part in _split_long(para)], "\n\n")


def _paragraphs(block: str) -> list[str]:
    paras: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in block.split("\n"):
        m = _FENCE.match(line)
        if m and not fence:
            fence = m.group(1)
        elif m and m.group(1) == fence:
            fence = None
        if not line.strip() and not fence:
            if current:
                paras.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        paras.append("\n".join(current))
    return paras


def _split_long(text: str) -> list[str]:
    if len(text) <= MAX_CHUNK:
        return [text]
    units = text.split("\n") if text.count("\n") > 1 else _SENTENCE.split(text)
    # A single unit longer than a chunk (one enormous line) is cut where it must be.
    cut = [unit[i : i + MAX_CHUNK] for unit in units for i in range(0, max(len(unit), 1), MAX_CHUNK)]
    return _greedy(cut, "\n")


def _greedy(units: list[str], sep: str) -> list[str]:
    """Join units in order into pieces of at most MAX_CHUNK characters."""
    pieces, current = [], ""
    for unit in units:
        if current and len(current) + len(sep) + len(unit) > MAX_CHUNK:
            pieces.append(current)
            current = unit
        else:
            current = f"{current}{sep}{unit}" if current else unit
    if current:
        pieces.append(current)
    return pieces
