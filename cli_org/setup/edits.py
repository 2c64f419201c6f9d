"""Edits of one configuration file each, in the file's own format: add cli-org's part, take
it out again, and tell a malformed file (refused, untouched) from one that is only unusual.

Every edit is a pair of pure functions on the file's text (None: the file does not exist):
`add(text) -> new text` and `remove(text) -> text without cli-org's part`.

The rule: cli-org's part is found by what it is, never by a comment (a harness that
rewrites its own file drops comments): the MCP entry named `cli-org` that runs `cli-org
mcp`, the hook groups that run `cli-org hook`, the instruction text by its heading. Each
edit changes only the lines of that part: JSON members and list items are inserted and
cut out as spans of the file's own text, in its own indentation; TOML tables by their
headers; YAML entries by their indentation under a top-level key. The result is parsed
again and compared with what was meant, so nothing else can have changed.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from yaml.nodes import Node

SERVER = "cli-org"  # the name of cli-org's MCP server entry in every harness
MD_BEGIN = "<!-- cli-org:begin -->"
MD_END = "<!-- cli-org:end -->"
HEADING = "## Org memory (cli-org)"  # the instruction text starts with it, wherever it goes


@dataclass(frozen=True)
class Edit:
    path: Path
    what: str  # one line for the summary: "MCP server entry", "hooks", "instruction block"
    part: str  # the name of cli-org's part of the file, in setup's record
    add: Callable[[str | None], str]
    remove: Callable[[str], str]
    parse: Callable[[str], Any]
    # A part with no identity of its own (a name in a list) is cli-org's only when setup's
    # record says it added it; one that was there before is the user's.
    by_record: bool = False
    # A part earlier versions wrote and this one no longer does (the approval of the
    # project's server in the user's own Claude Code settings, which applied to every
    # project): setup adds nothing, and both setup and --remove take out what the record
    # says setup added there.
    retired: bool = False


def _refuse(path: Path, problem: str) -> ConfigError:
    return ConfigError(f"{path}: {problem}; fix or move the file, then run again (nothing was changed)")


def without_empties(value: Any) -> Any:
    """A parsed file with empty objects and lists left out, to compare what is left."""
    if isinstance(value, dict):
        kept = {k: without_empties(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [], "", None)}
    if isinstance(value, list):
        return [without_empties(v) for v in value]
    return value


def _checked(path: Path, new: str, parse: Callable[[str], Any], expected: Any) -> str:
    """`new`, once it parses to `expected` (empty tables and lists aside)."""
    try:
        got = parse(new)
    except ConfigError:
        got = None
    if without_empties(got) != without_empties(expected):
        raise _refuse(path, "cli-org's part could not be edited without changing other settings")
    return new


# --- what counts as cli-org's own ------------------------------------------------------------


def runs_cli_org(words: list[str], command: str) -> bool:
    """Whether a command line runs cli-org's `command` (`cli-org ... mcp`, `python -m cli_org mcp`)."""
    for n, word in enumerate(words):
        if Path(word).name == "cli-org" or (word == "cli_org" and n and words[n - 1] == "-m"):
            return command in words[n + 1 :]
    return False


