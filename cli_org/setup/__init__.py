"""`cli-org setup HARNESS`: write, for one harness, what its agents need to use cli-org
(the MCP server entry with the agent's identity; hooks or an instruction block), and take
exactly that out again with --remove.

The rules (docs/agents.md, "Use it from your agents"):
- every change is planned first, for every file: a malformed file is refused before any
  file is written, so nothing is half-done;
- running twice changes nothing (each edit returns the text unchanged when cli-org's part
  is already there as it would write it);
- a file is backed up to FILE.cli-org-backup before its first edit; --remove puts the
  backup back byte for byte when what is left is the original, deletes a file cli-org
  created, and otherwise takes out only cli-org's part;
- an entry of the same name that cli-org did not write is the user's: refused, never
  overwritten.

Formats followed (the versions are in docs/agents.md): Claude Code's `.mcp.json` /
`~/.claude.json` "mcpServers" and `settings.json` "hooks"; Codex's `config.toml`
`[mcp_servers.NAME]` and AGENTS.md; Hermes's `config.yaml` `mcp_servers:` and its context
files (`.hermes.md`/`HERMES.md`, else AGENTS.md, in a project; SOUL.md in its home).
"""

from __future__ import annotations

import difflib
import functools
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..session.hooks import HARNESS_TIMEOUT
from . import files
from .edits import Edit, json_hooks, json_server, markdown_block, toml_server, yaml_server

HARNESSES = ("claude-code", "codex", "hermes")
BACKUP_SUFFIX = ".cli-org-backup"
# What the MCP server and the hooks need from the environment of the one who ran setup:
# the database, and where the embedded server lives when it is not the default.
PASSED_ON = ("CLI_ORG_DATABASE_URL", "CLI_ORG_DATABASE", "CLI_ORG_DATA_DIR")
# Folders a harness reads and cli-org may have made; --remove takes one away when empty.
HARNESS_FOLDERS = (".claude", ".codex", ".hermes")

INSTRUCTIONS = """\
## Org memory (cli-org)

You work as the agent `{agent}` in your team's org memory, through the `cli-org` MCP tools.

- Before you decide or change something the team may already know about (a convention, a
  past failure, a decision, where something lives), ask `org_recall` a short question.
- When you learn something others will need (a decision, a rule, a fix that worked, a
  failure to avoid), save it with `org_remember`: a subject, one claim, and its source
  (a file, a link, a ticket). One fact per call.
- When a fact is wrong or out of date, retire it with `org_forget` (its id and why);
  `org_facts` lists what is known, `org_search` searches the notes.
- Keep your own working notes short with `org_notebook`; `org_context` gives the block
  to start a session with.
"""


@dataclass
class Change:
    path: str
    what: str
    action: str  # create, edit, delete, restore (the backup put back), unchanged
    backup: str | None  # the backup this change made, or the one it restored
    before: str | None = field(default=None, repr=False)
    after: str | None = field(default=None, repr=False)
    # Where the file and its backup lie, as plan() checked them (files.py).
    here: files.Place | None = field(default=None, repr=False)
    kept: files.Place | None = field(default=None, repr=False)


@dataclass
class SetupResult:
    harness: str
    scope: str  # project or user
    project_dir: str | None
    agent: str | None
    remove: bool
    dry_run: bool
    changes: list[Change]
    diff: str  # the unified diff of every change
    notes: list[str]


def launcher() -> list[str]:
    """How a harness starts cli-org outside any virtualenv: the absolute path of the
    running `cli-org`, else the one on PATH, else this Python with `-m cli_org`."""
    running = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if running is not None and running.name == "cli-org" and running.is_file():
        return [str(running.absolute())]
    found = shutil.which("cli-org")
    if found:
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "cli_org"]


def passed_on(env: Mapping[str, str]) -> dict[str, str]:
    return {k: env[k] for k in PASSED_ON if env.get(k)}


