"""Edits of one configuration file each, in the file's own format: add cli-org's part, take
it out again, and tell a malformed file (refused, untouched) from one that is only unusual.

Every edit is a pair of pure functions on the file's text (None: the file does not exist):
`add(text) -> new text` and `remove(text) -> text without cli-org's part`, plus `parse`,
which `--remove` uses to tell whether what is left is the original (then the backup is put
back byte for byte). JSON is read and rewritten (2-space indent, the user's keys and order
kept); TOML, YAML and Markdown get a delimited block of lines, so the user's comments and
layout are never rewritten, and the result is parsed again to prove nothing else changed.
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
BEGIN = "cli-org:begin"
END = "cli-org:end"
MD_BEGIN = f"<!-- {BEGIN} -->"
MD_END = f"<!-- {END} -->"


@dataclass(frozen=True)
class Edit:
    path: Path
    what: str  # one line for the summary: "MCP server entry", "hooks", "instruction block"
    add: Callable[[str | None], str]
    remove: Callable[[str], str]
    parse: Callable[[str], Any]
    # JSON is rewritten whole, so what is left after --remove is compared with the backup
    # parsed; a block edit keeps the user's lines, so they are compared as text.
    rewrites: bool = False


def _refuse(path: Path, problem: str) -> ConfigError:
    return ConfigError(f"{path}: {problem}; fix or move the file, then run again (nothing was changed)")


# --- what counts as cli-org's own ------------------------------------------------------------


def ours_server(entry: Any) -> bool:
    """An MCP entry cli-org wrote: it runs `cli-org mcp --as NAME` (any path, any agent)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return False
    runs_us = Path(entry["command"]).name == "cli-org" or "cli_org" in args
    return runs_us and any(args[i : i + 2] == ["mcp", "--as"] for i in range(len(args)))


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
    runs_us = any(Path(w).name == "cli-org" or w == "cli_org" for w in words)
    return runs_us and any(words[i : i + 2] == ["hook", "claude-code"] for i in range(len(words)))


# --- JSON ------------------------------------------------------------------------------------