def ours_server(entry: Any) -> bool:
    """An MCP entry cli-org wrote: it runs `cli-org mcp` (any path, any agent)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return False
    return runs_cli_org([entry["command"], *args], "mcp")


def ours_hook_group(group: Any) -> bool:
    """A hook group cli-org wrote: one command that runs `cli-org hook claude-code ...`."""
    if not isinstance(group, dict) or set(group) - {"matcher", "hooks"}:
        return False
    hooks = group.get("hooks")
    if not isinstance(hooks, list) or len(hooks) != 1 or not isinstance(hooks[0], dict):
        return False
    try:
        words = shlex.split(str(hooks[0].get("command", "")))
    except ValueError:
        return False
    return runs_cli_org(words, "hook")


# --- JSON, edited as spans of its own text ----------------------------------------------------


@dataclass
class _Node:
    start: int  # the value's first character
    end: int  # one past its last
    children: list[tuple[str | None, int, _Node]]  # (key or None in a list, where the child starts, value)


_SPACE = re.compile(r"\s*")
_SCALAR = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null')


def _node(text: str, at: int) -> _Node:
    """The value at `at` with where each of its parts lies (the text is valid JSON)."""
    at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
    opener = text[at]
    if opener not in "{[":
        found = _SCALAR.match(text, at)
        assert found is not None
        return _Node(at, found.end(), [])
    node = _Node(at, at, [])
    pos = at + 1
    while True:
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos] in "}]":
            node.end = pos + 1
            return node
        if text[pos] == ",":
            pos += 1
            continue
        start, key = pos, None
        if opener == "{":
            found = _SCALAR.match(text, pos)
            assert found is not None
            key = json.loads(found.group())
            pos = text.index(":", found.end()) + 1
        child = _node(text, pos)
        node.children.append((key, start, child))
        pos = child.end


def _unit(text: str, root: _Node) -> str:
    """The file's own indentation step (the first member's), else two spaces."""
    if root.children:
        line = text[: root.children[0][1]].rsplit("\n", 1)
        if len(line) == 2 and line[1] and not line[1].strip():
            return line[1]
    return "  "


def _line_indent(text: str, at: int) -> str:
    line = text[:at].rsplit("\n", 1)[-1]
    return line[: len(line) - len(line.lstrip())]


def _insert(text: str, node: _Node, key: str | None, value: Any, unit: str) -> str:
    """`text` with `value` (under `key` in an object) added as the container's last child,
    laid out like its siblings."""
    head = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
    if node.children:
        _, first, _ = node.children[0]
        last = node.children[-1][2].end
        if "\n" not in text[node.start : first]:
            return text[:last] + ", " + head + json.dumps(value, ensure_ascii=False) + text[last:]
        indent = _line_indent(text, first)
        dumped = json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)
        return text[:last] + ",\n" + indent + head + dumped + text[last:]
    outer = _line_indent(text, node.start)
    indent = outer + unit
    dumped = json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)
    return text[: node.start + 1] + "\n" + indent + head + dumped + "\n" + outer + text[node.end - 1 :]


def _cut(text: str, node: _Node, n: int) -> str:
    """`text` without the container's child number n (and the comma and space that went with it)."""
    children = node.children
    if len(children) == 1:
        return text[: node.start + 1] + text[node.end - 1 :]
    if n:
        return text[: children[n - 1][2].end] + text[children[n][2].end :]
    return text[: children[0][1]] + text[children[1][1] :]


def _find(node: _Node, key: str) -> int | None:
    return next((n for n, (k, _, _) in enumerate(node.children) if k == key), None)


def _json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _refuse(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise _refuse(path, f"expected a JSON object at the top, found {type(data).__name__}")
    return data


def _json_put(text: str | None, keys: list[str], value: Any) -> str:
    """`text` with `value` at the path `keys` (objects made on the way), or appended to the
    list at `keys` when `keys` ends in None."""
    if text is None or not text.strip():
        data: Any = value
        for key in reversed(keys):
            data = [data] if key is None else {key: data}
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    root = _node(text, 0)
    unit, node = _unit(text, root), root
    for depth, key in enumerate(keys):
        if key is None:
            return _insert(text, node, None, value, unit)
        n = _find(node, key)
        if n is None:
            rest: Any = value
            for inner in reversed(keys[depth + 1 :]):
                rest = [rest] if inner is None else {inner: rest}
            return _insert(text, node, key, rest, unit)
        child = node.children[n][2]
        if depth == len(keys) - 1:
            indent = _line_indent(text, node.children[n][1])
            dumped = json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)
            if "\n" not in text[child.start : child.end]:
                dumped = json.dumps(value, ensure_ascii=False)
            return text[: child.start] + dumped + text[child.end :]
        node = child
    return text


def _json_drop(text: str, keys: list[str], keep: Callable[[Any], bool] | None = None) -> str:
    """`text` without the member at `keys` (or, with `keep`, without the items of the list
    there that `keep` refuses); a container left empty goes too, the top object aside."""
    root = _node(text, 0)
    trail = [root]
    for key in keys:
        n = _find(trail[-1], key)
        if n is None:
            return text
        trail.append(trail[-1].children[n][2])
    if keep is not None:
        items = trail[-1].children
        gone = [n for n, (_, _, child) in enumerate(items) if not keep(json.loads(text[child.start : child.end]))]
        if not gone:
            return text
        if len(gone) < len(items):
            for n in reversed(gone):
                text = _cut(text, _node_at(text, keys), n)
            return text
    while len(trail) > 1:
        node, parent = trail.pop(), trail[-1]
        n = next(i for i, (_, _, c) in enumerate(parent.children) if c is node)
        if len(parent.children) > 1 or len(trail) == 1:
            return _cut(text, parent, n)
    return text


