"""`cli-org setup HARNESS`: write, for one harness, what its agents need to use cli-org
(the MCP server entry with the agent's identity; hooks or an instruction block), and take
exactly that out again with --remove.

The rules (docs/agents.md, "Use it from your agents"):
- every change is planned first, for every file: a malformed file is refused before any
  file is written, so nothing is half-done;
- running twice changes nothing (each edit returns the text unchanged when cli-org's part
  is already there as it would write it);
- cli-org's part of a file is found by what it is (edits.py), and each edit touches only
  its lines, so a harness that rewrites its own file does not lose it;
- a record in the user's own cli-org folder (record.py) keeps what each file was before
  setup first touched it and which harnesses use each part: --remove deletes a file setup
  created, puts an unchanged file back byte for byte, takes only cli-org's part out of a
  file changed since, and keeps a part another harness still uses;
- an entry of the same name that cli-org did not write is the user's: refused, never
  overwritten.

Formats followed (the versions are in docs/agents.md): Claude Code's `.mcp.json` /
`~/.claude.json` "mcpServers", `settings.json` "hooks" and "enabledMcpjsonServers"; Codex's
`config.toml` `[mcp_servers.NAME]`, `hooks.json` "hooks" and AGENTS.md; Hermes's `config.yaml` `mcp_servers:`
and `agent.environment_hint`, and a project's context file (`.hermes.md`/`HERMES.md`,
else AGENTS.md).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import re
import shlex
import shutil
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..org.registry import UNASKED_TOOLS
from ..session.hooks import HARNESS_TIMEOUT
from . import files
from .edits import (
    SERVER,
    Edit,
    json_allowed,
    json_hooks,
    json_name_in_list,
    json_server,
    markdown_block,
    toml_server,
    without_empties,
    yaml_hint,
    yaml_hook,
    yaml_server,
)
from .record import Record, agent_key, held, user_of

HARNESSES = ("claude-code", "codex", "hermes")
# What the MCP server and the hooks need from the environment of the one who ran setup:
# the database, and where the embedded server lives when it is not the default.
PASSED_ON = ("CLI_ORG_DATABASE_URL", "CLI_ORG_DATABASE", "CLI_ORG_DATA_DIR")
# How long Codex waits for cli-org's server before its first turn, and that it waits at
# all (`required`): a server still importing its SDK (1.0-1.35 s quiet, 3-4 s under load)
# missed the first turn of `codex exec` in 6 of 6 runs with Codex's default.
CODEX_STARTUP_SEC = 30

CLAUDE_HOOKS = "session-start, prompt and stop hooks"
CLAUDE_ALLOWED = "approval of the tools that only read or add (not org_forget)"
# Claude Code's permission rule for each tool it may run without asking (org/registry.py,
# UNASKED_TOOLS); any other tool of the server asks the person (`claude -p`: refused).
CLAUDE_RULES = tuple(f"mcp__{SERVER}__{name}" for name in UNASKED_TOOLS)
CODEX_HOOKS = "session-start and stop hooks"
# Hermes 0.19's shell hooks (`hooks:` in its config.yaml): `pre_llm_call` runs before each
# turn and is the one that can add context (session/hooks.py HARNESS_EVENTS).
HERMES_HOOK = "pre_llm_call"

# One block for every harness that reads a project's AGENTS.md: it names no agent (the
# MCP server fixes who the agent is), so Codex and Hermes share it.
INSTRUCTIONS = """\
## Org memory (cli-org)

You reach your team's org memory through the `cli-org` MCP tools; the server knows which
agent you are.

- Before you decide or change something the team may already know about (a convention, a
  past failure, a decision, where something lives), ask `org_recall` a short question.
- When you learn something others will need (a decision, a rule, a fix that worked, a
  failure to avoid), save it with `org_remember`: a subject, one claim, and its source
  (a file, a link, a ticket). One fact per call.
- When a fact is wrong or out of date, retire it with `org_forget` (its id and why);
  `org_facts` lists what is known, `org_search` searches the notes.
- Keep your own working notes short: `org_notebook` reads them, `org_notebook_edit`
  changes them; `org_context` gives the block to start a session with.