def _json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _refuse(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise _refuse(path, f"expected a JSON object at the top, found {type(data).__name__}")
    return data


def _dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _table(path: Path, data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise _refuse(path, f'"{key}" is a {type(value).__name__}, not an object')
    return value


def json_server(path: Path, key: str, entry: dict[str, Any]) -> Edit:
    """The MCP entry under data[key][SERVER] (Claude Code: "mcpServers")."""

    def add(text: str | None) -> str:
        data = _json(path, text)
        servers = _table(path, data, key)
        current = servers.get(SERVER)
        if current is not None and current != entry and not ours_server(current):
            raise _refuse(path, f'it has an MCP server "{SERVER}" that cli-org did not write; rename or remove it')
        if current == entry and text is not None:
            return text
        data[key] = {**servers, SERVER: entry}
        return _dump_json(data)

    def remove(text: str) -> str:
        data = _json(path, text)
        servers = _table(path, data, key)
        if not ours_server(servers.get(SERVER)):
            return text
        rest = {k: v for k, v in servers.items() if k != SERVER}
        if rest:
            data[key] = rest
        else:
            del data[key]
        return _dump_json(data)

    return Edit(path, "MCP server entry", add, remove, lambda text: _json(path, text), rewrites=True)


def json_hooks(path: Path, groups: dict[str, dict[str, Any]]) -> Edit:
    """Claude Code hook groups under data["hooks"][EVENT], one group of cli-org's per event."""

    def events(data: dict[str, Any]) -> dict[str, Any]:
        hooks = _table(path, data, "hooks")
        for event, value in hooks.items():
            if not isinstance(value, list):
                raise _refuse(path, f'"hooks.{event}" is a {type(value).__name__}, not a list')
        return hooks

    def add(text: str | None) -> str:
        data = _json(path, text)
        hooks = dict(events(data))
        for event, group in groups.items():
            current = hooks.get(event, [])
            mine = [n for n, g in enumerate(current) if ours_hook_group(g)]
            if mine:
                first = mine[0]
                current = [group if n == first else g for n, g in enumerate(current) if n == first or n not in mine]
            else:
                current = [*current, group]
            hooks[event] = current
        if text is not None and hooks == events(_json(path, text)):
            return text
        data["hooks"] = hooks
        return _dump_json(data)

    def remove(text: str) -> str:
        data = _json(path, text)
        hooks = events(data)
        if not any(ours_hook_group(g) for groups_ in hooks.values() for g in groups_):
            return text
        left = {}
        for event, current in hooks.items():
            kept = [g for g in current if not ours_hook_group(g)]
            if kept or not current:
                left[event] = kept
        if left:
            data["hooks"] = left
        else:
            del data["hooks"]
        return _dump_json(data)

    return Edit(path, "session-start and prompt hooks", add, remove, lambda text: _json(path, text), rewrites=True)


# --- delimited blocks of lines (TOML, YAML, Markdown) -----------------------------------------


def _block_span(path: Path, lines: list[str], begin: str, end: str) -> tuple[int, int] | None:
    """The first and last line of cli-org's block, or None; a broken block is refused."""
    starts = [n for n, line in enumerate(lines) if line.strip().startswith(begin)]
    ends = [n for n, line in enumerate(lines) if line.strip() == end]
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise _refuse(path, f"its cli-org block is broken (expected one '{begin}' line and one '{end}' after it)")
    return starts[0], ends[0]


def _without_block(path: Path, text: str, begin: str, end: str) -> str:
    lines = text.splitlines(keepends=True)
    span = _block_span(path, lines, begin, end)
    if span is None:
        return text
    first, last = span
    before, after = lines[:first], lines[last + 1 :]
    if not after and before and before[-1].strip() == "":
        before = before[:-1]  # the blank line that separated the block at the end
    return "".join(before + after)


def _append(text: str, block: str) -> str:
    if not text:
        return block
    if not text.endswith("\n"):
        text += "\n"
    return text + ("" if text.endswith("\n\n") else "\n") + block


def _replace_or_append(path: Path, text: str, block: str, begin: str, end: str) -> str:
    lines = text.splitlines(keepends=True)
    span = _block_span(path, lines, begin, end)
    if span is None:
        return _append(text, block)
    first, last = span
    return "".join(lines[:first]) + block + "".join(lines[last + 1 :])


def _toml(path: Path, text: str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _refuse(path, f"not valid TOML ({exc})") from None


def _toml_value(value: Any) -> str:
    # A JSON string or array of strings is a valid TOML basic string or array.
    return json.dumps(value)


def toml_server(path: Path, entry: dict[str, Any], harness: str) -> Edit:
    """The MCP entry as [mcp_servers.cli-org] (Codex), in a block of its own at the end."""
    head = f"# {BEGIN} (written by `cli-org setup {harness}`; `cli-org setup {harness} --remove` takes it out)\n"
    body = f"[mcp_servers.{SERVER}]\n" + "".join(
        f"{k} = {_toml_value(v)}\n" for k, v in entry.items() if not isinstance(v, dict)
    )
    for key, table in entry.items():
        if isinstance(table, dict):
            body += f"\n[mcp_servers.{SERVER}.{key}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in table.items())
    block = head + body + f"# {END}\n"

    def add(text: str | None) -> str:
        text = text or ""
        _toml(path, text)
        rest = _toml(path, _without_block(path, text, f"# {BEGIN}", f"# {END}"))
        servers = rest.get("mcp_servers", {})
        if not isinstance(servers, dict):
            raise _refuse(path, "mcp_servers is not a table")
        if SERVER in servers:
            raise _refuse(path, f"it has an MCP server [mcp_servers.{SERVER}] that cli-org did not write; rename it")
        new = _replace_or_append(path, text, block, f"# {BEGIN}", f"# {END}")
        if new == text:
            return text
        try:
            import tomllib

            after = tomllib.loads(new)
        except Exception as exc:
            raise _refuse(path, f"adding [mcp_servers.{SERVER}] would break it ({exc})") from None
        expected = {**rest, "mcp_servers": {**servers, SERVER: entry}}
        if after != expected:
            raise _refuse(path, f"adding [mcp_servers.{SERVER}] would change other settings")
        return new

    def remove(text: str) -> str:
        return _without_block(path, text, f"# {BEGIN}", f"# {END}")

    return Edit(path, "MCP server entry", add, remove, lambda text: _toml(path, text))


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


def _yaml(path: Path, text: str) -> dict[str, Any]:
    import yaml

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


_YAML_KEY = re.compile(r"^mcp_servers:[ \t]*(#.*)?$")


def yaml_server(path: Path, entry: dict[str, Any], harness: str) -> Edit:
    """The MCP entry under the top-level `mcp_servers:` mapping (Hermes), as a block of
    lines inside it (or a new `mcp_servers:` block at the end). Values are written as JSON,
    which YAML reads as flow style."""

    head = f"# {BEGIN} (written by `cli-org setup {harness}`)\n"
    tail = f"# {END}\n"

    def entry_lines(indent: str) -> str:
        inner = indent + "  "
        return f"{indent}{SERVER}:\n" + "".join(f"{inner}{k}: {json.dumps(v)}\n" for k, v in entry.items())

    def add(text: str | None) -> str:
        text = text or ""
        _yaml(path, text)
        stripped = _without_block(path, text, f"# {BEGIN}", f"# {END}")
        rest = _yaml(path, stripped)
        servers = rest.get("mcp_servers")
        if servers is not None and not isinstance(servers, dict):
            raise _refuse(path, "mcp_servers is not a mapping")
        if servers and SERVER in servers:
            raise _refuse(path, f'it has an MCP server "{SERVER}" that cli-org did not write; rename or remove it')
        lines = stripped.splitlines(keepends=True)
        keys = [n for n, line in enumerate(lines) if _YAML_KEY.match(line.rstrip("\r\n"))]
        if "mcp_servers" not in rest:
            new = _append(stripped, head + "mcp_servers:\n" + entry_lines("  ") + tail)
        elif len(keys) == 1:
            at, indent = keys[0], "  "
            for line in lines[at + 1 :]:
                if line.strip() and not line.lstrip().startswith("#"):
                    indent = line[: len(line) - len(line.lstrip())] or indent
                    break
            new = "".join(lines[: at + 1]) + indent + head + entry_lines(indent) + indent + tail
            new += "".join(lines[at + 1 :])
        else:
            raise _refuse(path, "mcp_servers is written inline; write it as an indented block, one server per key")
        if new == text:
            return text
        after = _yaml(path, new)
        expected = {**rest, "mcp_servers": {**(servers or {}), SERVER: entry}}
        if after != expected:
            raise _refuse(path, f'adding the "{SERVER}" server would change other settings')
        return new

    def remove(text: str) -> str:
        return _without_block(path, text, f"# {BEGIN}", f"# {END}")

    return Edit(path, "MCP server entry", add, remove, lambda text: _yaml(path, text))


def markdown_block(path: Path, body: str) -> Edit:
    """An instruction block between marker comments in a Markdown file the harness reads."""
    block = f"{MD_BEGIN}\n{body.rstrip()}\n{MD_END}\n"

    def add(text: str | None) -> str:
        text = text or ""
        return _replace_or_append(path, text, block, MD_BEGIN, MD_END)

    def remove(text: str) -> str:
        return _without_block(path, text, MD_BEGIN, MD_END)

    def parse(text: str) -> str:
        _block_span(path, text.splitlines(), MD_BEGIN, MD_END)
        return text.strip()

    return Edit(path, "instruction block", add, remove, parse)