def _node_at(text: str, keys: list[str]) -> _Node:
    node = _node(text, 0)
    for key in keys:
        n = _find(node, key)
        assert n is not None
        node = node.children[n][2]
    return node


def _table(path: Path, data: dict[str, Any], key: str, kind: type = dict) -> Any:
    value = data.get(key, kind())
    if not isinstance(value, kind):
        raise _refuse(path, f'"{key}" is a {type(value).__name__}, not {"an object" if kind is dict else "a list"}')
    return value


def json_server(path: Path, key: str, entry: dict[str, Any]) -> Edit:
    """The MCP entry under data[key][SERVER] (Claude Code: "mcpServers")."""

    def add(text: str | None) -> str:
        data = _json(path, text)
        servers = _table(path, data, key)
        current = servers.get(SERVER)
        if current is not None and not ours_server(current):
            raise _refuse(path, f'it has an MCP server "{SERVER}" that cli-org did not write; rename or remove it')
        if current == entry and text is not None:
            return text
        new = _json_put(text, [key, SERVER], entry)
        return _checked(path, new, parse, {**data, key: {**servers, SERVER: entry}})

    def remove(text: str) -> str:
        data = _json(path, text)
        servers = _table(path, data, key)
        if not ours_server(servers.get(SERVER)):
            return text
        rest = {k: v for k, v in servers.items() if k != SERVER}
        expected = {**data, key: rest}
        return _checked(path, _json_drop(text, [key, SERVER]), parse, expected)

    def parse(text: str) -> Any:
        return _json(path, text)

    return Edit(path, "MCP server entry", "server", add, remove, parse)


def json_hooks(path: Path, groups: dict[str, dict[str, Any]], what: str = "hooks") -> Edit:
    """Hook groups under data["hooks"][EVENT], one group of cli-org's per event (Claude Code's
    settings.json; Codex's hooks.json has the same form)."""

    def events(data: dict[str, Any]) -> dict[str, Any]:
        hooks: dict[str, Any] = _table(path, data, "hooks")
        for event, value in hooks.items():
            if not isinstance(value, list):
                raise _refuse(path, f'"hooks.{event}" is a {type(value).__name__}, not a list')
        return hooks

    def add(text: str | None) -> str:
        data = _json(path, text)
        hooks = events(data)
        new = text
        expected = {k: list(v) for k, v in hooks.items()}
        for event, group in groups.items():
            current = hooks.get(event, [])
            mine = [g for g in current if ours_hook_group(g)]
            if mine == [group]:
                continue
            if mine:  # another agent or path: cli-org's group is replaced where it was
                new = _json_drop(new or "", ["hooks", event], lambda g: not ours_hook_group(g))
            new = _json_put(new, ["hooks", event, None], group)  # type: ignore[list-item]
            expected[event] = [g for g in current if not ours_hook_group(g)] + [group]
        if new == text:
            return text or ""
        return _checked(path, new or "", parse, {**data, "hooks": expected})

    def remove(text: str) -> str:
        data = _json(path, text)
        hooks = events(data)
        new = text
        for event, current in hooks.items():
            if any(ours_hook_group(g) for g in current):
                new = _json_drop(new, ["hooks", event], lambda g: not ours_hook_group(g))
        expected = {**data, "hooks": {e: [g for g in c if not ours_hook_group(g)] for e, c in hooks.items()}}
        return new if new == text else _checked(path, new, parse, expected)

    def parse(text: str) -> Any:
        return _json(path, text)

    return Edit(path, what, "hooks", add, remove, parse)


