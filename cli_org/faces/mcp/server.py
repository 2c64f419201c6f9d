"""The MCP server: one process per agent session, over stdio, on the official `mcp` SDK.

A face like the CLI: each tool parses its arguments, calls the one library function the
matching command calls, and answers with the same text (cli_org/faces/render.py). It never
imports click. The process starts in front.py, which answers a harness's first messages
before this module (and the SDK) is imported, then hands every message to `serve`. The
rules, one line each (what they promise: docs/agents.md, `cli-org mcp`; why the first:
benchmarks/JOURNAL.md, "Tuning notes that were in the code, second batch"):

- The model reads the text and nothing else: no structured content, no output schema.
- Each tool declares its effect (annotations from cli_org/org/registry.py) and openWorldHint false.
- Arguments: `additionalProperties: false`; a bad one is one line in the CLI's words, naming the argument.
- Identity: fixed when the process starts (--as / ORG_AGENT, or the login role); no tool takes an agent.
- One Org for the process's life: a pool of one connection, the query embedder loaded once, one call at a time.
- With CLI_ORG_READ_URL, a read goes where the registry routes it (org/registry.py); writes and logs, the primary.
- A refusal is a tool error with the CLI's one line; anything unexpected too, traceback on stderr, serving on.
- Every call is logged in tool_calls (face `mcp`); a recall in recall_events too.
- `cli-org://context` is the block for the project of the server's working folder (session/hooks.py hook_project).
- SIGINT and SIGTERM end the server after the call in hand, and close its Org (front.py).
"""

from __future__ import annotations

import inspect
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import AfterValidator, Field, ValidationError

from ... import __version__
from ...checks.rules import HARNESSES, KINDS, LINK_KINDS, MAX_ID, MAX_TODO, NOTEBOOK_STORES
from ...db.errors import translated
from ...errors import InputError, OrgError
from ...limits import RECALL_HITS, SESSION_HITS, check_words
from ...org.registry import tool_effect
from ...session.context import DEFAULT_BUDGET, MIN_BUDGET, build_context
from ...session.hooks import HookInput, hook_project
from ...store import notebook as nb
from ...store.facts import forget, list_facts, restore
from ...store.links import link, unlink
from ...store.pins import list_pins, pin, unpin
from ...store.proposals import accept, list_proposals, reject
from ...store.todos import add_todo, done_todo, list_todos
from ..render import (
    change_line,
    facts_text,
    link_line,
    message_hit_line,
    note_hit_lines,
    notebook_text,
    pinned_line,
    pins_text,
    proposals_text,
    restored_text,
    todos_text,
)
from .calls import client_via, in_tool_terms, recall_text, remember_text, unexpected

if TYPE_CHECKING:
    from ...db import Conn
    from ...org import Org
    from .front import Front

SERVER_NAME = "cli-org"  # the name harnesses prefix to the tools: mcp__cli-org__org_recall
R = TypeVar("R")

INSTRUCTIONS = """\
cli-org is the team's shared memory. Before you act on a task, call org_recall with one
question about it: the answer comes from shared facts, bot memory files and the markdown
vault, each hit labelled. When you learn something others should know, store it with
org_remember (one sourced claim). Retire a wrong fact with org_forget. Your own bounded
notes: org_notebook reads them, org_notebook_edit changes them. You act as one fixed
agent; no argument changes who you are."""


@dataclass
class Call:
    """The tool call being served: its name, when it arrived, whether it is logged yet."""

    tool: str
    started: float
    logged: bool = False
    via: str | None = None  # the harness the call came through (OrgServer.via_of)


_CALL: ContextVar[Call | None] = ContextVar("cli_org_mcp_call", default=None)


