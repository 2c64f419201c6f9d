"""The registry of operations (cli_org/org/registry.py) is what every face routes by.

Statically: every CLI command, every MCP tool and every web route maps to a registered
operation and every registered name exists in its face (nothing unregistered, nothing
stale); the MCP annotations and the Codex approval list are the registry's effects.

Through the faces, on a real database: the same operation, asked through each face that
offers it (a command, a tool, a route), runs on the connection its registered route names
(the replica's for a read that may be stale, the primary's for a write, unbounded for long
admin work), and on no other but the call log's line on the primary."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

import anyio
import click
import pytest

from cli_org.org.registry import CLI, MCP, OPERATIONS, READ_TOOLS, UNASKED_TOOLS, WEB, Route, operation, tool_effect


def _cli_paths() -> set[str]:
    from cli_org.faces.cli.app import group

    found: set[str] = set()

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            if command.invoke_without_command and path:
                found.add(" ".join(path))
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
        else:
            found.add(" ".join(path))

    walk(group(), [])
    return found


def _web_routes() -> set[str]:
    from cli_org.faces.web.pages import ROUTERS

    return {f"{method} {route.path}" for router in ROUTERS for route in router.routes for method in route.methods}


def _mcp_tools() -> list[str]:
    from cli_org.faces.mcp.server import Session, build_server

    server = build_server(Session(None))  # type: ignore[arg-type]  # listing needs no Org
    return [tool.name for tool in server._tool_manager.list_tools()]


def test_every_command_tool_and_route_is_registered_and_nothing_registered_is_missing():
    assert _cli_paths() == set(CLI), _cli_paths() ^ set(CLI)
    assert _web_routes() == set(WEB), _web_routes() ^ set(WEB)
    assert _mcp_tools() == list(MCP)
    assert len({op.name for op in OPERATIONS}) == len(OPERATIONS)
    for op in OPERATIONS:
        assert op.cli or op.mcp or op.web, f"{op.name} is offered by no face"
        assert op.route is not Route.NONE or not (op.mcp or op.web), f"{op.name}: a server face needs a connection"
        assert op.effect.read_only or op.route is not Route.REPLICA, f"{op.name}: a write routed to the replica"


def test_the_mcp_annotations_and_the_codex_approvals_are_the_registrys():
    from cli_org.faces.mcp.server import Session, build_server

    server = build_server(Session(None))  # type: ignore[arg-type]
    for tool in server._tool_manager.list_tools():
        effect = tool_effect(tool.name)
        hints = tool.annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            effect.read_only,
            effect.destructive,
            effect.idempotent,
        ), tool.name
    # Approved without asking: exactly the tools all of whose operations only read.
    assert set(READ_TOOLS) == {t for t, ops in MCP.items() if all(op.effect.read_only for op in ops)}
    assert "org_remember" not in READ_TOOLS and "org_notebook_edit" not in READ_TOOLS
    assert {"org_notebook", "org_pins", "org_todos", "org_proposals"} <= set(READ_TOOLS)
    # What setup lets a harness run unasked: the reads and the writes that only add (issue 37).
    assert set(UNASKED_TOOLS) == {t for t in MCP if not tool_effect(t).destructive} >= set(READ_TOOLS)
    assert "org_remember" in UNASKED_TOOLS and "org_forget" not in UNASKED_TOOLS
    # a rejected proposal never comes back: that decision stays the person's
    assert "org_proposal_reject" not in UNASKED_TOOLS and "org_notebook_edit" not in UNASKED_TOOLS


def test_no_tool_offers_a_read_beside_a_write():
    """One tool per effect (issue 37): a harness that asks before every write would block a
    read offered by the same tool (org_notebook once showed and changed the notebook)."""
    for tool, ops in MCP.items():
        assert len({op.effect.read_only for op in ops}) == 1, tool


def test_a_face_entry_that_offers_two_operations_is_one_that_names_which():
    """`tidy` proposes or applies, `org_notebook_edit` adds, replaces, patches or removes,
    `review` lists or refreshes: the only entries that offer more than one operation, and
    each names the one it does (tidy_cmd, the tool, review_cmd)."""
    shared = {entry for index in (CLI, MCP, WEB) for entry, ops in index.items() if len(ops) > 1}
    assert shared == {"tidy", "org_notebook_edit", "review"}


# --- through the faces ---------------------------------------------------------------------


@pytest.fixture
def seen(monkeypatch):
    """Every connection an Org hands out while the test runs: (the operation it serves, or
    None outside one, read, bounded)."""
    from cli_org.org import Org

    log: list[tuple[str | None, bool, bool]] = []
    serving_now: list[str] = []
    real_serving, real_connection = Org.serving, Org.connection

    @contextmanager
    def serving(self, operation):
        serving_now.append(operation)
        try:
            with real_serving(self, operation) as conn:
                yield conn
        finally:
            serving_now.pop()

    @contextmanager
    def connection(self, *, read=False, bounded=True):
        log.append((serving_now[-1] if serving_now else None, read, bounded))
        with real_connection(self, read=read, bounded=bounded) as conn:
            yield conn

    monkeypatch.setattr(Org, "serving", serving)
    monkeypatch.setattr(Org, "connection", connection)
    return log


def _routed_as(log: list[tuple[str | None, bool, bool]], name: str, where: str) -> None:
    """The connections of one call through a face: those it served ran as `name`, where
    the registry says; any other is a call-log line, on the primary."""
    route = operation(name).route
    expected = (name, route is Route.REPLICA, route is not Route.LONG)
    inside = [entry for entry in log if entry[0] is not None]
    assert inside, f"{where}: no connection served {name}"
    assert all(entry == expected for entry in inside), (where, inside, expected)
    assert all(not read for op, read, _ in log if op is None), (where, log)
    log.clear()


# Each operation offered by more than one face, as each face asks it (FACT: a fact's id).
CLI_CALLS: dict[str, list[str]] = {
    "facts.remember": ["remember", "build cache", "The build cache lives on the runner disk", "--source", "b.md"],
    "facts.forget": ["forget", "FACT", "wrong"],
    "facts.restore": ["restore", "FACT", "right after all"],
    "facts.list": ["facts"],
    "facts.show": ["facts", "show", "FACT"],
    "facts.summary": ["facts", "summary", "--no-stale"],
    "facts.tidy.propose": ["tidy"],
    "facts.tidy": ["tidy", "--apply"],
    "review": ["review"],
    "pins.pin": ["pin", "FACT"],
    "pins.unpin": ["unpin", "FACT"],
    "links.link": ["link", "FACT", "explains", "999"],  # no fact 999: refused where it runs
    "links.unlink": ["unlink", "999", "no link there"],
    "pins.list": ["pins"],
    "todos.add": ["todo", "add", "Renew the certificate"],
    "todos.done": ["todo", "done", "999"],  # no todo 999: refused where it runs
    "todos.list": ["todo", "list"],
    "notebook.show": ["notebook", "show"],
    "notebook.add": ["notebook", "add", "--target", "memory", "the first note"],
    "notebook.replace": ["notebook", "replace", "--target", "memory", "first note", "the second note"],
    "notebook.patch": ["notebook", "patch", "--target", "memory", "second", "third"],
    "notebook.remove": ["notebook", "remove", "--target", "memory", "third note"],
    "recall": ["recall", "where does the build cache live"],
    "context": ["context"],
    "vault.search": ["search", "cache", "--mode", "keyword"],
    "activity": ["activity"],
    "agents.list": ["agents", "list"],
    "sessions.search": ["sessions", "search", "cache"],
    "sessions.show": ["sessions", "show", "nosuch"],
    "usage": ["usage"],
    "eval.compare": ["eval", "compare", "one", "two"],
    "eval.history": ["eval", "history"],
    "proposals.list": ["proposals"],
    "proposals.accept": ["proposals", "accept", "999"],  # none there: refused where it runs
    "proposals.reject": ["proposals", "reject", "999"],
}
MCP_CALLS: dict[str, tuple[str, dict]] = {
    "facts.remember": (
        "org_remember",
        {"subject": "ci disk", "claim": "CI runners have 80 GB disks", "source": "c.md"},
    ),
    "facts.forget": ("org_forget", {"id": "FACT", "why": "wrong"}),
    "facts.restore": ("org_restore", {"id": "FACT", "why": "right after all"}),
    "facts.list": ("org_facts", {}),
    "links.link": ("org_link", {"from_id": "FACT", "kind": "explains", "to_id": 999}),
    "links.unlink": ("org_unlink", {"id": 999, "why": "no link there"}),
    "pins.pin": ("org_pin", {"id": "FACT"}),
    "pins.unpin": ("org_unpin", {"id": "FACT"}),
    "pins.list": ("org_pins", {}),
    "todos.add": ("org_todo_add", {"text": "Renew the signing key"}),
    "todos.done": ("org_todo_done", {"id": 999}),
    "todos.list": ("org_todos", {}),
    "notebook.show": ("org_notebook", {}),
    "notebook.add": ("org_notebook_edit", {"action": "add", "text": "a tool note"}),
    "notebook.replace": ("org_notebook_edit", {"action": "replace", "old_text": "tool note", "text": "a tool memo"}),
    "notebook.patch": ("org_notebook_edit", {"action": "patch", "old_text": "memo", "text": "jotting"}),
    "notebook.remove": ("org_notebook_edit", {"action": "remove", "old_text": "tool jotting"}),
    "recall": ("org_recall", {"question": "where does the build cache live"}),
    "context": ("org_context", {}),
    "vault.search": ("org_search", {"query": "cache", "mode": "keyword"}),
    "sessions.search": ("org_sessions_search", {"query": "cache"}),
    "proposals.list": ("org_proposals", {}),
    "proposals.accept": ("org_proposal_accept", {"id": 999}),
    "proposals.reject": ("org_proposal_reject", {"id": 999}),
}
# A route's path parameters, query and body (JSON for /api, a form with its CSRF token else).
PATH_VALUES = {
    "fact_id": "FACT",
    "name": "bot",
    "name:path": "notes/a.md",
    "event_id": "1",
    "session_id": "nosuch",
    "author": "boss",
    "proposal_id": "1",  # none there: refused after it is routed
}
QUERIES = {
    "/search": {"q": "cache"},
    "/api/search": {"q": "cache"},
    "/api/sessions/search": {"q": "cache"},
    "/evaluation/compare": {"a": "one", "b": "two"},
    "/api/eval/compare": {"a": "one", "b": "two"},
    "/api/eval/previous": {"run": "one"},
}
BODIES = {
    "/api/facts/{fact_id}/forget": {"why": "wrong"},
    "/api/facts/{fact_id}/restore": {"why": "right after all"},
    "/api/facts/{fact_id}/pin": {},
    "/api/facts/{fact_id}/unpin": {},
    "/api/facts/tidy": {"facts": ["FACT"]},
    "/api/recall": {"q": "where does the build cache live"},
    "/facts/{fact_id}/forget": {"why": "wrong"},
    "/facts/{fact_id}/restore": {"why": "right after all"},
    "/facts/{fact_id}/pin": {},
    "/facts/{fact_id}/unpin": {},
    "/facts/tidy": {"fact": "FACT"},
    "/recall": {"q": "where does the build cache live"},
    "/api/proposals/{proposal_id}/accept": {},
    "/api/proposals/{proposal_id}/reject": {"reason": "said once"},
    "/proposals/{proposal_id}/accept": {},
    "/proposals/{proposal_id}/reject": {"reason": "said once"},
}
ASKS_NOTHING = {"GET /recall"}  # the empty question box: nothing is asked of the Org


def _filled(path: str, fact: int) -> str:
    def value(match: re.Match[str]) -> str:
        found = PATH_VALUES[match[1]]
        return str(fact) if found == "FACT" else found

    return re.sub(r"\{([^}]+)\}", value, path)


def test_the_same_operation_routes_the_same_way_through_every_face(org, cli, web, seen):
    from cli_org.faces.mcp.server import Session, build_server
    from cli_org.org import Org

    code, out, err = cli(
        "remember", "deploy cache", "Deploys keep their cache for a week", "--source", "d.md", "--json", agent="boss"
    )
    assert code == 0, err
    fact = json.loads(out)["id"]
    seen.clear()
    checked: dict[str, set[str]] = {}

    # The command line.
    for name, args in CLI_CALLS.items():
        assert " ".join(a for a in args if not a.startswith("-"))  # a command line
        argv = [str(fact) if a == "FACT" else a for a in args]
        cli(*argv, agent=None if name == "agents.list" else "boss")
        _routed_as(seen, name, f"cli-org {' '.join(argv)}")
        checked.setdefault(name, set()).add("cli")

    # The MCP tools, in-process on the server's own Org (one connection, as `cli-org mcp`).
    with Org.open(org.settings, "boss", face="mcp", pool=1) as opened:
        server = build_server(Session(opened))
        for name, (tool, arguments) in MCP_CALLS.items():
            filled = {k: fact if v == "FACT" else v for k, v in arguments.items()}
            anyio.run(server.call_tool, tool, filled)
            _routed_as(seen, name, f"{tool} {filled}")
            checked.setdefault(name, set()).add("mcp")

    # Every web route.
    client = web("boss")
    csrf = client.app.state.web.csrf()
    seen.clear()
    for entry, ops in WEB.items():
        method, path = entry.split(" ", 1)
        url = _filled(path, fact)
        if method == "GET":
            response = client.get(url, params=QUERIES.get(path, {}))
        else:
            body = {k: ([fact] if v == ["FACT"] else fact if v == "FACT" else v) for k, v in BODIES[path].items()}
            if path.startswith("/api/"):
                response = client.post(url, json=body)
            else:
                response = client.post(url, data={**body, "csrf": csrf})
        if entry in ASKS_NOTHING:
            assert not seen, entry
            continue
        assert response.status_code != 422, (entry, response.text)
        (op,) = ops
        _routed_as(seen, op.name, entry)
        checked.setdefault(op.name, set()).add("web")

    # Every operation offered by more than one face was asked through each of them.
    for op in OPERATIONS:
        faces = {face for face in ("cli", "mcp", "web") if getattr(op, face)}
        if len(faces) > 1:
            assert checked.get(op.name) == faces, (op.name, checked.get(op.name), faces)


def test_facts_and_sessions_search_read_where_mcp_reads():
    """The disagreement issue 34 names: CLI `facts` and `sessions search` read the primary
    while MCP read the replica. One registered route each now."""
    for name in ("facts.list", "sessions.search", "vault.search", "recall", "context"):
        assert operation(name).route is Route.REPLICA, name
    assert CLI["facts"] == MCP["org_facts"] and CLI["sessions search"] == MCP["org_sessions_search"]


# --- what a face hands the Org, and nothing around it -----------------------------------------


def test_the_hook_bounds_its_connection_through_the_org_not_the_environment(org, cli, monkeypatch, tmp_path):
    """The hook's connect timeout goes on its connection (Settings.connect_timeout); the
    process's environment is not changed for it (PGCONNECT_TIMEOUT once was)."""
    import os

    from cli_org.db import connect as connect_module
    from cli_org.session.hooks import CONNECT_SECONDS

    code, _, err = cli("remember", "deploys", "Deploys go out on Tuesdays", "--source", "d.md", agent="bot")
    assert code == 0, err
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    opened: list[tuple[str, str | None]] = []
    real = connect_module.open_conn

    def spy(where, options, **kwargs):
        opened.append((where, os.environ.get("PGCONNECT_TIMEOUT")))
        return real(where, options, **kwargs)

    monkeypatch.setattr(connect_module, "open_conn", spy)
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s-1", "cwd": str(tmp_path)})
    code, out, err = cli("hook", "claude-code", "session-start", "--as", "bot", input=payload)
    assert code == 0 and "Org context for bot" in out, err
    assert opened, "the hook opened no connection"
    for where, environment in opened:
        assert f"connect_timeout={CONNECT_SECONDS}" in where, where
        assert environment is None  # nothing set in the environment while it connects