def json_name_in_list(
    path: Path, key: str, name: str, what: str, *, by_record: bool = True, retired: bool = False
) -> Edit:
    """`name` in the list data[key] (Claude Code's `enabledMcpjsonServers`). `by_record`: a
    name that was there before setup is the user's, left in place by --remove."""

    def add(text: str | None) -> str:
        data = _json(path, text)
        names = _table(path, data, key, list)
        if name in names or retired:
            return text or ""
        return _checked(path, _json_put(text, [key, None], name), parse, {**data, key: [*names, name]})  # type: ignore[list-item]

    def remove(text: str) -> str:
        data = _json(path, text)
        names = _table(path, data, key, list)
        if name not in names:
            return text
        new = _json_drop(text, [key], lambda v: v != name)
        return _checked(path, new, parse, {**data, key: [n for n in names if n != name]})

    def parse(text: str) -> Any:
        return _json(path, text)

    return Edit(path, what, "enabled", add, remove, parse, by_record=by_record, retired=retired)


def allows_server(rule: Any) -> bool:
    """A Claude Code permission rule that names cli-org's server: the whole server
    (`mcp__cli-org`) or one of its tools (`mcp__cli-org__org_recall`)."""
    return isinstance(rule, str) and (rule == f"mcp__{SERVER}" or rule.startswith(f"mcp__{SERVER}__"))


def json_allowed(path: Path, rules: tuple[str, ...], what: str) -> Edit:
    """Permission rules in data["permissions"]["allow"] (Claude Code's settings files), each
    added where missing. Taking them out takes every rule that names cli-org's server,
    those Claude Code wrote when the person approved a tool in the terminal included:
    once cli-org's server is gone, a rule left behind would let a later server of that
    name run the tool unasked."""

    def split(text: str | None) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
        data = _json(path, text)
        permissions = _table(path, data, "permissions")
        return data, permissions, _table(path, permissions, "allow", list)

    def add(text: str | None) -> str:
        data, permissions, allow = split(text)
        missing = [rule for rule in rules if rule not in allow]
        if not missing:
            return text or ""
        new = text
        for rule in missing:
            new = _json_put(new, ["permissions", "allow", None], rule)  # type: ignore[list-item]
        expected = {**data, "permissions": {**permissions, "allow": [*allow, *missing]}}
        return _checked(path, new or "", parse, expected)

    def remove(text: str) -> str:
        data, permissions, allow = split(text)
        if not any(allows_server(rule) for rule in allow):
            return text
        new = _json_drop(text, ["permissions", "allow"], lambda rule: not allows_server(rule))
        kept = [rule for rule in allow if not allows_server(rule)]
        return _checked(path, new, parse, {**data, "permissions": {**permissions, "allow": kept}})

    def parse(text: str) -> Any:
        return _json(path, text)

    return Edit(path, what, "allowed", add, remove, parse)


# --- lines: TOML tables and YAML entries -------------------------------------------------------
#
# By hand, not with tomlkit or ruamel.yaml: tried on the files Codex 0.169 and Hermes 0.19
# write (2026-12-04), each changed lines that are the user's. tomlkit: adding cli-org's table
# and taking it out again leaves the blank line it put before it (and a final newline the file
# lacked), and into an inline `mcp_servers = {...}` it writes one long line; ruamel.yaml
# re-indents a user's four-space block to two and puts a new key after the comment block that
# trails the mapping's last entry (in Hermes's own file, 40 lines of commented-out examples).


def _trim(lines: list[str], first: int, last: int) -> int:
    """The end of a span of lines, blank and comment lines at its end left out."""
    while last > first + 1 and (not lines[last - 1].strip() or lines[last - 1].lstrip().startswith("#")):
        last -= 1
    return last


def _cut_lines(lines: list[str], spans: list[tuple[int, int]]) -> str:
    """The text without the spans of lines, and without the blank lines that set each one
    apart: those after it when a blank line (or the file's start) comes before it, else,
    for a span at the end of the file, the blank line before it. So cutting cli-org's
    tables out of a file Codex rewrote (a blank line between every two tables) leaves what
    Codex alone would have written."""
    for first, last in sorted(spans, reverse=True):
        if not first or not lines[first - 1].strip():
            while last < len(lines) and not lines[last].strip():
                last += 1
        at_end = not "".join(lines[last:]).strip()
        del lines[first:last]
        if at_end and first and not lines[first - 1].strip():
            del lines[first - 1]
    return "".join(lines)


