"""The MCP server: one process per agent session, over stdio, on the official `mcp` SDK.

A face like the CLI: each tool parses its arguments, calls the one library function the
matching command calls, and renders the same text (cli_org/faces/render.py) plus the result as
structured content. It never imports click.

- Identity: the agent named by --as / ORG_AGENT (embedded server) or the login role (a URL),
  fixed when the process starts. No tool takes an agent; an argument a tool does not declare
  is refused, so `{"agent": "boss"}` changes nothing. Row-level security applies to every
  call exactly as on the command line.
- The process's Org (cli_org/org.py) holds one connection for its life (a pool of one,
  which replaces the connection if the server drops it) and the query embedder loaded
  once; calls are served one at a time on that connection (the long-lived-process rule,
  docs/design.md). Both are closed on exit.
- Reads and writes: with CLI_ORG_READ_URL set, the Org's second pool of one serves the read
  tools (org_recall, org_search, org_facts, org_sessions_search, org_context and the
  context resource) from the replica; writes, the notebook (read your own writes) and every
  log line go to the primary's pool. A recall (or a context block with `for`) read from the
  replica has its log line and lazy fact vectors written on the primary after it, by the
  Org (docs/operations.md, "Read replicas").
- Refusals (write checks, rights, caps: any OrgError) come back as tool errors whose text is
  the CLI's one line; anything unexpected is a tool error too, its traceback goes to stderr,
  and the server keeps serving.
- Every call is logged in tool_calls (face `mcp`, the tool's name, refused or not), so
  `cli-org usage` counts MCP use under the real tool names; a recall is also logged in
  recall_events as from the CLI.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from ... import __version__
from ...checks.rules import HARNESSES, KINDS, MAX_ID, NOTEBOOK_STORES
from ...errors import OrgError
from ...limits import RECALL_HITS, SESSION_HITS
from ...session.context import DEFAULT_BUDGET, MIN_BUDGET, build_context
from ...store import notebook as nb
from ...store.facts import forget, list_facts, remember
from ..render import (
    change_line,
    facts_text,
    message_hit_line,
    note_hit_lines,
    notebook_text,
    plain,
    recall_data,
    remembered_line,
)

if TYPE_CHECKING:
    from ...config import Settings
    from ...db import Conn
    from ...org import Org

SERVER_NAME = "cli-org"  # the name harnesses prefix to the tools: mcp__cli-org__org_recall
FACE = "mcp"  # tool_calls.face
R = TypeVar("R")

INSTRUCTIONS = """\
cli-org is the team's shared memory. Before you act on a task, call org_recall with one
question about it: the answer comes from shared facts, bot memory files and the markdown
vault, each hit labelled. When you learn something others should know, store it with
org_remember (one sourced claim). Retire a wrong fact with org_forget. Your own bounded
notes live in org_notebook. You act as one fixed agent; no argument changes who you are."""


@dataclass
class Call:
    """The tool call being served: its name, when it arrived, whether it is logged yet."""

    tool: str
    started: float
    logged: bool = False


_CALL: ContextVar[Call | None] = ContextVar("cli_org_mcp_call", default=None)


@dataclass
class Session:
    """The process's Org (connections, replica routing, model, call log: cli_org/org.py)
    and the lock that serves calls one at a time on its connection."""

    org: Org
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def run(self, fn: Callable[[Conn], R], *, read: bool = False) -> R:
        """Run fn(conn) on the one connection (the replica's for a read, when there is one),
        in a worker thread, one call at a time."""
        async with self.lock:
            return await anyio.to_thread.run_sync(lambda: self.org.run(fn, read=read))

    async def answer(self, body: Callable[[Conn], CallToolResult], *, read: bool = False) -> CallToolResult:
        """A tool's body and its log line, in one trip to the connection (the log line goes
        to the primary when the body read from the replica)."""
        call = _CALL.get()

        def served(conn: Conn) -> CallToolResult:
            result = _outcome(lambda: body(conn))
            if call is not None:
                call.logged = True
                self.org.log_call(call.tool, not result.is_error, call.started, conn)
            return result

        return await self.run(served, read=read)

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
    """An OrgError is the CLI's line as a tool error; a crash is a tool error too, with its
    traceback on stderr, and the server goes on."""
    try:
        return body()
    except OrgError as exc:
        return _refusal(str(exc))
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return _refusal(f"unexpected error ({type(exc).__name__}); the server's stderr has the details")


def _answer(text: str, data: Any = None) -> CallToolResult:
    structured = plain(data) if data is not None else None
    if structured is not None and not isinstance(structured, dict):
        structured = {"result": structured}  # structured content is a JSON object
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _refusal(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class OrgServer(MCPServer):
    """MCPServer that refuses arguments a tool does not declare and logs every call."""

    def __init__(self, session: Session):
        super().__init__(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
        self.session = session

    async def call_tool(self, name, arguments, context=None):
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(sorted(self._tool_names()))}")
        call = Call(name, time.perf_counter())
        token = _CALL.set(call)
        ok = False
        try:
            unknown = sorted(set(arguments or {}) - set(tool.parameters.get("properties", {})))
            if unknown:
                who = " (who you are is fixed for this server's life)" if {"agent", "as"} & set(unknown) else ""
                raise ToolError(f"{name} takes no argument {', '.join(repr(u) for u in unknown)}{who}")
            result = await super().call_tool(name, arguments, context)
            ok = not getattr(result, "is_error", False)
            return result
        finally:
            _CALL.reset(token)
            if not call.logged:  # refused before its body ran: bad arguments
                await self.session.log(call, ok)

    def _tool_names(self) -> list[str]:
        return [t.name for t in self._tool_manager.list_tools()]


# Argument types, with the descriptions a model reads.
Project = Annotated[
    str | None, Field(description="A project name: its facts plus facts with no project. Omit for all.")
]


class Tools:
    """The server's tools, bound to its session: each `org_*` method is one tool, and its
    name, docstring and annotated parameters are what a client lists."""

    def __init__(self, session: Session):
        self.session = session

    async def org_recall(
        self,
        question: Annotated[str, Field(description="One question about the task at hand, in plain words.")],
        project: Project = None,
        limit: Annotated[
            int, Field(ge=RECALL_HITS.low, le=RECALL_HITS.high, description="Hits in all, across the three arms.")
        ] = RECALL_HITS.default,
    ) -> CallToolResult:
        """Ask the org's memory before you act. Answers from shared facts ([fact #id]), bot
        memory files and your notebook ([memory]) and the markdown vault ([vault]), one line
        per hit, or "nothing found". Cite a fact by its #id."""

        def body(org: Org) -> CallToolResult:
            result = org.recall(question, project=project, limit=limit).result
            return _answer(result.text, recall_data(result))

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
    ) -> CallToolResult:
        """Store one sourced claim in the shared memory, as you. Returns the new fact's id.
        Write checks refuse secrets, vague or unsourced claims, and prompt-like text."""

        def body(conn):
            result = remember(
                conn,
                subject,
                claim,
                source=source,
                project=project,
                kind=kind,
                supersedes=supersedes,
                inferred=inferred,
                via=self.session.org.settings.via,
            )
            return _answer(remembered_line(result), result)

        return await self.session.answer(body)

    async def org_forget(
        self,
        id: Annotated[int, Field(ge=1, le=MAX_ID, description="The #id of the fact to retire.")],
        why: Annotated[str, Field(description="Why it is wrong or no longer true; kept with the fact.")],
    ) -> CallToolResult:
        """Retire a fact (it is never deleted). Its author, their team lead or an owner may."""

        def body(conn):
            forget(conn, id, why)
            return _answer(f"retired {id}", {"id": id, "retired": True, "why": why.strip()})

        return await self.session.answer(body)

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

        def body(conn):
            found = list_facts(
                conn, include_retired=include_retired, subject=subject, project=project, author=author, kind=kind
            )
            return _answer(facts_text(found), {"facts": found})

        return await self.session.answer(body, read=True)

    async def org_search(
        self,
        query: Annotated[str, Field(description="Words or a question to look for in the markdown vault.")],
        mode: Annotated[
            Literal["hybrid", "keyword", "semantic"],
            Field(description="hybrid (default) blends keyword and meaning; keyword for exact names."),
        ] = "hybrid",
        limit: Annotated[int, Field(ge=1, le=100, description="Notes to return.")] = 10,
    ) -> CallToolResult:
        """Search the markdown vault: one hit per note (its best chunk), with its score."""
        from ...vault.search import search

        def body(conn):
            result = search(conn, query, mode=mode, limit=limit, embedder=self.session.org.embedder)
            lines = [note_hit_lines(h) for h in result.hits] or ["no matches"]
            if result.notice:
                lines.insert(0, f"notice: {result.notice}")
            return _answer("\n".join(lines), result)

        return await self.session.answer(body, read=True)

    async def org_sessions_search(
        self,
        query: Annotated[str, Field(description='Keywords, all of which must match; "a phrase", -word and OR work.')],
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

        def body(conn):
            hits = search_messages(conn, query, limit=limit, harness=harness)
            text = "\n".join(message_hit_line(h) for h in hits) or "no matching messages"
            return _answer(text, {"hits": hits})

        return await self.session.answer(body, read=True)

    async def org_notebook(
        self,
        action: Annotated[
            Literal["show", "add", "replace", "remove"],
            Field(description="show the notebook; add an entry; replace or remove the one entry containing old_text."),
        ],
        target: Annotated[
            Literal[NOTEBOOK_STORES],  # type: ignore[valid-type]
            Field(description="memory: your own notes. user: what you know about the person you work with."),
        ] = "memory",
        text: Annotated[str | None, Field(description="The new entry (add, replace).")] = None,
        old_text: Annotated[str | None, Field(description="A unique part of the entry to replace or remove.")] = None,
    ) -> CallToolResult:
        """Your own bounded notebook (memory 2,200 / user 1,375 characters), read only by you.
        A write past the cap is refused with the entries, so you can merge or remove some."""
        needs = {"add": ("text",), "replace": ("old_text", "text"), "remove": ("old_text",), "show": ()}
        given = {"text": text, "old_text": old_text}
        missing = [n for n in needs[action] if not given[n]]
        if missing:
            return _refusal(f"{action} needs {' and '.join(missing)}")

        def body(conn):
            if action == "show":
                found = nb.show(conn, target)
                return _answer(notebook_text(found, nb.SEPARATOR), found)
            if action == "add":
                change = nb.add(conn, target, text or "")
            elif action == "replace":
                change = nb.replace(conn, target, old_text or "", text or "")
            else:
                change = nb.remove(conn, target, old_text or "")
            return _answer(change_line(change), change)

        return await self.session.answer(body)

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
            return _answer(block.text or "(nothing to show)", block)

        return await self.session.ask(body)

    async def _read(self, fn: Callable[[Conn], str], read: bool = False) -> str:
        try:
            return await self.session.run(fn, read=read)
        except OrgError as exc:
            raise ResourceError(str(exc)) from None

    async def context_resource(self) -> str:
        return await self._read(lambda conn: build_context(conn, settings=self.session.org.settings).text, read=True)

    async def notebook_resource(self) -> str:
        return await self._read(lambda conn: notebook_text(nb.show(conn), nb.SEPARATOR))


def build_server(session: Session) -> OrgServer:
    """The server: the tools (Tools' `org_*` methods, in the order they are defined) and
    the two resources."""
    server = OrgServer(session)
    tools = Tools(session)
    for name in vars(Tools):
        if name.startswith("org_"):
            server.add_tool(getattr(tools, name))
    server.resource(
        "cli-org://context",
        name="context",
        description="The session context block (cli-org context): notebook, pins, todos, facts by kind.",
        mime_type="text/plain",
    )(tools.context_resource)
    server.resource(
        "cli-org://notebook",
        name="notebook",
        description="Your notebook, both stores, with how full each is (cli-org notebook show).",
        mime_type="text/plain",
    )(tools.notebook_resource)
    return server


def serve(settings: Settings, agent: str | None) -> None:
    """Open the Org (one connection, and one to the replica with CLI_ORG_READ_URL: calls are
    served one at a time, so a second would idle; the query model), serve over stdio until
    stdin closes, close it."""
    from ...org import Org

    def notify(message: str) -> None:
        print(f"cli-org mcp: {message}", file=sys.stderr)

    with Org.open(settings, agent, face=FACE, embed=True, pool=1, notify=notify) as org:
        build_server(Session(org)).run("stdio")