def test_the_warm_helper_hands_a_command_its_request_not_its_own_environment(org, tmp_path, monkeypatch):
    """The helper runs `recall` for a request with another agent, another folder and another
    ORG_ROOT: the command reads them from click's context object, while the helper's own
    environment and working folder stay as they were."""
    import os

    from cli_org.db.connect import connect
    from cli_org.faces.cli.warm_cmd import _run_command
    from cli_org.faces.warm.resident import Resident
    from cli_org.store import facts

    with connect(org.settings, "bot") as conn:
        facts.remember(conn, "night job", "The staging database restarts every night", source="n.md")
    memory = tmp_path / "proj" / ".agents" / "org" / "memory"
    memory.mkdir(parents=True)
    (memory / "ops.md").write_text("- the staging cache is emptied every Friday\n")
    monkeypatch.setenv("ORG_AGENT", "other")  # the helper's own: never the request's identity
    before = (dict(os.environ), os.getcwd())
    request = {**org.env, "ORG_AGENT": "bot", "CLI_ORG_WARM": "0"}
    with Resident() as held:
        answer = _run_command(held, "recall", ["when does staging restart"], request, str(tmp_path / "proj"))
    assert (dict(os.environ), os.getcwd()) == before
    assert answer["exit_code"] == 0, answer
    assert "staging database restarts" in answer["stdout"]  # as bot
    assert "staging cache is emptied" in answer["stdout"]  # the request's folder's memory files


def test_the_approvals_page_names_the_writes_that_run_unasked_and_those_that_ask():
    """docs/agents.md's Approvals names each write setup lets through and each tool it leaves
    to the person, as the registry derives them (a new tool, or an effect changed, shows here)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "agents.md").read_text()
    section = page[page.index("### Approvals") :]
    unasked, _, asked = section[: section.index("stay the person's")].partition("The tools that")
    named = set(re.findall(r"`(org_\w+)`", unasked)), set(re.findall(r"`(org_\w+)`", asked))
    writes = {t for t in UNASKED_TOOLS if not tool_effect(t).read_only}
    assert named == (writes, {t for t in MCP if t not in UNASKED_TOOLS})