def _without_old_markers(text: str) -> str:
    """The text without the `# cli-org:begin`/`end` comment lines that earlier versions put
    around their TOML and YAML blocks."""
    lines = text.splitlines(keepends=True)
    return "".join(line for line in lines if not line.strip().startswith(("# cli-org:begin", "# cli-org:end")))


def _append(text: str, block: str) -> str:
    if not text:
        return block
    if not text.endswith("\n"):
        text += "\n"
    return text + ("" if text.endswith("\n\n") else "\n") + block


def _toml(path: Path, text: str | None) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise _refuse(path, f"not valid TOML ({exc})") from None


def _toml_value(value: Any) -> str:
    # A JSON string, number, boolean or array of strings is a valid TOML value too.
    return json.dumps(value)


_TOML_HEADER = re.compile(r"^\s*\[")
_TOML_OURS = re.compile(
    r"""^\s*\[\s*mcp_servers\s*\.\s*(?:"cli-org"|'cli-org'|cli-org)\s*(?:\.[^\]]*)?\]\s*(?:#.*)?$"""
)


def _toml_spans(lines: list[str]) -> list[tuple[int, int]]:
    """The lines of `[mcp_servers.cli-org]` and its sub-tables, found by their headers."""
    heads = [n for n, line in enumerate(lines) if _TOML_HEADER.match(line)] + [len(lines)]
    return [(a, _trim(lines, a, b)) for a, b in zip(heads, heads[1:], strict=False) if _TOML_OURS.match(lines[a])]


def _toml_block(entry: dict[str, Any], prefix: str = f"mcp_servers.{SERVER}") -> str:
    """A table and its sub-tables; a table that holds only tables gets no header of its own."""
    values = [f"{k} = {_toml_value(v)}\n" for k, v in entry.items() if not isinstance(v, dict)]
    tables = [_toml_block(v, f"{prefix}.{k}") for k, v in entry.items() if isinstance(v, dict)]
    return "\n".join(([f"[{prefix}]\n" + "".join(values)] if values else []) + tables)


def toml_server(path: Path, entry: dict[str, Any]) -> Edit:
    """The MCP entry as [mcp_servers.cli-org] and its sub-tables (Codex), at the end of
    the file, or where it was."""

    def split(text: str, adding: bool = True) -> tuple[dict[str, Any], dict[str, Any], Any]:
        data = _toml(path, text)
        servers = data.get("mcp_servers", {})
        if not isinstance(servers, dict):
            raise _refuse(path, "mcp_servers is not a table")
        current = servers.get(SERVER)
        if current is not None and not ours_server(current):
            if not adding:  # the user's own: --remove leaves it
                return data, servers, None
            raise _refuse(path, f"it has an MCP server [mcp_servers.{SERVER}] that cli-org did not write; rename it")
        if current is not None and not _toml_spans(text.splitlines(keepends=True)):
            raise _refuse(path, f"its [mcp_servers.{SERVER}] is written inline; write it as a table of its own")
        rest = {k: v for k, v in servers.items() if k != SERVER}
        return data, rest, current

    def add(text: str | None) -> str:
        text = text or ""
        data, rest, current = split(text)
        if current == entry:
            return text
        lines = text.splitlines(keepends=True)
        spans = _toml_spans(lines)
        block = _toml_block(entry)
        if spans:
            first = spans[0][0]
            lines[first:first] = [block]
            new = _cut_lines(lines, [(a + 1, b + 1) for a, b in spans])
        else:
            new = _append(text, block)
        return _checked(path, new, parse, {**data, "mcp_servers": {**rest, SERVER: entry}})

    def remove(text: str) -> str:
        data, rest, current = split(text, adding=False)
        if current is None:
            return text
        text = _without_old_markers(text)
        new = _cut_lines(text.splitlines(keepends=True), _toml_spans(text.splitlines(keepends=True)))
        return _checked(path, new, parse, {**data, "mcp_servers": rest})

    def parse(text: str) -> Any:
        return _toml(path, text)

    return Edit(path, "MCP server entry", "server", add, remove, parse)


# A YAML alias bomb (a few lines of anchors, each alias repeating the
# one before) stalled `setup hermes`, --dry-run too, for minutes. Hermes's config.yaml is a
# few KB and has no use for aliases: a larger file, or any alias, is refused before it is
# parsed (anchors alone are harmless and pass).
YAML_MAX_BYTES = 256 * 1024


