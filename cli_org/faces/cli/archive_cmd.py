"""archive import / memory / history, usage, and sessions search."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ...checks.rules import HARNESSES
from ..render import counted, usage_text

if TYPE_CHECKING:
    from ...archive.propose import ProposeSummary
    from ...db import Conn
    from ...org import Org
from .common import AGENT, OsPath, as_option, connection, emit_json, json_option, org, query_argument, this_operation


def _progress() -> Callable[[str, int, int], None] | None:
    """A one-line progress display on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(harness: str, done: int, total: int) -> None:
        noun = "file" if total == 1 else "files"
        # The last update erases the line, leaving only the summaries printed afterwards.
        line = "\r\x1b[K" if done == total else f"\r{harness}: {done}/{total} {noun}"
        click.echo(line, nl=False, err=True)

    return show


@click.group()
def archive() -> None:
    """The archive of agent sessions and memory-file versions."""


# Whose the proposals of a session are when the harness set-up's record does not say (a
# colleague's folder, a store copied from another machine): else nobody's until accepted.
agent_option = click.option(
    "--agent",
    "owner",
    type=AGENT,
    metavar="NAME",
    help="The agent whose sessions these are, where `cli-org setup` did not wire one for their folder.",
)


@archive.command("import")
@click.option("--claude", type=OsPath(path_type=Path), metavar="DIR", help="Claude Code projects folder.")
@click.option("--hermes", type=OsPath(path_type=Path), metavar="PATH", help="Hermes home or its state.db.")
@click.option("--codex", type=OsPath(path_type=Path), metavar="DIR", help="Codex sessions folder.")
@click.option("--no-propose", is_flag=True, help="Do not propose lessons from the new messages (docs/proposals.md).")
@agent_option
@json_option
def import_cmd(
    claude: Path | None, hermes: Path | None, codex: Path | None, no_propose: bool, owner: str | None, as_json: bool
) -> None:
    """Import agent sessions; only what is new since the last import.

    With no option, reads each harness's usual place that exists: ~/.claude/projects
    (or $CLAUDE_CONFIG_DIR/projects), ~/.hermes/state.db (or $HERMES_HOME) and
    ~/.codex/sessions (or $CODEX_HOME/sessions). With options, reads only those.
    """
    from ...archive.homes import session_stores
    from ...archive.importer import import_sessions

    given = {"claude-code": claude, "hermes": hermes, "codex": codex}
    stores = {h: p for h, p in given.items() if p is not None} or session_stores()
    if not stores:
        if as_json:
            emit_json({"imported": [], "proposed": None})
        click.echo(
            "no session stores found in ~/.claude/projects, ~/.hermes or ~/.codex/sessions; "
            "pass --claude, --hermes or --codex",
            err=True,
        )
        return
    # The query model is loaded by proposing, only if a session holds a candidate sentence: loaded
    # beside the import instead, on the other core, it made a cold import of the real transcripts
    # slower, not faster (benchmarks/RESULTS.md, Proposals).
    with org(None) as opened, opened.serving(this_operation()) as conn:
        if owner is not None and not no_propose:
            from ...archive.propose import known_agent

            known_agent(conn, owner)  # before anything is imported
        summaries = import_sessions(conn, stores, progress=_progress(), lock_wait=opened.settings.lock_wait)
        proposed = None if no_propose else _propose(conn, opened, again=False, owner=owner)
    failed = [(s.harness, entry) for s in summaries for entry in s.failed]
    if as_json:
        emit_json({"imported": summaries, "proposed": proposed})
    else:
        for s in summaries:
            noun = "store" if s.harness == "hermes" else "file"
            reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(s.skipped.items()))
            click.echo(
                f"{s.harness}: {counted(s.sources, noun)}, "
                f"{s.read} with new lines; {counted(s.sessions, 'session')} and {counted(s.messages, 'message')} "
                f"added; {counted(s.malformed, 'malformed line')} skipped"
                + (f" ({reasons})" if reasons else "")
                + (f"; {counted(len(s.failed), noun)} failed" if s.failed else "")
            )
        if proposed is not None:
            click.echo(_proposed_text(proposed))
    for harness, entry in failed:
        click.echo(f"cli-org: {harness}: {entry}", err=True)
    if failed:
        sys.exit(1)  # the other files were imported; exit 1 says that some were not


def _propose(conn: Conn, opened: Org, *, again: bool, owner: str | None) -> ProposeSummary:
    """Proposals from the sessions' new messages (archive/propose.py), each session's agent
    read from the harness set-up's record, else `owner` (--agent), else nobody's yet."""
    from ...archive.propose import propose

    def whose(harness: str, cwd: str | None) -> str | None:
        from ...setup.record import agent_for  # only for a session with a lesson

        return agent_for(os.environ, harness, cwd) or owner

    from ...vault.embedders import query_embedder

    return propose(
        conn, load_embedder=lambda: query_embedder(opened.settings)[0], agent_for=whose, again=again,
        progress=_propose_progress(), lock_wait=opened.settings.lock_wait, named=owner,
    )  # fmt: skip