def _home(env: Mapping[str, str], variable: str, default: str) -> Path:
    """A harness's own folder: its *_HOME variable when set, else ~/default."""
    return Path(env[variable]).expanduser() if env.get(variable) else Path.home() / default


def _hook_command(event: str, agent: str, exe: list[str], env: dict[str, str]) -> str:
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = shlex.join([*exe, "hook", "claude-code", event, "--as", agent])
    return f"{assignments} {command}" if assignments else command


def edits_for(
    harness: str, agent: str, project_dir: Path | None, env: Mapping[str, str], exe: list[str] | None = None
) -> tuple[list[Edit], list[str]]:
    """The edits for a harness and the notes to print with them."""
    exe = exe or launcher()
    extra = passed_on(env)
    server_env = {"ORG_AGENT": agent, **extra}
    args = [*exe[1:], "mcp", "--as", agent]
    notes: list[str] = []
    if harness == "claude-code":
        entry: dict[str, Any] = {"type": "stdio", "command": exe[0], "args": args, "env": server_env}
        groups = {
            event_name: {
                "hooks": [
                    {"type": "command", "command": _hook_command(event, agent, exe, extra), "timeout": HARNESS_TIMEOUT}
                ]
            }
            for event, event_name in (("session-start", "SessionStart"), ("prompt", "UserPromptSubmit"))
        }
        if project_dir is not None:
            notes.append("Claude Code asks once before it starts a project's MCP servers (.mcp.json): approve cli-org")
            return [
                json_server(project_dir / ".mcp.json", "mcpServers", entry),
                json_hooks(project_dir / ".claude" / "settings.json", groups),
            ], notes
        return [
            json_server(Path.home() / ".claude.json", "mcpServers", entry),
            json_hooks(Path.home() / ".claude" / "settings.json", groups),
        ], notes
    entry = {"command": exe[0], "args": args, "env": server_env}
    text = INSTRUCTIONS.format(agent=agent)
    if harness == "codex":
        home = _home(env, "CODEX_HOME", ".codex")
        if project_dir is not None:
            notes.append("Codex reads a project's .codex/config.toml only once the project is trusted")
            return [
                toml_server(project_dir / ".codex" / "config.toml", entry, harness),
                markdown_block(project_dir / "AGENTS.md", text),
            ], notes
        return [toml_server(home / "config.toml", entry, harness), markdown_block(home / "AGENTS.md", text)], notes
    if harness == "hermes":
        home = _home(env, "HERMES_HOME", ".hermes")
        config = yaml_server(home / "config.yaml", entry, harness)
        if project_dir is None:
            return [config, markdown_block(home / "SOUL.md", text)], notes
        notes.append("Hermes reads MCP servers only from its home's config.yaml; that entry applies to every project")
        context = next(
            (project_dir / n for n in (".hermes.md", "HERMES.md") if (project_dir / n).is_file()),
            project_dir / "AGENTS.md",
        )
        return [config, markdown_block(context, text)], notes
    raise InputError(f"unknown harness {harness!r}; use one of {', '.join(HARNESSES)}")


def _read(where: files.Place) -> str | None:
    raw = files.read(where)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{where.path}: not UTF-8 text; fix or move the file, then run again (nothing was changed)"
        ) from None


def _empty(value: Any) -> Any:
    """A parsed file with empty objects and lists left out, to compare what is left."""
    if isinstance(value, dict):
        kept = {k: _empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [], "", None)}
    if isinstance(value, list):
        return [_empty(v) for v in value]
    return value