class _Alias(Exception):
    def __init__(self, line: int):
        self.line = line


@functools.cache
def _yaml_loader() -> type:
    import yaml

    class NoAliases(yaml.SafeLoader):
        """yaml.SafeLoader, but an alias (*name) stops the parse."""

        def compose_node(self, parent: Node | None, index: int) -> Node | None:
            if self.check_event(yaml.AliasEvent):
                # types-PyYAML leaves the parser's peek_event unannotated.
                raise _Alias(self.peek_event().start_mark.line + 1)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)

    return NoAliases


def _yaml(path: Path, text: str | None) -> dict[str, Any]:
    import yaml

    text = text or ""
    if len(text.encode("utf-8")) > YAML_MAX_BYTES:
        raise _refuse(path, f"larger than {YAML_MAX_BYTES // 1024} KB, more than a harness's settings")
    try:
        data = yaml.load(text, Loader=_yaml_loader()) if text.strip() else {}  # a SafeLoader
    except _Alias as alias:
        raise _refuse(path, f"it uses a YAML alias (line {alias.line}); setup reads no aliases") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise _refuse(path, f"not valid YAML{line}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _refuse(path, f"expected a mapping at the top, found {type(data).__name__}")
    return data


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


def _yaml_place(
    path: Path, lines: list[str], parent: str, child: str
) -> tuple[int | None, str, tuple[int, int] | None]:
    """Where the top-level `parent:` block lies (its line), its children's indentation,
    and the lines of `child:` among them; found by indentation."""
    heads = [n for n, line in enumerate(lines) if re.match(rf"^{parent}:[ \t]*(#.*)?$", line.rstrip("\r\n"))]
    if len(heads) > 1:
        raise _refuse(path, f"it has more than one top-level {parent}:")
    if not heads:
        return None, "  ", None
    at = heads[0]
    end = next((n for n in range(at + 1, len(lines)) if _content(lines[n]) and _indent(lines[n]) == 0), len(lines))
    inner = [n for n in range(at + 1, end) if _content(lines[n])]
    indent = " " * _indent(lines[inner[0]]) if inner else "  "
    key = re.compile(rf"""^{indent}(?:{child}|"{child}"|'{child}'):(?:\s|$)""")
    first = next((n for n in inner if key.match(lines[n])), None)
    if first is None:
        return at, indent, None
    stop = next((n for n in inner if n > first and _indent(lines[n]) <= len(indent)), end)
    return at, indent, (first, _trim(lines, first, stop))


def yaml_entry(
    path: Path,
    parent: str,
    child: str,
    lines_of: Callable[[str], str],
    value: Any,
    ours: Callable[[Any], bool],
    what: str,
    part: str,
) -> Edit:
    """`child` under the top-level mapping `parent:` (Hermes: the `cli-org` MCP server under
    `mcp_servers:`, the instructions as `environment_hint` under `agent:`), as lines of its
    own at the start of that mapping, or a new `parent:` block at the end."""

    def split(text: str, adding: bool = True) -> tuple[dict[str, Any], dict[str, Any], Any]:
        data = _yaml(path, text)
        mapping = data.get(parent)
        if mapping is not None and not isinstance(mapping, dict):
            raise _refuse(path, f"{parent} is not a mapping")
        mapping = mapping or {}
        current = mapping.get(child)
        if current is not None and not ours(current):
            if not adding:  # the user's own: --remove leaves it
                return data, mapping, None
            raise _refuse(path, f'its {what} "{parent}.{child}" is one cli-org did not write; rename or remove it')
        return data, {k: v for k, v in mapping.items() if k != child}, current

    def add(text: str | None) -> str:
        text = text or ""
        data, rest, current = split(text)
        if current == value:
            return text
        lines = text.splitlines(keepends=True)
        at, indent, span = _yaml_place(path, lines, parent, child)
        if parent in data and at is None:
            raise _refuse(path, f"{parent} is written inline; write it as an indented block, one entry per key")
        if at is None:
            new = _append(text, f"{parent}:\n" + lines_of("  "))
        elif span is not None:
            new = "".join(lines[: span[0]]) + lines_of(indent) + "".join(lines[span[1] :])
        else:
            new = "".join(lines[: at + 1]) + lines_of(indent) + "".join(lines[at + 1 :])
        return _checked(path, new, parse, {**data, parent: {**rest, child: value}})

    def remove(text: str) -> str:
        data, rest, current = split(text, adding=False)
        if current is None:
            return text
        lines = _without_old_markers(text).splitlines(keepends=True)
        at, _, span = _yaml_place(path, lines, parent, child)
        if at is None or span is None:
            raise _refuse(path, f"its {parent}.{child} is written inline; take it out by hand")
        left = lines[: span[0]] + lines[span[1] :]
        end = next((n for n in range(at + 1, len(left)) if _content(left[n]) and _indent(left[n]) == 0), len(left))
        if not any(line.strip() for line in left[at + 1 : end]):  # nothing else under it: it goes too
            return _checked(path, _cut_lines(left, [(at, end)]), parse, {**data, parent: rest})
        first, last = span
        return _checked(path, _cut_lines(lines, [(first, last)]), parse, {**data, parent: rest})

    def parse(text: str) -> Any:
        return _yaml(path, text)

    return Edit(path, what, part, add, remove, parse)


def yaml_server(path: Path, entry: dict[str, Any]) -> Edit:
    def lines_of(indent: str) -> str:
        inner = indent + "  "
        return f"{indent}{SERVER}:\n" + "".join(f"{inner}{k}: {json.dumps(v)}\n" for k, v in entry.items())

    return yaml_entry(path, "mcp_servers", SERVER, lines_of, entry, ours_server, "MCP server entry", "server")


def yaml_hook(path: Path, event: str, hook: dict[str, Any]) -> Edit:
    """A shell hook as Hermes's `hooks.EVENT` list, holding cli-org's one hook (`command`
    running `cli-org hook`, `timeout`); a list holding anything else is the user's."""
    value = [hook]

    def lines_of(indent: str) -> str:
        return f"{indent}{event}: {json.dumps(value)}\n"

    def ours(current: Any) -> bool:
        return (
            isinstance(current, list)
            and len(current) == 1
            and isinstance(current[0], dict)
            and not set(current[0]) - {"command", "timeout"}
            and ours_hook_group({"hooks": [current[0]]})
        )

    return yaml_entry(path, "hooks", event, lines_of, value, ours, "session-start hook", "hooks")


def yaml_hint(path: Path, body: str) -> Edit:
    """The instructions as Hermes's `agent.environment_hint`, which Hermes adds to its
    system prompt beside its own identity."""
    text = body.rstrip() + "\n"

    def lines_of(indent: str) -> str:
        return f"{indent}environment_hint: {json.dumps(text)}\n"

    def ours(value: Any) -> bool:
        return isinstance(value, str) and value.startswith(HEADING)

    return yaml_entry(path, "agent", "environment_hint", lines_of, text, ours, "instruction block", "instructions")


# --- Markdown ----------------------------------------------------------------------------------


def _block_span(path: Path, lines: list[str]) -> tuple[int, int] | None:
    """The first and last line of cli-org's block, or None; a broken block is refused."""
    starts = [n for n, line in enumerate(lines) if line.strip().startswith(MD_BEGIN)]
    ends = [n for n, line in enumerate(lines) if line.strip() == MD_END]
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise _refuse(path, f"its cli-org block is broken (expected one '{MD_BEGIN}' line and one '{MD_END}' after it)")
    return starts[0], ends[0]


def markdown_block(path: Path, body: str) -> Edit:
    """An instruction block between marker comments in a Markdown file the harness reads
    (no harness rewrites these files, so the markers stay)."""
    block = f"{MD_BEGIN}\n{body.rstrip()}\n{MD_END}\n"

    def add(text: str | None) -> str:
        text = text or ""
        lines = text.splitlines(keepends=True)
        span = _block_span(path, lines)
        if span is None:
            return _append(text, block)
        return "".join(lines[: span[0]]) + block + "".join(lines[span[1] + 1 :])

    def remove(text: str) -> str:
        lines = text.splitlines(keepends=True)
        span = _block_span(path, lines)
        return text if span is None else _cut_lines(lines, [(span[0], span[1] + 1)])

    def parse(text: str) -> str:
        _block_span(path, text.splitlines())
        return text.strip()

    return Edit(path, "instruction block", "instructions", add, remove, parse)