def _propose_progress() -> Callable[[int, int], None] | None:
    show = _progress()
    return None if show is None else (lambda done, total: show("proposals", done, total))


def _proposed_text(p: ProposeSummary) -> str:
    text = (
        f"proposals: {counted(p.proposed, 'lesson')} proposed from {counted(p.messages, 'new message')} "
        f"of {counted(p.sessions, 'session')}"
    )
    skipped = [(p.known, "already a fact"), (p.repeated, "proposed before"), (p.refused, "refused by the write checks")]
    said = ", ".join(f"{n} {why}" for n, why in skipped if n)
    return text + (f" ({said})" if said else "") + ("; review them: cli-org proposals" if p.proposed else "")


@archive.command("propose")
@click.option("--again", is_flag=True, help="Read every message again, not only those new since the last run.")
@agent_option
@json_option
def propose_cmd(again: bool, owner: str | None, as_json: bool) -> None:
    """Propose lessons from archived sessions (what `archive import` does after importing).

    Reads each session's messages not read before and proposes the lasting lessons in them
    (a person's correction, a rule, a failure and its fix, a decision): never facts until
    accepted (`cli-org proposals`). A claim already a current fact, refused by the write
    checks, or proposed before (rejected included) is not proposed."""
    with org(None) as opened, opened.serving(this_operation()) as conn:
        done = _propose(conn, opened, again=again, owner=owner)
    if as_json:
        emit_json(done)
    else:
        click.echo(_proposed_text(done))


@archive.command("judge")
@json_option
def judge_cmd(as_json: bool) -> None:
    """Judge the hits later quoted of archived sessions not judged yet.

    `archive import` judges each session as it imports it, and at its end every session
    judged by an older version of the rule or imported before verdicts were stored; this
    does only that last part, for an archive that gets no new sessions.
    """
    from ...archive.verdicts import judge_stale

    with org(None) as opened, opened.serving(this_operation()) as conn:
        found = judge_stale(conn, lock_wait=opened.settings.lock_wait)
    if as_json:
        emit_json(found)
        return
    click.echo(f"{counted(found.sessions, 'session')} that recalled; {found.judged} judged now")


@archive.command("memory")
@click.argument("paths", nargs=-1, type=OsPath(path_type=Path))
@json_option
def memory_cmd(paths: tuple[Path, ...], as_json: bool) -> None:
    """Store a version of each memory file whose content changed.

    PATHS are files or folders (their *.md files). With none: Claude Code's
    projects/*/memory/, Hermes' memories/MEMORY.md and USER.md, and .agents/org/memory/*.md
    under the project root (ORG_ROOT, else the git top-level, else the current folder: the
    files recall reads). Lock, temp and backup files are ignored.
    """
    from ...archive.homes import memory_files
    from ...archive.memory_versions import capture
    from ...local.project import project_root
    from ...text import one_line

    with org(None) as opened:
        targets = list(paths) or memory_files(project_root(opened.settings.root))
        if not targets:
            if as_json:
                emit_json({"files": [], "ignored": []})
            click.echo("no memory files found; pass files or folders", err=True)
            return
        with opened.serving(this_operation()) as conn:
            result = capture(conn, targets)
    if as_json:
        emit_json(result)
        if result.refused:
            sys.exit(1)
        return
    for f in result.files:
        if f.new:
            where = one_line(f"{f.root.rstrip('/')}/{f.path}")
            click.echo(f"v{f.version} {where} ({f.source}, {f.size} bytes)")
    new = sum(f.new for f in result.files)
    click.echo(
        f"{counted(len(result.files), 'file')}: {counted(new, 'new version')}, "
        f"{len(result.files) - new} unchanged; {len(result.ignored)} ignored"
        + (f"; {len(result.refused)} refused" if result.refused else "")
    )
    for entry in result.refused:
        click.echo(f"cli-org: {one_line(entry)}", err=True)
    if result.refused:
        sys.exit(1)  # the other files were stored; exit 1 says that some were not


@archive.command("history")
@click.argument("file")
@click.option("--no-diff", is_flag=True, help="List the versions without their diffs.")
@json_option
def history_cmd(file: str, no_diff: bool, as_json: bool) -> None:
    """How a memory file was edited: each version's time, size and diff from the one before.

    FILE is a path, or the end of an archived path (MEMORY.md, memories/USER.md).
    """
    from ...archive.memory_versions import file_history
    from ...text import one_line

    with connection() as conn:
        found = file_history(conn, file)
    if as_json:
        emit_json(found)
        return
    click.echo(f"{one_line(found.file)} ({found.source}): {counted(len(found.versions), 'version')}")
    for v in found.versions:
        when = f"{v.modified_at:%Y-%m-%d %H:%M}" if v.modified_at else "?"
        click.echo(
            f"v{v.version}  {when}  {v.size} bytes  +{v.added} -{v.removed}  captured {v.captured_at:%Y-%m-%d %H:%M}"
        )
        if not no_diff and v.version > 1:
            click.echo(v.diff, nl=False)