"""


@dataclass
class Change:
    path: str
    what: str
    action: str  # create, edit, delete, restore (the file as it was before setup), unchanged
    backup: str | None  # the record that keeps what the file was before setup, when it does
    before: str | None = field(default=None, repr=False)
    after: str | None = field(default=None, repr=False)
    here: files.Place | None = field(default=None, repr=False)  # where the file lies, as plan() checked it


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


def via(harness: str) -> str:
    """ORG_VIA for a harness on this machine: RUNTIME@HOST (checks/rules.py, "via")."""
    host = re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname())[:128] or "localhost"
    return f"{harness}@{host}"


def _home(env: Mapping[str, str], variable: str, default: str) -> Path:
    """A harness's own folder: its *_HOME variable when set, else ~/default."""
    return Path(env[variable]).expanduser() if env.get(variable) else Path.home() / default


def _hook_command(event: str, agent: str, exe: list[str], env: dict[str, str], harness: str = "claude-code") -> str:
    words = [*exe, "hook", harness, event, "--as", agent]
    if harness == "hermes":  # Hermes splits the command into words and runs no shell
        return shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), *words])
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = shlex.join(words)
    return f"{assignments} {command}" if assignments else command


def edits_for(
    harness: str, agent: str, project_dir: Path | None, env: Mapping[str, str], exe: list[str] | None = None
) -> tuple[list[Edit], list[str]]:
    """The edits for a harness and the notes to print with them."""
    exe = exe or launcher()
    extra = {**passed_on(env), "ORG_VIA": via(harness)}
    server_env = {"ORG_AGENT": agent, **extra}
    args = [*exe[1:], "mcp", "--as", agent]
    notes: list[str] = []
    if harness == "claude-code":
        # alwaysLoad: newer Claude Code (2.1.332) hides a server's tools behind its tool
        # search (names only, no schemas) and starts without waiting for it, unless the
        # entry says it is always loaded; then its tools are in the first request. 2.1.197
        # accepts the key (tests/test_client_claude.py runs both).
        entry: dict[str, Any] = {
            "type": "stdio",
            "command": exe[0],
            "args": args,
            "env": server_env,
            "alwaysLoad": True,
        }
        groups = {
            event_name: {
                "hooks": [
                    {"type": "command", "command": _hook_command(event, agent, exe, extra), "timeout": HARNESS_TIMEOUT}
                ]
            }
            for event, event_name in (
                ("session-start", "SessionStart"),
                ("prompt", "UserPromptSubmit"),
                ("stop", "Stop"),  # the end of a turn: a lesson to save (hooks.py, claude_code_stop)
            )
        }
        user_settings = Path.home() / ".claude" / "settings.json"
        notes.append(
            "Claude Code runs cli-org's tools that only read or add without asking; org_forget and the "
            "other tools that change what is there ask first (`claude -p` refuses them unless allowed by name)"
        )
        if project_dir is not None:
            # The approval of the project's .mcp.json server, for this project only: its
            # .claude/settings.local.json, where Claude Code itself keeps the approvals you
            # give in a project (2.1.197 and 2.1.332; they move ~/.claude.json's per-project
            # lists there). The user's own settings.json would approve a server of that name
            # in every checkout, a hostile one cloned later included. --remove takes the name
            # out even when you approved it yourself: left behind, it would approve whatever
            # command a later .mcp.json names `cli-org`.
            notes.append(
                "Claude Code applies the approval once you trust the folder (it asks the first time "
                "`claude` starts there); `claude -p` starts every server of a folder's .mcp.json without asking"
            )
            return [
                json_server(project_dir / ".mcp.json", "mcpServers", entry),
                json_hooks(project_dir / ".claude" / "settings.json", groups, CLAUDE_HOOKS),
                json_name_in_list(
                    project_dir / ".claude" / "settings.local.json",
                    "enabledMcpjsonServers",
                    SERVER,
                    "approval of the project's server (this project only)",
                    by_record=False,
                ),
                # The tools' approval beside the server's, where Claude Code writes the ones
                # the person gives in the terminal: 2.1.197 and 2.1.332 honour it in a trusted
                # folder (2.1.332 in `claude -p` also before), .claude/settings.json only once
                # the folder is trusted (tests/test_client_claude.py).
                json_allowed(project_dir / ".claude" / "settings.local.json", CLAUDE_RULES, CLAUDE_ALLOWED),
                json_name_in_list(
                    user_settings,
                    "enabledMcpjsonServers",
                    SERVER,
                    "approval earlier versions gave every project",
                    retired=True,
                ),
            ], notes
        return [
            json_server(Path.home() / ".claude.json", "mcpServers", entry),
            json_hooks(user_settings, groups, CLAUDE_HOOKS),
            json_allowed(user_settings, CLAUDE_RULES, CLAUDE_ALLOWED),
        ], notes
    entry = {"command": exe[0], "args": args, "env": server_env}
    if harness == "codex":
        home = _home(env, "CODEX_HOME", ".codex")
        # Codex 0.169's SessionStart and Stop hooks, in the hooks.json beside its config (the
        # form Claude Code's settings use): the context block at a session's start and again
        # after a compaction, a lesson of the turn asked for (hooks.py). Codex runs a hook it
        # has not seen only once the user trusts it (`/hooks` in `codex`).
        groups = {
            event_name: {
                "hooks": [
                    {
                        "type": "command",
                        "command": _hook_command(event, agent, exe, extra, "codex"),
                        "timeout": HARNESS_TIMEOUT,
                    }
                ]
            }
            for event, event_name in (("session-start", "SessionStart"), ("stop", "Stop"))
        }
        notes.append(
            "Codex runs the session-start and stop hooks only once you trust them: open `codex` and accept "
            "its hooks review (or `/hooks`); until then they are skipped"
        )
        # Codex waits for a required server before the first turn; the tools that only read
        # or add are approved (org/registry.py, UNASKED_TOOLS), the others are left to the
        # user's approval policy (`codex exec`: refused).
        entry = {
            "command": exe[0],
            "args": args,
            "required": True,
            "startup_timeout_sec": CODEX_STARTUP_SEC,
            "env": server_env,
            "tools": {name: {"approval_mode": "approve"} for name in UNASKED_TOOLS},
        }
        if project_dir is not None:
            notes.append(
                "Codex reads a project's .codex/config.toml only once the project is trusted: "
                "accept its prompt when `codex` first starts there, or pass `--trust` to a `codex exec` there once"
            )
            return [
                toml_server(project_dir / ".codex" / "config.toml", entry),
                json_hooks(project_dir / ".codex" / "hooks.json", groups, CODEX_HOOKS),
                markdown_block(project_dir / "AGENTS.md", INSTRUCTIONS),
            ], notes
        return [
            toml_server(home / "config.toml", entry),
            json_hooks(home / "hooks.json", groups, CODEX_HOOKS),
            markdown_block(home / "AGENTS.md", INSTRUCTIONS),
        ], notes
    if harness == "hermes":
        home = _home(env, "HERMES_HOME", ".hermes")
        config = yaml_server(home / "config.yaml", entry)
        # The session-start block through Hermes's pre_llm_call shell hook (hooks.py
        # parse_hermes_turn), which Hermes runs only once the user consents to it.
        hook = yaml_hook(
            home / "config.yaml",
            HERMES_HOOK,
            {"command": _hook_command("session-start", agent, exe, extra, "hermes"), "timeout": HARNESS_TIMEOUT},
        )
        notes.append(
            "Hermes runs the session-start hook only once you allow it: answer y when `hermes` first asks in a "
            "terminal, or run it once with --accept-hooks; until then it is skipped"
        )
        if project_dir is None:
            # Not SOUL.md: Hermes takes that file as its whole identity, in place of its own.
            return [config, hook, yaml_hint(home / "config.yaml", INSTRUCTIONS)], notes
        notes.append(
            "Hermes reads MCP servers and hooks only from its home's config.yaml; those entries apply to every project"
        )
        context = next(
            (project_dir / n for n in (".hermes.md", "HERMES.md") if (project_dir / n).is_file()),
            project_dir / "AGENTS.md",
        )
        return [config, hook, markdown_block(context, INSTRUCTIONS)], notes
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