@dataclass
class Session:
    """The process's Org (connections, replica routing, model, call log: cli_org/org)
    and the lock that serves calls one at a time on its connection."""

    org: Org
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def run(self, operation: str, fn: Callable[[Conn], R]) -> R:
        """Run fn(conn) on the connection the registered `operation` runs on (the replica's
        for a read that may be stale, when there is one: org/registry.py), in a worker
        thread, one call at a time."""
        async with self.lock:
            return await anyio.to_thread.run_sync(lambda: self.org.call(operation, fn))

    async def answer(self, operation: str, body: Callable[[Conn], CallToolResult]) -> CallToolResult:
        """A tool's body, as the registered `operation`, and its log line, in one trip to the
        connection (the log line goes to the primary when the body read from the replica)."""
        call = _CALL.get()

        def served(conn: Conn) -> CallToolResult:
            result = _outcome(lambda: body(conn))
            if call is not None:
                call.logged = True
                self.org.log_call(call.tool, not result.is_error, call.started, conn)
            return result

        try:
            return await self.run(operation, served)
        except OrgError as exc:  # no connection to run it on (the database down): its one line
            return _refusal(str(exc))

    async def ask(self, body: Callable[[Org], CallToolResult]) -> CallToolResult:
        """A tool's body that asks the Org itself (recall, context: the Org routes their
        reads and their side writes), then its log line."""
        call = _CALL.get()

        def served() -> CallToolResult:
            result = _outcome(lambda: body(self.org))
            if call is not None:
                call.logged = True
                self.org.log_call(call.tool, not result.is_error, call.started)
            return result

        async with self.lock:
            return await anyio.to_thread.run_sync(served)

    async def log(self, call: Call, ok: bool) -> None:
        call.logged = True
        async with self.lock:
            await anyio.to_thread.run_sync(lambda: self.org.log_call(call.tool, ok, call.started))


def _outcome(body: Callable[[], CallToolResult]) -> CallToolResult:
    """An OrgError is the CLI's line as a tool error, and so is a database error no library
    call translated (the server ending a session as a call begins: "lost the database ...",
    and the next call connects again); a crash is a tool error too, with its traceback on
    stderr, and the server goes on."""
    try:
        with translated():
            return body()
    except OrgError as exc:
        return _refusal(str(exc))
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return _refusal(unexpected(exc))