@archive.command("erase")
@click.argument("session_id", metavar="SESSION")
@click.argument("position", type=click.IntRange(0, 2**63 - 1), metavar="POSITION")
@click.option("--reason", metavar="WHY", required=True, help="Why it is erased (kept and shown; not the text itself).")
@click.option("--harness", type=click.Choice(HARNESSES), help="When the session id exists in more than one harness.")
@as_option
@json_option
def erase_cmd(
    session_id: str, position: int, reason: str, harness: str | None, agent: str | None, as_json: bool
) -> None:
    """Remove an archived message's text from every place the database keeps it (owners only).

    SESSION is the id `sessions search` prints; POSITION is the message's `#N` in `sessions
    show`. Every part of that record loses its text, command and raw record, and its text is
    replaced by '[erased]' wherever it is quoted (other messages, verdicts, memory-file
    versions, notebooks, the recall log). Who erased it, when and why are kept."""
    from ...store.erase import erase_message
    from ..render import erased_line

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        done = erase_message(conn, session_id, position, reason, harness=harness, via=opened.settings.via)
    if as_json:
        emit_json({"session": session_id, "position": position, "erased": True, **vars(done)})
        return
    click.echo(erased_line(f"message {position} of session {session_id}", done))


@click.command()
@click.option("--days", type=click.IntRange(1, 3650), default=30, show_default=True, help="The window, in days.")
@click.option(
    "--by",
    "bucket",
    type=click.Choice(["day", "week"]),
    default="day",
    show_default=True,
    help="Adoption over time per day or per week (with --detail, and in --json).",
)
@click.option("--detail", is_flag=True, help="Also print adoption over time, per agent and per session.")
@json_option
def usage(days: int, bucket: str, detail: bool, as_json: bool) -> None:
    """Is memory being used? Sessions that recalled or remembered, per harness, and how many
    recalled hits the session later quoted.

    Counted from archived transcripts (run `cli-org archive import` first) and, beside them,
    from cli-org's own recall log where it exists. --json carries every table --detail prints.
    """
    from ...archive.usage import usage_detail

    with connection() as conn:
        found = usage_detail(conn, days, bucket)
    if as_json:
        emit_json(found)
        return
    click.echo(usage_text(found, detail))


@click.group()
def sessions() -> None:
    """Archived agent sessions."""


@sessions.command("search")
@query_argument("query")
@click.option("--limit", type=click.IntRange(1, 50), default=10, show_default=True, help="At most this many hits.")
@click.option("--harness", type=click.Choice(HARNESSES), help="Only this harness.")
@json_option
def search_cmd(query: str, limit: int, harness: str | None, as_json: bool) -> None:
    """Full-text search over archived messages, newest matching message first.

    Every keyword must match; "quoted phrase", -word and OR work as in a web search.
    """
    from ...archive.sessions import search_messages
    from ..render import message_hit_line

    with connection() as conn:
        hits = search_messages(conn, query, limit=limit, harness=harness)
    if as_json:
        emit_json(hits)
        return
    if not hits:
        click.echo("no matching messages")
        return
    for h in hits:
        click.echo(message_hit_line(h))


@sessions.command("show")
@click.argument("session_id", metavar="ID")
@click.option("--harness", type=click.Choice(HARNESSES), help="When the id exists in more than one harness.")
@json_option
def show_cmd(session_id: str, harness: str | None, as_json: bool) -> None:
    """One archived session whole: every message in order, each tool call with its name,
    command and result.

    ID is the session id that `sessions search` prints."""
    from ...archive.sessions import show_session
    from ...text import one_line

    with connection() as conn:
        found = show_session(conn, session_id, harness=harness)
    if as_json:
        emit_json(found)
        return
    head = [found.harness, one_line(found.external_id)]
    for label, value in (
        ("title", found.title),
        ("project", found.project),
        ("cwd", found.cwd),
        ("branch", found.git_branch),
        ("model", found.model),
        ("parent", found.parent),
    ):
        if value:
            head.append(f"{label} {one_line(value, 120)}")
    click.echo("session " + "; ".join(head))
    span = " to ".join(f"{t:%Y-%m-%d %H:%M}" for t in (found.started_at, found.ended_at) if t)
    click.echo(
        f"{counted(len(found.messages), 'message')}, {counted(found.tool_calls, 'tool call')}; {span or 'no times'}"
    )
    for turn in found.messages:
        when = f"{turn.occurred_at:%Y-%m-%d %H:%M:%S}" if turn.occurred_at else "?"
        if turn.tool:
            call = turn.tool
            click.echo(
                f"\n[{when}] #{turn.position} tool call {one_line(call.name)}"
                + (f" ({one_line(call.call_id)})" if call.call_id else "")
            )
            if call.command:
                click.echo(_indented("$ " + call.command))
            elif call.input:
                click.echo(_indented(call.input))
            if call.result is not None:
                click.echo("  result:")
                click.echo(_indented(call.result, "    "))
            else:
                click.echo("  (no result recorded)")
        else:
            click.echo(f"\n[{when}] #{turn.position} {turn.kind}")
            click.echo(_indented(turn.text or ""))


def _indented(text: str, pad: str = "  ") -> str:
    from ...text import safe_block

    return "\n".join(pad + line for line in safe_block(text).split("\n"))


COMMANDS = [archive, usage, sessions]