def plan(
    edits: list[Edit], record: Record, user: str, *, remove: bool, project_dir: Path | None = None
) -> list[Change]:
    """What each edit would do, with the record updated to match; raises (before anything
    is written) on a malformed file, or on a link, a file that is not a regular one, or a
    taken temporary name where setup would write (files.py). Two edits of one file (the
    Hermes server and its instructions) apply one after the other."""
    changes: list[Change] = []
    texts: dict[Path, str | None] = {}
    originals: dict[Path, str | None] = {}
    for edit in edits:
        here = files.place(edit.path, project_dir)
        key = str(here.path)
        if edit.retired and not record.users(key, edit.part):
            continue  # no earlier setup of ours left its part there: not read, not a line
        files.must_be_free(here.temporary)
        if here.path not in texts:
            texts[here.path] = originals[here.path] = _read(here)
        before = texts[here.path]
        users = record.users(key, edit.part)
        present = before is not None and edit.remove(before) != before
        after: str | None
        if not (remove or edit.retired):
            if edit.by_record and present and not users:
                after = before  # the user's own: left alone, not claimed
            else:
                after = edit.add(before)
                record.claim(key, edit.part, user, before if not present else edit.remove(before or ""), here)
        elif [u for u in users if u != user] or (edit.by_record and not users):
            record.release(key, edit.part, user)
            after = before  # another harness still uses it, or it was never cli-org's
        else:
            after = before if before is None else edit.remove(before)
            record.release(key, edit.part, user)
            if not record.has(key):
                after = record.restored(key, originals[here.path], after, functools.partial(_left, edit))
        texts[here.path] = after
        changes.append(_change(edit, here, before, after, record))
    return _merged(changes)


