"""Harness hooks: what cli-org prints when a harness starts a session, the user sends a
prompt or the agent ends its turn, and the fail-open wrapper every hook runs in.

Separate parts, so that a warm helper process can later do the work for the hook:
- `parse_hook_input`: the harness's JSON on stdin (Claude Code: session_id, prompt, cwd,
  hook_event_name, source, transcript_path, stop_hook_active), checked and nothing more;
- `parse_hermes_turn`: Hermes's `pre_llm_call` input read as a session start: its first turn,
  or a later one whose conversation no longer holds a block (compaction summarised it away);
- `claude_code_hook`: the work, on a connection: the `cli-org context` block at session
  start (Claude Code, Codex and Hermes, each in its own JSON), only the new on-match hits on
  each prompt (Claude Code), as the harness's JSON output; at an owner's
  or a team lead's session start, the review list's daily refresh started in the background
  (`refresh_review`);
- `turn_lessons` and `lesson_ask`: at the end of a turn, the lasting lessons of the
  turn's transcript (archive/lessons.py) that are no fact yet and were not asked about in
  the session, as a "block" that asks the agent to save them with `org_remember` or say
  why not (issue 35); nothing after plain work, nothing when the harness is already
  continuing because a stop hook asked (`stop_hook_active`);
- `fail_open`: runs the work in a thread with a deadline; any failure or the deadline gives
  no output, so an agent session is never blocked or broken by the org memory.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..db import Conn
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError
from ..limits import MAX_QUERY_CHARS, MAX_QUERY_WORDS
from ..local.project import project_root
from ..text import one_line
from .context import DEFAULT_BUDGET, MAX_SESSION, build_context

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..archive.lessons import Lesson
    from ..config import Settings
    from ..recall.answer import RecallHit
    from ..shaping import HookShaping
    from ..vault.embedders import Embedder

# The whole hook, from reading stdin to printing, ends within this many seconds or prints
# nothing (the bound: "exits 0 quickly"). A warm hook takes well under a second; the
# slowest honest path is a cold embedded server start (0.8 s measured, docs/design.md) plus the
# query model's load (0.4 s).
HOOK_SECONDS = 5.0
# A connection attempt gives up after this many seconds (libpq's PGCONNECT_TIMEOUT, whole
# seconds), well inside HOOK_SECONDS.
CONNECT_SECONDS = 2
# The harness kills a hook that runs longer than this (seconds, written into its settings):
# a second bound, above ours, should ours ever fail.
HARNESS_TIMEOUT = 10
# Session start gets the same block as `cli-org context`; each prompt gets at most this
# many tokens of hits (HIT_LIMIT hits of about one 150-character line each, with room).
SESSION_START_BUDGET = DEFAULT_BUDGET
PROMPT_BUDGET = 400
EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}
# The events each harness's hooks run cli-org for. Codex 0.169's SessionStart hook takes
# Claude Code's input and answer (hookSpecificOutput.additionalContext, added to the model's
# context as a developer message), with source startup, resume, clear, compact or fork; it
# runs again after a compaction. Hermes 0.19 has no session-start hook that can add context:
# its `pre_llm_call` shell hook runs before each turn and adds `{"context": ...}` to the
# turn's user message, which later requests replay (tests/test_client_*.py, docs/agents.md).
HARNESS_EVENTS = {
    "claude-code": ("session-start", "prompt", "stop"),
    "codex": ("session-start", "stop"),
    "hermes": ("session-start",),
}
# The end of a turn (`cli-org hook HARNESS stop`): its own work (turn_lessons, lesson_ask).
# Codex's Stop hook (0.169) takes the same answer as Claude Code's: a "block" whose reason
# Codex hands the model as the next prompt.
STOP = "stop"
STOP_HARNESSES = ("claude-code", "codex")
# One ask names at most this many lessons (the brief's bound: an agent asked about more
# than two things at the end of a turn answers none of them well); the best-scored first.
ASK_LESSONS = 2
# A lesson's claim is quoted in the ask cut to this many characters: the ask names it, the
# agent reads the whole sentence in its own transcript (a claim is at most 300, lessons.py).
ASK_CLAIM = 160
# A transcript path longer than this is no path a harness writes (Linux's PATH_MAX).
MAX_PATH = 4096
# What a lesson asked about is remembered under in the session's delivery record
# (context_delivered, migration 0015), beside the context entries: a lesson is asked once
# per session. The rest of the key is proposals.claim_key: a digest, never the words.
ASKED = "lesson "
# SessionStart's `source` when the conversation is new. Any other (compact, clear, resume)
# starts a conversation in which what was delivered before is gone or summarised away: the
# agent loses what it was told exactly then, so the stable block is delivered again in full.
NEW_CONVERSATION = "startup"
# Every block starts with this (context.py _head_line, text format): a Hermes conversation that
# holds it still has what a session start delivered, so its later turns get nothing more.
BLOCK_HEAD = "== Org context for "


@dataclass(frozen=True)
class HookInput:
    event: str | None  # hook_event_name as the harness sent it
    session_id: str | None
    prompt: str | None
    cwd: str | None
    source: str | None = None  # SessionStart: startup, resume, clear or compact
    transcript_path: str | None = None  # the session's transcript (hostile: any path at all)
    stop_hook_active: bool = False  # Stop: the harness continues because a stop hook asked

    @property
    def again(self) -> bool:
        """A session start into a conversation that no longer holds what was delivered."""
        return self.event == "SessionStart" and self.source not in (None, NEW_CONVERSATION)


def _hook_json(raw: str) -> dict[str, Any]:
    """A harness's hook input: one JSON object (nothing at all reads as an empty one)."""
    try:
        data = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise InputError(f"the hook input is not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InputError("the hook input is not a JSON object")
    return data


def parse_hook_input(raw: str) -> HookInput:
    """The fields cli-org uses from the harness's JSON; a field of the wrong type is absent."""
    data = _hook_json(raw)

    def text(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) and value.strip() else None

    return HookInput(
        text("hook_event_name"),
        text("session_id"),
        text("prompt"),
        text("cwd"),
        text("source"),
        text("transcript_path"),
        data.get("stop_hook_active") is True,
    )


def parse_hermes_turn(raw: str) -> HookInput | None:
    """Hermes's `pre_llm_call` input (session_id, cwd, and under `extra` is_first_turn and
    conversation_history, the messages so far with what a hook added to each) as a session
    start: source startup on the first turn, compact on a later turn whose history holds no
    block (Hermes's compaction summarised it away); None when the history still holds one
    (nothing to add, no connection)."""
    data = _hook_json(raw)
    extra = data.get("extra")
    extra = extra if isinstance(extra, dict) else {}
    if extra.get("is_first_turn") is True:
        source = NEW_CONVERSATION
    elif BLOCK_HEAD in json.dumps(extra.get("conversation_history"), ensure_ascii=False, default=str):
        return None
    else:
        source = "compact"
    session, cwd = data.get("session_id"), data.get("cwd")
    return HookInput(
        EVENTS["session-start"],
        session if isinstance(session, str) and session.strip() else None,
        None,
        cwd if isinstance(cwd, str) and cwd.strip() else None,
        source,
    )


def turn_text(prompt: str) -> str:
    """A prompt cut to what a recall accepts (limits.py): its first words, as a question."""
    words = prompt.split()[:MAX_QUERY_WORDS]
    return " ".join(words)[:MAX_QUERY_CHARS]


def hook_project(hook: HookInput, explicit: str | None) -> tuple[str | None, Path | None]:
    """The project name and root for a hook: --project if given, else the name of the
    project root (project.py) that holds the harness's working folder."""
    if not hook.cwd:
        return explicit, None
    root = project_root(cwd=Path(hook.cwd))
    return explicit or root.name or None, root


@owns_transaction
def claude_code_hook(
    conn: Conn,
    event: str,
    hook: HookInput,
    *,
    settings: Settings,
    project: str | None = None,
    embedder: Embedder | None = None,
    log: bool = True,
    harness: str = "claude-code",
) -> str:
    """What the harness should read on stdout for `event` (session-start or prompt): Claude
    Code's JSON (Codex's too) with the block as additionalContext, Hermes's `{"context": ...}`,
    or "" when nothing applies. `log=False` (an evaluation run) keeps the prompt's recall out
    of the usage log."""
    if event not in EVENTS:
        raise InputError(f"unknown hook event {event!r}; use one of {', '.join(EVENTS)}")
    if event not in HARNESS_EVENTS.get(harness, ()):
        raise InputError(f"no {event} hook for {harness!r}")
    session = hook.session_id if hook.session_id and len(hook.session_id) <= MAX_SESSION else None
    name, root = hook_project(hook, project)
    if root is not None and settings.root is None:
        settings = replace(settings, root=str(root))  # the memory arm reads this project's files
    if event == "session-start":
        block = build_context(
            conn, settings=settings, project=name, session=session, budget=SESSION_START_BUDGET, again=hook.again
        )
        refresh_review(conn, block.agent, name, root)
    else:
        question = turn_text(hook.prompt or "")
        if not question:
            return ""
        block = build_context(
            conn,
            settings=settings,
            project=name,
            for_text=question,
            session=session,
            budget=PROMPT_BUDGET,
            embedder=embedder,
            hits_only=True,
            admit=lambda hits: prompt_hits(hits, settings.hook_shaping),
            arms=settings.hook_shaping.arms,
            log=log,
        )
    if not block.text:
        return ""
    if harness == "hermes":
        return json.dumps({"context": block.text}, ensure_ascii=False)
    output = {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": block.text}}
    return json.dumps(output, ensure_ascii=False)


def refresh_review(conn: Conn, agent: str, project: str | None, root: Path | None) -> bool:
    """At an owner's or a team lead's session start, when its review list was last refreshed
    more than a day ago (store/review.py REFRESH_AFTER): claim the refresh (one statement
    that waits for nothing) and start it in a process of its own, not waited for. Whatever
    fails here never reaches the session: the block is delivered either way. True: started."""
    from ..store.review import claim_refresh, start_refresh

    try:
        if not claim_refresh(conn):
            return False
        start_refresh(agent, project=project, root=root)
        return True
    except Exception:  # fail open: the list waits for the next session start
        conn.rollback()
        return False


def prompt_hits(hits: list[RecallHit], shaping: HookShaping) -> list[RecallHit]:
    """The hits of a recall that clear the prompt hook's own bar (HookShaping)."""
    notes = [h.similarity for h in hits if h.arm == "vault" and h.similarity is not None]
    best_note = max(notes, default=None)
    return [h for h in hits if shaping.admits(h.arm, h.similarity, h.whole, h.data.get("z"), best_note)]


def turn_lessons(hook: HookInput, embedder: Embedder | None = None, *, harness: str = "claude-code") -> list[Lesson]:
    """The lessons of the turn that just ended, read from the last turn of the harness's
    transcript (a Claude Code transcript or a Codex rollout, lessons.py: a bounded read of its
    tail, a device, FIFO, folder or missing file refused with InputError). None when the
    harness is already continuing because a stop hook asked, or names no transcript."""
    from ..archive.lessons import lessons, turns_from_claude_transcript, turns_from_codex_transcript

    if harness not in STOP_HARNESSES:
        raise InputError(f"no stop hook for {harness!r}; use one of {', '.join(STOP_HARNESSES)}")

    if hook.stop_hook_active or not hook.transcript_path:
        return []
    name = hook.transcript_path
    if len(name) > MAX_PATH or "\0" in name or not Path(name).is_absolute():
        raise InputError("the transcript path is not an absolute path of a file")
    read = turns_from_codex_transcript if harness == "codex" else turns_from_claude_transcript
    turns = read(Path(name), last_turn_only=True)
    return lessons(turns, embedder) if turns else []


@owns_transaction
def lesson_ask(
    conn: Conn,
    hook: HookInput,
    found: Sequence[Lesson],
    *,
    project: str | None = None,
    embedder: Embedder | None = None,
) -> str:
    """What the harness should read on stdout at the end of a turn: a "block" whose reason
    names the best ASK_LESSONS of `found` that no current fact says yet (store.proposals.
    known_claim, by words or meaning) and that were not asked about earlier in the session,
    asking the agent to save each with org_remember if it is lasting or say why not; "" when
    none is left. The lessons asked about are remembered for the session."""
    from ..store.proposals import claim_key, known_claim

    if hook.stop_hook_active or not found:
        return ""
    session = hook.session_id if hook.session_id and len(hook.session_id) <= MAX_SESSION else None
    name, _ = hook_project(hook, project)
    asked: set[str] = set()
    if session is not None:
        asked = {r["hit_key"] for r in conn.execute(sql("context.delivered"), {"session": session})}
    picked: list[Lesson] = []
    for lesson in sorted(found, key=lambda one: -one.score):
        key = ASKED + claim_key(lesson.claim)
        if key in asked:
            continue
        asked.add(key)
        if known_claim(conn, lesson.subject, lesson.claim, name, embedder) is None:
            picked.append(lesson)
        if len(picked) == ASK_LESSONS:
            break
    if not picked:
        return ""
    if session is not None:
        for lesson in picked:
            conn.execute(sql("context.deliver"), {"session": session, "key": ASKED + claim_key(lesson.claim)})
    return json.dumps({"decision": "block", "reason": ask(picked)}, ensure_ascii=False)


def ask(picked: Sequence[Lesson]) -> str:
    """The reason of the block: the lessons, each in one short line, and what to do."""
    lines = [f'- "{one_line(lesson.claim, ASK_CLAIM)}" ({lesson.kind})' for lesson in picked]
    what = "a lesson" if len(picked) == 1 else "lessons"
    it = "it" if len(picked) == 1 else "each"
    return (
        f"cli-org: this turn may hold {what} the team should keep:\n" + "\n".join(lines) + "\n"
        f"If {it} is lasting (a rule, a decision, a fix that worked), save {it} with the org_remember "
        "tool (subject, claim, source); if not, say in one line why not. Then end your turn."
    )


@dataclass(frozen=True)
class Outcome:
    text: str  # what to print ("" on any failure)
    finished: bool  # False: the deadline passed and the work is still running
    problem: str | None  # why nothing was printed, for stderr


def fail_open(work: Callable[[], str], seconds: float = HOOK_SECONDS) -> Outcome:
    """Run `work` in a daemon thread for at most `seconds`; never raises."""
    result: list[str] = []
    failure: list[str] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # fail open: whatever went wrong, the session goes on
            failure.append(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)

    thread = threading.Thread(target=run, name="cli-org-hook", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return Outcome("", False, f"no answer within {seconds:g} s")
    if failure:
        return Outcome("", True, failure[0])
    return Outcome(result[0] if result else "", True, None)