def _answer(text: str) -> CallToolResult:
    """A tool's answer: the CLI's text alone (what the model reads; see the module's doc)."""
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _refusal(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def argument_problem(error: Any) -> str:
    """One pydantic error about a tool's arguments in the CLI's words (click's, for the same
    mistakes on the command line): `missing argument 'question'`, `invalid value for
    'limit': input should be less than or equal to 50`."""
    name = ".".join(str(part) for part in error["loc"]) or "arguments"
    if error["type"] == "missing":
        return f"missing argument {name!r}"
    cause = error.get("ctx", {}).get("error")
    said = str(cause) if isinstance(cause, ValueError) else str(error["msg"])
    return f"invalid value for {name!r}: {said[:1].lower()}{said[1:]}"


class OrgServer(MCPServer):
    """MCPServer that refuses arguments a tool does not declare, says every refusal in one
    line in tool terms, and logs every call."""

    def __init__(self, session: Session):
        super().__init__(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
        self.session = session

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(sorted(self._tool_names()))}")
        call = Call(name, time.perf_counter(), via=self.via_of(context))
        token = _CALL.set(call)
        ok = False
        try:
            declared = set(tool.parameters.get("properties", {}))
            unknown = sorted(set(arguments or {}) - declared)
            if unknown:
                who = " (who you are is fixed for this server's life)" if {"agent", "as"} & set(unknown) else ""
                raise ToolError(f"{name} takes no argument {', '.join(repr(u) for u in unknown)}{who}")
            try:
                result = await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if not isinstance(exc.__cause__, ValidationError):
                    raise
                problems = [argument_problem(e) for e in exc.__cause__.errors()]
                raise ToolError("; ".join(dict.fromkeys(problems))) from None
            ok = not getattr(result, "is_error", False)
            if not ok and isinstance(result, CallToolResult):
                for part in result.content:
                    if isinstance(part, TextContent):
                        part.text = in_tool_terms(part.text, declared)
            return result
        finally:
            _CALL.reset(token)
            if not call.logged:  # refused before its body ran: bad arguments
                await self.session.log(call, ok)

    def _tool_names(self) -> list[str]:
        return [t.name for t in self._tool_manager.list_tools()]

    def via_of(self, context: Any) -> str | None:
        """The harness a call comes through, for the writes it makes (a fact's `via`, the
        activity feed's "by harness"): ORG_VIA when set (`cli-org setup` sets it), else the
        name the client gave itself in its clientInfo (the initialize handshake, or each
        request's envelope in the 2026-07-28 protocol), at this host."""
        settings = self.session.org.settings if self.session.org is not None else None
        if settings is not None and settings.via:
            return settings.via
        try:
            params = context.session.client_params
        except (AttributeError, ValueError):  # no request context: a call made in-process
            return None
        return client_via(params.client_info.name) if params is not None else None


def _via() -> str | None:
    """The harness of the call being served (None outside a call)."""
    call = _CALL.get()
    return call.via if call is not None else None


def _words(text: str) -> str:
    """limits.check_words as a validator: its refusal is an argument error (ValueError)."""
    try:
        return check_words(text)
    except InputError as exc:
        raise ValueError(str(exc)) from None


# Argument types, with the descriptions a model reads.
Project = Annotated[
    str | None, Field(description="A project name: its facts plus facts with no project. Omit for all.")
]
Words = AfterValidator(_words)  # a question or query: not blank, as on the command line


class Tools:
    """The server's tools, bound to its session: each `org_*` method is one tool, and its
    name, docstring and annotated parameters are what a client lists."""

    def __init__(self, session: Session):
        self.session = session

    async def org_recall(
        self,
        question: Annotated[str, Words, Field(description="One question about the task at hand, in plain words.")],
        project: Project = None,
        limit: Annotated[
            int, Field(ge=RECALL_HITS.low, le=RECALL_HITS.high, description="Hits in all, across the three arms.")
        ] = RECALL_HITS.default,
    ) -> CallToolResult:
        """Ask the org's memory before you act. Answers from shared facts ([fact #id]), bot
        memory files and your notebook ([memory]) and the markdown vault ([vault]), one line
        per hit, or "nothing found". Cite a fact by its #id."""

        def body(org: Org) -> CallToolResult:
            return _answer(recall_text(org, question, project, limit))  # the front's too (calls.py)

        return await self.session.ask(body)

    async def org_remember(
        self,
        subject: Annotated[str, Field(description="What the claim is about, in a few words (e.g. 'deploy script').")],
        claim: Annotated[str, Field(description="One self-contained, checkable statement (at most 1000 characters).")],
        source: Annotated[
            str, Field(description="Where it comes from: a file path, #message, ticket id or URL. Required.")
        ],
        project: Project = None,
        kind: Annotated[
            Literal[KINDS],  # type: ignore[valid-type]
            Field(description="fact, or decision / failure / workflow / rule / preference / model_note."),
        ] = "fact",
        supersedes: Annotated[
            int | None, Field(ge=1, le=MAX_ID, description="The #id of a fact this one replaces; that fact is retired.")
        ] = None,
        inferred: Annotated[bool, Field(description="True when you inferred it rather than saw it confirmed.")] = False,
        allow_duplicate: Annotated[
            bool, Field(description="True to store it even beside a near-duplicate of one of your current facts.")
        ] = False,
    ) -> CallToolResult:
        """Store one sourced claim in the shared memory, as you. Returns the new fact's id.
        Write checks refuse secrets, vague or unsourced claims, and prompt-like text. A
        claim meaning what one of your current facts says is refused with its #id (replace it
        with supersedes, or keep both with allow_duplicate); another agent's is confirmed, not
        copied; one disagreeing with a current fact is stored and marked contradicting it."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            arguments = {"subject": subject, "claim": claim, "source": source, "project": project, "kind": kind}
            arguments.update(supersedes=supersedes, inferred=inferred, allow_duplicate=allow_duplicate)
            return _answer(remember_text(conn, self.session.org, via, **arguments))  # the front's too (calls.py)

        return await self.session.answer("facts.remember", body)

    async def org_forget(
        self,
        id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the fact to retire.")],
        why: Annotated[str, Field(description="Why it is wrong or no longer true; kept with the fact.")],
    ) -> CallToolResult:
        """Retire a fact (it is never deleted). Its author, their team lead or an owner may."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            forget(conn, id, why, via=via)
            return _answer(f"retired {id}")

        return await self.session.answer("facts.forget", body)

    async def org_restore(
        self,
        id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the retired fact to bring back.")],
        why: Annotated[str, Field(description="Why it holds after all; kept with the fact.")],
    ) -> CallToolResult:
        """Bring a forgotten fact back. Its author, their team lead or an owner may. The pin
        its retirement ended comes back too, unless that scope has since filled its cap."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            return _answer(restored_text(restore(conn, id, why, embedder=self.session.org.embedder, via=via)))

        return await self.session.answer("facts.restore", body)

    async def org_facts(
        self,
        subject: Annotated[str | None, Field(description="Only this subject (case-insensitive).")] = None,
        project: Annotated[str | None, Field(description="Only this project.")] = None,
        author: Annotated[str | None, Field(description="Only facts by this agent.")] = None,
        kind: Annotated[Literal[KINDS] | None, Field(description="Only this kind.")] = None,  # type: ignore[valid-type]
        include_retired: Annotated[
            bool, Field(description="Also retired and superseded facts, with who retired them and why.")
        ] = False,
    ) -> CallToolResult:
        """List current shared facts, filtered, one line each with source, author and age."""

        def body(conn: Conn) -> CallToolResult:
            found = list_facts(
                conn, include_retired=include_retired, subject=subject, project=project, author=author, kind=kind
            )
            return _answer(facts_text(found))

        return await self.session.answer("facts.list", body)

    async def org_link(
        self,
        from_id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the fact the link comes from.")],
        kind: Annotated[
            Literal[LINK_KINDS],  # type: ignore[valid-type]
            Field(
                description="depends-on: from holds only while to holds; explains: from says why to is so; "
                "confirms: from says the same as to; contradicts: both cannot hold."
            ),
        ],
        to_id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the fact the link points to.")],
        reason: Annotated[str | None, Field(description="Why they are linked, in a few words.")] = None,
    ) -> CallToolResult:
        """Link two current facts as you: from_id is `kind` of to_id. Returns the link's id;
        linking again returns the live link already there. A contradiction waits for a
        person to choose."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            return _answer(link_line(link(conn, from_id, kind, to_id, reason=reason, via=via)))

        return await self.session.answer("links.link", body)

    async def org_unlink(
        self,
        id: Annotated[int, Field(ge=1, le=MAX_ID, description="The id of the link (org_link gave it).")],
        why: Annotated[str, Field(description="Why the link no longer holds; kept with it.")],
    ) -> CallToolResult:
        """Remove a link (it is kept, marked removed). Its author, their team lead or an owner may."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            return _answer(link_line(unlink(conn, id, why, via=via)))

        return await self.session.answer("links.unlink", body)

    async def org_pin(
        self,
        id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the current fact to pin.")],
        project: Annotated[
            str | None, Field(description="Pin in this project (default: the fact's project, else org-wide).")
        ] = None,
    ) -> CallToolResult:
        """Pin a current fact so that every session starts with it (10 org-wide, 5 per project;
        a full scope is refused). Its author, their team lead or an owner may."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            return _answer(pinned_line("pinned", pin(conn, id, project, via=via)))

        return await self.session.answer("pins.pin", body)

    async def org_unpin(
        self, id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the pinned fact.")]
    ) -> CallToolResult:
        """Unpin a fact (the pin is kept in the history, with who unpinned it and when). The
        fact's author, their team lead or an owner may."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            return _answer(pinned_line("unpinned", unpin(conn, id, via=via)))

        return await self.session.answer("pins.unpin", body)

    async def org_pins(
        self,
        project: Annotated[
            str | None, Field(description="The org-wide pins and this project's. Omit for every project's.")
        ] = None,
        include_unpinned: Annotated[
            bool, Field(description="Also past pins, with who unpinned them and when.")
        ] = False,
    ) -> CallToolResult:
        """The pinned facts every session starts with, org-wide ones first, one line each."""

        def body(conn: Conn) -> CallToolResult:
            return _answer(pins_text(list_pins(conn, project=project, include_unpinned=include_unpinned)))

        return await self.session.answer("pins.list", body)

    async def org_todo_add(
        self,
        text: Annotated[str, Field(description=f"The open item, in a line (at most {MAX_TODO} characters).")],
        project: Annotated[str | None, Field(description="The project it belongs to (default: org-wide).")] = None,
    ) -> CallToolResult:
        """Add an open item for the team, as you; returns its id. It stays until marked done."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            return _answer(str(add_todo(conn, text, project, via=via).id))

        return await self.session.answer("todos.add", body)

    async def org_todo_done(
        self, id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the open item.")]
    ) -> CallToolResult:
        """Mark an item done (it is kept, with who and when). Its author, their team lead or
        an owner may."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            done_todo(conn, id, via=via)
            return _answer(f"done {id}")

        return await self.session.answer("todos.done", body)

    async def org_todos(
        self,
        project: Annotated[
            str | None, Field(description="The org-wide items and this project's. Omit for every project's.")
        ] = None,
        include_done: Annotated[bool, Field(description="Also done items, with who and when.")] = False,
    ) -> CallToolResult:
        """The team's open items, org-wide ones first, one line each with its #id."""

        def body(conn: Conn) -> CallToolResult:
            return _answer(todos_text(list_todos(conn, project=project, include_done=include_done)))

        return await self.session.answer("todos.list", body)

    async def org_search(
        self,
        query: Annotated[str, Words, Field(description="Words or a question to look for in the markdown vault.")],
        mode: Annotated[
            Literal["hybrid", "keyword", "semantic"],
            Field(description="hybrid (default) blends keyword and meaning; keyword for exact names."),
        ] = "hybrid",
        limit: Annotated[int, Field(ge=1, le=100, description="Notes to return.")] = 10,
    ) -> CallToolResult:
        """Search the markdown vault: one hit per note (its best chunk), with its score."""
        from ...vault.search import search

        def body(conn: Conn) -> CallToolResult:
            result = search(conn, query, mode=mode, limit=limit, embedder=self.session.org.embedder)
            lines = [note_hit_lines(h) for h in result.hits] or ["no matches"]
            if result.notice:
                lines.insert(0, f"notice: {result.notice}")
            return _answer("\n".join(lines))

        return await self.session.answer("vault.search", body)

    async def org_sessions_search(
        self,
        query: Annotated[
            str, Words, Field(description='Keywords, all of which must match; "a phrase", -word and OR work.')
        ],
        limit: Annotated[
            int, Field(ge=SESSION_HITS.low, le=SESSION_HITS.high, description="At most this many messages.")
        ] = SESSION_HITS.default,
        harness: Annotated[
            Literal[HARNESSES] | None,  # type: ignore[valid-type]
            Field(description="Only sessions of this harness."),
        ] = None,
    ) -> CallToolResult:
        """Full-text search over archived agent sessions, newest matching message first."""
        from ...archive.sessions import search_messages

        def body(conn: Conn) -> CallToolResult:
            hits = search_messages(conn, query, limit=limit, harness=harness)
            text = "\n".join(message_hit_line(h) for h in hits) or "no matching messages"
            return _answer(text)

        return await self.session.answer("sessions.search", body)

    async def org_notebook(
        self,
        target: Annotated[
            Literal[NOTEBOOK_STORES] | None,  # type: ignore[valid-type]
            Field(description="memory (your own notes) or user (about the person you work with). Omit for both."),
        ] = None,
    ) -> CallToolResult:
        """Your own bounded notebook (memory 2,200 / user 1,375 characters), read only by you:
        each store with how full it is, its entries separated by lines holding §."""

        def body(conn: Conn) -> CallToolResult:
            return _answer(notebook_text(nb.show(conn, target), nb.SEPARATOR))

        return await self.session.answer("notebook.show", body)

    async def org_notebook_edit(
        self,
        action: Annotated[
            Literal["add", "replace", "patch", "remove"],
            Field(
                description="add an entry; replace the one entry containing old_text with text; patch: replace "
                "the span old_text with text inside its entry; remove the one entry containing old_text."
            ),
        ],
        target: Annotated[
            Literal[NOTEBOOK_STORES],  # type: ignore[valid-type]
            Field(description="memory: your own notes. user: what you know about the person you work with."),
        ] = "memory",
        text: Annotated[str | None, Field(description="The new entry (add, replace) or the new span (patch).")] = None,
        old_text: Annotated[
            str | None,
            Field(description="A part of one entry only: the entry to replace or remove, or the span to patch."),
        ] = None,
    ) -> CallToolResult:
        """Change your own notebook (memory 2,200 / user 1,375 characters). A write past the
        cap is refused with the entries, so you can merge or remove some; old_text must match
        one entry only (and, to patch, occur once in it)."""
        needs = {
            "add": ("text",),
            "replace": ("old_text", "text"),
            "patch": ("old_text", "text"),
            "remove": ("old_text",),
        }
        given = {"text": text, "old_text": old_text}
        # A patch's new span may be empty (it cuts the span out); nothing else may.
        missing = [n for n in needs[action] if given[n] is None or not given[n] and (action, n) != ("patch", "text")]
        if missing:
            return _refusal(f"{action} needs {' and '.join(missing)}")
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            if action == "add":
                change = nb.add(conn, target, text or "", via=via)
            elif action == "replace":
                change = nb.replace(conn, target, old_text or "", text or "", via=via)
            elif action == "patch":
                change = nb.patch(conn, target, old_text or "", text or "", via=via)
            else:
                change = nb.remove(conn, target, old_text or "", via=via)
            return _answer(change_line(change))

        return await self.session.answer(f"notebook.{action}", body)

    async def org_context(
        self,
        for_: Annotated[
            str | None,
            Field(validation_alias="for", description="The task or message at hand: adds the recall hits for it."),
        ] = None,
        budget: Annotated[
            int, Field(ge=MIN_BUDGET, description="Never return more tokens than this (characters / 4).")
        ] = DEFAULT_BUDGET,
        project: Project = None,
    ) -> CallToolResult:
        """The session context block: your notebook, pinned facts, open todos, current facts by
        kind, and with `for` the hits for that task; within the token budget."""

        def body(org: Org) -> CallToolResult:
            block = org.context(project=project, for_text=for_, budget=budget)
            return _answer(block.text or "(nothing to show)")

        return await self.session.ask(body)

    async def org_proposals(self, project: Project = None) -> CallToolResult:
        """The lessons proposed from your archived sessions that wait for you (a lead also sees
        its team's): one line each with its #id. Accept the lasting ones with
        org_proposal_accept (edit the claim if it needs it), reject the rest."""

        def body(conn: Conn) -> CallToolResult:
            found = list_proposals(conn, project=project)
            return _answer(proposals_text(found))

        return await self.session.answer("proposals.list", body)

    async def org_proposal_accept(
        self,
        id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the proposal.")],
        claim: Annotated[
            str | None, Field(description="The claim as it should stand, if the proposed words need an edit.")
        ] = None,
        subject: Annotated[str | None, Field(description="The subject, if it needs an edit.")] = None,
    ) -> CallToolResult:
        """Make a proposal a fact of yours (its source names the session it came from)."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            done = accept(conn, id, claim=claim, subject=subject, via=via, embedder=self.session.org.embedder)
            return _answer(f"accepted {id} as fact #{done.fact_id}")

        return await self.session.answer("proposals.accept", body)

    async def org_proposal_reject(
        self,
        id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the proposal.")],
        reason: Annotated[str | None, Field(description="Why it is no lasting lesson, in a few words.")] = None,
    ) -> CallToolResult:
        """Reject a proposal that is no lasting lesson; it is never proposed again."""
        via = _via()

        def body(conn: Conn) -> CallToolResult:
            reject(conn, id, reason=reason, via=via)
            return _answer(f"rejected {id}")

        return await self.session.answer("proposals.reject", body)

    async def _read(self, operation: str, fn: Callable[[Conn], str]) -> str:
        try:
            return await self.session.run(operation, fn)
        except OrgError as exc:
            raise ResourceError(str(exc)) from None

    async def context_resource(self) -> str:
        # The project and root the session-start hook finds for the same folder.
        project, root = hook_project(HookInput(event=None, session_id=None, prompt=None, cwd=str(Path.cwd())), None)
        settings = self.session.org.settings
        if root is not None and settings.root is None:
            settings = replace(settings, root=str(root))  # the memory arm reads this project's files
        return await self._read("context", lambda conn: build_context(conn, settings=settings, project=project).text)

    async def notebook_resource(self) -> str:
        return await self._read("notebook.show", lambda conn: notebook_text(nb.show(conn), nb.SEPARATOR))


def build_server(session: Session) -> OrgServer:
    """The server: the tools (Tools' `org_*` methods, in the order they are defined), each
    with its effect (the registry's: org/registry.py tool_effect) and a schema that takes no other argument, and
    the two resources; no prompts. Listing needs no Org: scripts/mcp_manifest.py lists a server built
    on a session that has none."""
    server = OrgServer(session)
    tools = Tools(session)
    for name in vars(Tools):
        if name.startswith("org_"):
            fn = getattr(tools, name)
            effect = tool_effect(name)
            hints = ToolAnnotations(
                read_only_hint=effect.read_only,
                destructive_hint=effect.destructive,
                idempotent_hint=effect.idempotent,
                open_world_hint=False,  # only the org's own database
            )
            server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints)
            listed = server._tool_manager.get_tool(name)
            assert listed is not None
            listed.parameters["additionalProperties"] = False
    # No prompts: a capability with nothing in it is a capability a client acts on (Hermes 0.19
    # gives the model list_prompts and get_prompt tools for it). The SDK advertises a method
    # family it has a handler for (lowlevel Server.get_capabilities), so the handlers go.
    for method in ("prompts/list", "prompts/get"):
        server._lowlevel_server._request_handlers.pop(method, None)
    server.resource(
        "cli-org://context",
        name="context",
        description="The session context block (cli-org context) for this folder's project: notebook, pins, "
        "todos, facts by kind.",
        mime_type="text/plain",
    )(tools.context_resource)
    server.resource(
        "cli-org://notebook",
        name="notebook",
        description="Your notebook, both stores, with how full each is (cli-org notebook show).",
        mime_type="text/plain",
    )(tools.notebook_resource)
    return server


class _Lines:
    """What the SDK's stdio transport reads (an async file's lines): `first`, then each line
    `take` gives until it gives None."""

    def __init__(self, first: list[str], take: Callable[[], str | None]):
        self.first, self.take = list(first), take

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        if self.first:
            return self.first.pop(0)
        line = await anyio.to_thread.run_sync(self.take, abandon_on_cancel=True)
        if line is None:
            raise StopAsyncIteration
        return line


class _Wire:
    """What the SDK's stdio transport writes to (an async file): each message, to `send`."""

    def __init__(self, send: Callable[[str], None]):
        self.send = send

    async def write(self, text: str) -> None:
        self.send(text)

    async def flush(self) -> None:
        pass


async def serve_lines(server: OrgServer, lines: AsyncIterator[str] | _Lines, send: Callable[[str], None]) -> None:
    """Serve JSON-RPC lines with the SDK until they end: its own stdio transport (parsing,
    errors, serializing) on the lines given instead of the process's stdin and stdout."""
    lowlevel = server._lowlevel_server
    async with stdio_server(cast(Any, lines), cast(Any, _Wire(send))) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


def serve(front: Front, org: Org) -> None:
    """Serve on the Org the front opened (front.py: one connection, and one to the replica with
    CLI_ORG_READ_URL, since calls are served one at a time; the query model): take every
    message over from the front (the initialize it answered first, replayed), serve them until
    stdin closes or a signal stops the server. The front closes the Org."""
    server = build_server(Session(org))
    anyio.run(serve_lines, server, _Lines(front.hand_off(), front.lines.get), front.deliver)