def _still_approved(edits: list[Edit], record: Record, project_dir: Path | None) -> list[str]:
    """A note for each retired part that other projects' earlier setups still hold."""
    notes = []
    for edit in edits:
        users = record.users(str(files.place(edit.path, project_dir).path), edit.part) if edit.retired else []
        if users:
            projects = ", ".join(u.split(":", 1)[1] for u in users)
            notes.append(
                f"{edit.path} still approves a `{SERVER}` server in every project, for the earlier setup of "
                f"{projects}: run setup (or --remove) there again to take it out"
            )
    return notes


def _left(edit: Edit, text: str) -> Any:
    return without_empties(edit.parse(text))


def _change(edit: Edit, here: files.Place, before: str | None, after: str | None, record: Record) -> Change:
    if after == before:
        action = "unchanged"
    elif after is None:
        action = "delete"
    elif before is None:
        action = "create"
    else:
        action = "restore" if record.was_restored(str(here.path)) else "edit"
    kept = str(record.place.path) if record.keeps(str(here.path)) else None
    return Change(str(edit.path), edit.what, action, kept, before, after, here)


def _merged(changes: list[Change]) -> list[Change]:
    """One change per file: the first one's text before, the last one's after."""
    out: dict[str, Change] = {}
    whats: dict[str, list[str]] = {}
    for c in changes:
        whats.setdefault(c.path, []).append(c.what)
        if c.path in out:
            first = out[c.path]
            *most, last = whats[c.path]
            what = f"{', '.join(most)} and {last}"  # "MCP server entry, session-start hook and ..."
            merged = Change(c.path, what, c.action, c.backup, first.before, c.after, c.here)
            if merged.after == merged.before:
                merged.action = "unchanged"
            elif merged.before is None:
                merged.action = "create"
            elif c.action == "unchanged":
                merged.action = first.action
            out[c.path] = merged
        else:
            out[c.path] = c
    return list(out.values())


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


def apply(changes: list[Change], record: Record) -> None:
    """Carry the planned changes out, then keep the record (and take away the folders
    setup made that are left empty)."""
    for c in changes:
        if c.here is None or c.action == "unchanged":
            continue
        if c.after is None:
            files.delete(c.here)
        else:
            files.replace(c.here, c.after.encode("utf-8"))
            record.wrote(str(c.here.path), c.after)
    record.save()


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
    with contextlib.nullcontext() if dry_run else held(env):
        record = Record.load(env)
        user = user_of(harness, project_dir)
        changes = plan(edits, record, user, remove=remove, project_dir=project_dir)
        # Whose sessions this harness makes here: the archive's importer asks (record.agent_for).
        record.wired(agent_key(harness, project_dir, env), None if remove else agent)
        if remove and project_dir is None:
            record.wired(user, None)  # what a record from before homes were told apart says
        # The harness's notes tell how to use what was written; --remove keeps only the
        # warning that an earlier setup's approval still applies to every project.
        notes = ([] if remove else notes) + _still_approved(edits, record, project_dir)
        if not dry_run:
            apply(changes, record)
    scope = "project" if project_dir is not None else "user"
    where = str(project_dir.resolve()) if project_dir is not None else None
    return SetupResult(harness, scope, where, agent, remove, dry_run, changes, diff(changes), notes)