def plan(edits: list[Edit], *, remove: bool, project_dir: Path | None = None) -> list[Change]:
    """What each edit would do; raises (before anything is written) on a malformed file, or
    on a link, a file that is not a regular one, or a taken temporary or backup name where
    setup would write (files.py)."""
    changes = []
    for edit in edits:
        here = files.place(edit.path, project_dir)
        backup = here.beside(here.name + BACKUP_SUFFIX)
        files.must_be_free(here.temporary)
        before = _read(here)
        change = functools.partial(_change, edit, here, backup, before)

        if not remove:
            after = edit.add(before)
            if after == before:
                changes.append(change("unchanged", None, after))
            elif before is None:
                changes.append(change("create", None, after))
            else:
                # A fresh backup holds the file before cli-org touched it; once cli-org's
                # part is in, the existing backup is that original and is kept.
                ours_in = edit.remove(before) != before
                if ours_in and _read(backup) is not None:
                    made = None
                else:
                    files.must_be_free(backup)
                    made = str(backup.path)
                changes.append(change("edit", made, after))
            continue
        if before is None or edit.remove(before) == before:
            changes.append(change("unchanged", None, before))
            continue
        left = edit.remove(before)
        original = _read(backup)
        if original is not None and _same(edit, left, original):
            changes.append(change("restore", str(backup.path), original))
        elif original is None and not _empty(edit.parse(left)):
            changes.append(change("delete", None, None))
        else:
            changes.append(change("edit", None, left))
    return changes


def _change(
    edit: Edit,
    here: files.Place,
    backup: files.Place,
    before: str | None,
    action: str,
    made: str | None,
    after: str | None,
) -> Change:
    return Change(str(edit.path), edit.what, action, made, before, after, here, backup)


def _same(edit: Edit, left: str, original: str) -> bool:
    """Whether what --remove leaves is the original, so the backup goes back byte for byte.
    For a block edit the user's lines are kept as they are, so only
    the same text counts (a comment added since is not lost to the backup); only the
    newlines setup put before its block at the end may differ."""
    if not edit.rewrites:
        return left.rstrip("\n") == original.rstrip("\n")
    try:
        return bool(_empty(edit.parse(left)) == _empty(edit.parse(original)))
    except ConfigError:
        return False


def diff(changes: list[Change]) -> str:
    out: list[str] = []
    for c in changes:
        if c.action == "unchanged":
            continue
        a = (c.before or "").splitlines(keepends=True)
        b = (c.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            a,
            b,
            fromfile=c.path if c.before is not None else "/dev/null",
            tofile=c.path if c.after is not None else "/dev/null",
        )
        out.extend(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return "".join(out)


def apply(changes: list[Change]) -> None:
    """Carry the planned changes out: backups first, then the files."""
    for c in changes:
        if c.action == "edit" and c.backup and c.before is not None and c.kept is not None:
            files.create(c.kept, c.before.encode("utf-8"))
    for c in changes:
        if c.here is None:
            continue
        if c.action in ("create", "edit", "restore") and c.after is not None:
            files.replace(c.here, c.after.encode("utf-8"))
        if c.action == "restore" and c.kept is not None:
            files.delete(c.kept)
        if c.action == "delete":
            files.delete(c.here)
            files.remove_folder_if_empty(c.here, HARNESS_FOLDERS)


def setup(
    harness: str,
    *,
    agent: str | None,
    project_dir: Path | None,
    remove: bool = False,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    exe: list[str] | None = None,
) -> SetupResult:
    """Plan (and unless dry_run, carry out) the setup or its removal for one harness."""
    if harness not in HARNESSES:
        raise InputError(f"unknown harness {harness!r}; use one of {', '.join(HARNESSES)}")
    if project_dir is not None and not project_dir.is_dir():
        raise InputError(f"--project-dir {project_dir} is not a folder")
    env = os.environ if env is None else env
    if not remove and not agent:
        raise InputError("name the agent: --agent NAME (or set ORG_AGENT)")
    edits, notes = edits_for(harness, agent or "-", project_dir, env, exe)
    changes = plan(edits, remove=remove, project_dir=project_dir)
    if not dry_run:
        apply(changes)
    scope = "project" if project_dir is not None else "user"
    where = str(project_dir.resolve()) if project_dir is not None else None
    return SetupResult(harness, scope, where, agent, remove, dry_run, changes, diff(changes), notes)
