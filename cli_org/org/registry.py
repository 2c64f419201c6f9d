"""Every operation the faces offer, registered once: its effect, who may, where it runs, and
under which name each face offers it (a command, an MCP tool, a web route).

Every face reads this table and nothing else to decide those things: the CLI routes a
command's connection by it, the MCP server routes each tool and derives its annotations
(readOnlyHint, destructiveHint, idempotentHint) from it, the web server routes each route
by it, and `setup codex` approves the MCP tools it lists as reads. So the same operation
routes the same way through any face (tests/test_registry.py checks every one).

Routes (docs/design.md, "Where a call runs"):
- REPLICA: a read that may be a moment stale: the read replica of CLI_ORG_READ_URL when
  one is configured, else the primary (a recall's log line still goes to the primary);
- PRIMARY: a write, or a read that acts on what was just written: the primary;
- LONG: long admin work on the primary, with no statement timeout;
- NONE: no connection through the Org (local files, a server's or helper's own life).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class Effect:
    """What an operation does to the store (the MCP hints say the same)."""

    read_only: bool
    destructive: bool = False  # it changes or retires what is there (not only adds)
    idempotent: bool = False  # the same call again changes nothing more

    @property
    def kind(self) -> str:
        return "read" if self.read_only else "destructive" if self.destructive else "write"


# A recall or a context block for a task is logged (recall_events, for `usage`), which is
# bookkeeping, not a change the caller makes: both count as reads.
READ = Effect(read_only=True, idempotent=True)
WRITE = Effect(read_only=False)
DESTRUCTIVE = Effect(read_only=False, destructive=True)
RETIRE = Effect(read_only=False, destructive=True, idempotent=True)  # forgetting twice retires once


class Route(Enum):
    REPLICA = "replica"
    PRIMARY = "primary"
    LONG = "long"
    NONE = "none"


# Who may (enforced by the database's definer functions and row-level security, or by the
# file system for what never reaches the database: docs/security.md).
ANYONE = "whoever runs it (no database rule)"
MEMBER = "any agent"
SELF = "the agent itself (an owner reads anyone's)"
AUTHOR = "the author, their team lead or an owner"
OWNER = "an owner"
ADMIN = "the database admin (the login role, no --as)"
DECIDER = "the agent whose session it was, its team lead or an owner"
REVIEWER = "an owner or a team lead"


@dataclass(frozen=True)
class Operation:
    name: str
    effect: Effect
    rights: str
    route: Route
    cli: tuple[str, ...] = ()  # command paths, as typed after `cli-org`
    mcp: tuple[str, ...] = ()  # tool names
    web: tuple[str, ...] = ()  # "METHOD /path" as the router declares it


def _op(
    name: str,
    effect: Effect,
    rights: str,
    route: Route,
    *,
    cli: tuple[str, ...] = (),
    mcp: tuple[str, ...] = (),
    web: tuple[str, ...] = (),
) -> Operation:
    return Operation(name, effect, rights, route, cli, mcp, web)


R, P, L, N = Route.REPLICA, Route.PRIMARY, Route.LONG, Route.NONE

OPERATIONS: tuple[Operation, ...] = (
    # recall first: the tools are listed (and approved) in this order
    _op(
        "recall",
        READ,
        MEMBER,
        R,
        cli=("recall",),
        mcp=("org_recall",),
        web=("GET /recall", "POST /recall", "POST /api/recall"),
    ),
    # facts
    _op("facts.remember", WRITE, MEMBER, P, cli=("remember",), mcp=("org_remember",)),
    _op(
        "facts.forget",
        RETIRE,
        AUTHOR,
        P,
        cli=("forget",),
        mcp=("org_forget",),
        web=("POST /facts/{fact_id}/forget", "POST /api/facts/{fact_id}/forget"),
    ),
    _op(
        "facts.restore",
        DESTRUCTIVE,
        AUTHOR,
        P,
        cli=("restore",),
        mcp=("org_restore",),
        web=("POST /facts/{fact_id}/restore", "POST /api/facts/{fact_id}/restore"),
    ),
    _op("facts.list", READ, MEMBER, R, cli=("facts",), mcp=("org_facts",), web=("GET /facts", "GET /api/facts")),
    _op("facts.show", READ, MEMBER, R, cli=("facts show",), web=("GET /facts/{fact_id}", "GET /api/facts/{fact_id}")),
    _op("facts.summary", READ, MEMBER, R, cli=("facts summary",), web=("GET /api/facts/summary",)),
    _op("facts.embed", WRITE, MEMBER, L, cli=("facts embed",)),
    _op("facts.erase", DESTRUCTIVE, OWNER, P, cli=("facts erase",)),
    _op("facts.tidy.propose", READ, MEMBER, R, cli=("tidy",), web=("GET /facts/tidy", "GET /api/facts/tidy")),
    _op("facts.tidy", DESTRUCTIVE, AUTHOR, P, cli=("tidy",), web=("POST /facts/tidy", "POST /api/facts/tidy")),
    # the review list (issue 36): what waits for a person; its refresh writes the stored items
    _op("review", READ, MEMBER, R, cli=("review",), web=("GET /facts/review", "GET /api/facts/review")),
    _op("review.refresh", WRITE, REVIEWER, L, cli=("review",)),
    # typed links between facts (issue 36): linking again returns the live link, so a link is
    # idempotent; an unlink removes what is there (a second one is refused: already removed)
    _op("links.link", Effect(read_only=False, idempotent=True), MEMBER, P, cli=("link",), mcp=("org_link",)),
    _op("links.unlink", DESTRUCTIVE, AUTHOR, P, cli=("unlink",), mcp=("org_unlink",)),
    # pins and todos
    _op(
        "pins.pin",
        WRITE,
        AUTHOR,
        P,
        cli=("pin",),
        mcp=("org_pin",),
        web=("POST /facts/{fact_id}/pin", "POST /api/facts/{fact_id}/pin"),
    ),
    _op(
        "pins.unpin",
        DESTRUCTIVE,
        AUTHOR,
        P,
        cli=("unpin",),
        mcp=("org_unpin",),
        web=("POST /facts/{fact_id}/unpin", "POST /api/facts/{fact_id}/unpin"),
    ),
    _op(
        "pins.list",
        READ,
        MEMBER,
        R,
        cli=("pins",),
        mcp=("org_pins",),
        web=("GET /pins", "GET /api/pins", "GET /api/pins/past"),
    ),
    _op("todos.add", WRITE, MEMBER, P, cli=("todo add",), mcp=("org_todo_add",)),
    _op("todos.done", DESTRUCTIVE, AUTHOR, P, cli=("todo done",), mcp=("org_todo_done",)),
    _op("todos.list", READ, MEMBER, R, cli=("todo list",), mcp=("org_todos",), web=("GET /todos", "GET /api/todos")),
    _op("hook", WRITE, MEMBER, P, cli=("hook",)),
    _op("vault.search", READ, MEMBER, R, cli=("search",), mcp=("org_search",), web=("GET /search", "GET /api/search")),
    _op(
        "vault.notes",
        READ,
        MEMBER,
        R,
        web=("GET /vault", "GET /vault/{name:path}", "GET /api/vault", "GET /api/vault/{name:path}"),
    ),
    _op("vault.scan", WRITE, ADMIN, L, cli=("vault scan",)),
    _op("vault.embed", WRITE, ADMIN, L, cli=("vault embed",)),
    # the activity feed, agents, projects, the write checks
    _op("activity", READ, MEMBER, R, cli=("activity",), web=("GET /activity", "GET /api/activity")),
    _op("agents.add", WRITE, ADMIN, P, cli=("agents add",)),
    _op("agents.list", READ, MEMBER, R, cli=("agents list",), web=("GET /agents", "GET /api/agents")),
    _op("agents.show", READ, MEMBER, R, web=("GET /agents/{name}", "GET /api/agents/{name}")),
    _op("projects.list", READ, MEMBER, P, cli=("projects",)),
    _op("projects.restrict", DESTRUCTIVE, OWNER, P, cli=("projects restrict",)),
    _op("checks.allow", WRITE, OWNER, P, cli=("checks allow",)),
    _op("checks.approvals", READ, MEMBER, P, cli=("checks approvals",)),
    # the archive of sessions, and usage
    _op(
        "sessions.search",
        READ,
        MEMBER,
        R,
        cli=("sessions search",),
        mcp=("org_sessions_search",),
        web=("GET /api/sessions/search",),
    ),
    # notebooks
    # The notebook stays on the primary, reads included: an agent sees the entry it just wrote.
    _op(
        "notebook.show",
        READ,
        SELF,
        P,
        cli=("notebook show",),
        mcp=("org_notebook",),
        web=("GET /agents/{name}/notebook", "GET /api/agents/{name}/notebook"),
    ),
    # Its writes are one tool apart from the read: a harness that asks before a write never
    # blocks a read (issue 37). A patch replaces a span inside one entry; replace, the entry.
    _op("notebook.add", WRITE, SELF, P, cli=("notebook add",), mcp=("org_notebook_edit",)),
    _op("notebook.replace", DESTRUCTIVE, SELF, P, cli=("notebook replace",), mcp=("org_notebook_edit",)),
    _op("notebook.patch", DESTRUCTIVE, SELF, P, cli=("notebook patch",), mcp=("org_notebook_edit",)),
    _op("notebook.remove", DESTRUCTIVE, SELF, P, cli=("notebook remove",), mcp=("org_notebook_edit",)),
    _op("notebook.history", READ, SELF, P, cli=("notebook history",)),
    _op("notebook.import", WRITE, SELF, P, cli=("notebook import",)),
    # recall, context, search: what a session asks
    _op("recall.past", READ, MEMBER, R, web=("GET /recall/{event_id}", "GET /api/recall/{event_id}")),
    # A context block that records what it delivered to a session is a write: the Org sends it
    # to the primary (Org.context); one for the asking is a read.
    _op("context", READ, MEMBER, R, cli=("context",), mcp=("org_context",)),
    # proposals from the archive (issue 35)
    _op(
        "proposals.list",
        READ,
        DECIDER,
        P,
        cli=("proposals",),
        mcp=("org_proposals",),
        web=("GET /proposals", "GET /api/proposals"),
    ),
    _op(
        "proposals.accept",
        WRITE,
        DECIDER,
        P,
        cli=("proposals accept",),
        mcp=("org_proposal_accept",),
        web=("POST /proposals/{proposal_id}/accept", "POST /api/proposals/{proposal_id}/accept"),
    ),
    # A rejected proposal never comes back (issue 35): it retires what is there, so it is
    # destructive, and a harness asks the person before it (setup's UNASKED_TOOLS).
    _op(
        "proposals.reject",
        DESTRUCTIVE,
        DECIDER,
        P,
        cli=("proposals reject",),
        mcp=("org_proposal_reject",),
        web=("POST /proposals/{proposal_id}/reject", "POST /api/proposals/{proposal_id}/reject"),
    ),
    _op("sessions.list", READ, MEMBER, R, web=("GET /sessions", "GET /api/sessions")),
    _op(
        "sessions.show",
        READ,
        MEMBER,
        R,
        cli=("sessions show",),
        web=("GET /sessions/{session_id}", "GET /api/sessions/{session_id}"),
    ),
    _op("usage", READ, MEMBER, R, cli=("usage",), web=("GET /usage", "GET /api/usage")),
    _op("archive.import", WRITE, ADMIN, L, cli=("archive import",)),
    _op("archive.propose", WRITE, ADMIN, L, cli=("archive propose",)),
    _op("archive.judge", WRITE, ADMIN, L, cli=("archive judge",)),
    _op("archive.memory", WRITE, ADMIN, L, cli=("archive memory",)),
    _op("archive.history", READ, ADMIN, P, cli=("archive history",)),
    _op("archive.erase", DESTRUCTIVE, OWNER, P, cli=("archive erase",)),
    # evaluation
    _op("eval.golden", WRITE, MEMBER, P, cli=("eval golden",)),
    _op("eval.noise", WRITE, MEMBER, P, cli=("eval noise",)),
    _op("eval.hook", WRITE, MEMBER, P, cli=("eval hook",)),
    _op(
        "eval.compare",
        READ,
        MEMBER,
        R,
        cli=("eval compare",),
        web=("GET /evaluation/compare", "GET /api/eval/compare"),
    ),
    _op(
        "eval.history",
        READ,
        MEMBER,
        R,
        cli=("eval history",),
        web=("GET /evaluation", "GET /api/eval/runs", "GET /api/eval/previous"),
    ),
    _op(
        "eval.run",
        READ,
        MEMBER,
        R,
        web=(
            "GET /evaluation/runs/{name}",
            "GET /evaluation/runs/{author}/{name}",
            "GET /api/eval/runs/{name}",
            "GET /api/eval/runs/{author}/{name}",
        ),
    ),
    _op("eval.cost", READ, ADMIN, P, cli=("eval cost",)),
    _op("eval.stale", READ, ADMIN, P, cli=("eval stale",)),
    # the whole store
    _op("transfer.export", READ, ADMIN, P, cli=("export",)),
    _op("transfer.import", WRITE, ADMIN, P, cli=("import",)),
    _op("db.init", WRITE, ADMIN, N, cli=("init",)),
    _op("db.status", READ, ANYONE, N, cli=("db status",)),
    _op("db.access", READ, ADMIN, P, cli=("db url", "db psql")),
    _op("db.start", WRITE, ANYONE, N, cli=("db start",)),
    _op("db.stop", WRITE, ANYONE, N, cli=("db stop",)),
    _op("db.backup", READ, ADMIN, N, cli=("db backup",)),
    _op("db.restore", DESTRUCTIVE, ADMIN, N, cli=("db restore",)),
    # wiring and the long-lived faces (each serves the operations above)
    _op("setup", WRITE, ADMIN, P, cli=("setup",)),
    _op("serve.mcp", READ, ANYONE, N, cli=("mcp",)),
    _op("serve.web", READ, ANYONE, N, cli=("serve",)),
    _op("warm.status", READ, ANYONE, N, cli=("warm status",)),
    _op("warm.stop", WRITE, ANYONE, N, cli=("warm stop",)),
    _op("warm.serve", READ, ANYONE, N, cli=("warm serve",)),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}


def operation(name: str) -> Operation:
    """The registered operation `name` (a KeyError for one never registered: a face bug)."""
    return BY_NAME[name]


def _index(face: str) -> dict[str, tuple[Operation, ...]]:
    found: dict[str, list[Operation]] = {}
    for op in OPERATIONS:
        for entry in getattr(op, face):
            found.setdefault(entry, []).append(op)
    return {entry: tuple(ops) for entry, ops in found.items()}


CLI: dict[str, tuple[Operation, ...]] = _index("cli")
MCP: dict[str, tuple[Operation, ...]] = _index("mcp")
WEB: dict[str, tuple[Operation, ...]] = _index("web")


def only(index: dict[str, tuple[Operation, ...]], entry: str) -> Operation:
    """The one operation a face's entry offers (a command, tool or route that offers more,
    `tidy` or `org_notebook_edit`, names which one it is doing)."""
    ops = index.get(entry, ())
    if len(ops) != 1:
        raise KeyError(f"{entry!r} offers {len(ops)} registered operations; name one")
    return ops[0]


def tool_effect(tool: str) -> Effect:
    """An MCP tool's declared effect: the strongest of the operations it offers (one that adds
    and replaces is destructive). No tool offers a read beside a write (tests/test_registry.py):
    a harness that asks before every write would block the read too."""
    ops = MCP[tool]
    if len(ops) == 1:
        return ops[0].effect
    read_only = all(op.effect.read_only for op in ops)
    return Effect(
        read_only=read_only,
        destructive=any(op.effect.destructive for op in ops),
        idempotent=all(op.effect.idempotent for op in ops),
    )


# The MCP tools a harness may approve without asking (`setup codex`): those that only read.
READ_TOOLS: tuple[str, ...] = tuple(tool for tool in MCP if tool_effect(tool).read_only)
# The MCP tools setup lets an agent run without asking its person (issue 37; docs/agents.md,
# "Approvals"): every tool that changes or retires nothing already there. That is the reads
# and the writes that only add, each scanned by the write checks and signed by the agent (a
# wrong fact from `org_remember` is retired again with `org_forget`). A destructive tool
# (`org_forget`, `org_unlink`, a notebook call that may replace) stays the person's to approve.
UNASKED_TOOLS: tuple[str, ...] = tuple(tool for tool in MCP if not tool_effect(tool).destructive)
