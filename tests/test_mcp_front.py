"""`cli-org mcp`'s front (cli_org/faces/mcp/front.py): it answers initialize and the lists
from the SDK server's own replies before the SDK is loaded, hands everything else to the SDK
server in order, and the process ends cleanly on SIGINT and SIGTERM."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_org.faces.mcp import front
from cli_org.faces.mcp.calls import RECALL_ARGUMENTS, REMEMBER_ARGUMENTS, recall_text
from cli_org.faces.mcp.manifest import MANIFEST
from cli_org.limits import RECALL_HITS
from tests.helpers import ROOT

HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}


def _script():
    spec = importlib.util.spec_from_file_location("mcp_manifest", ROOT / "scripts" / "mcp_manifest.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_manifest_is_what_the_live_sdk_server_says():
    # The front answers from this file; a tool, a description or an SDK changed without
    # running the script fails here.
    script = _script()
    assert script.PATH.read_text(encoding="utf-8") == script.render(), "run: python scripts/generate.py"


def request(id, method, params=None) -> str:
    message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message) + "\n"


def _front(lines: list[str]) -> tuple[front.Front, list[dict]]:
    """A front that has read `lines` from a pipe to its end; what it wrote."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, "".join(lines).encode())
    os.close(write_fd)
    sent: list[bytes] = []
    f = front.Front(read_fd, sent.append)
    f.read()
    os.close(read_fd)
    return f, [json.loads(b) for b in sent]


def test_the_front_answers_the_handshake_and_the_lists_and_queues_the_rest_in_order():
    call = request(4, "tools/call", {"name": "org_facts", "arguments": {}})
    f, sent = _front(
        [
            request(0, "tools/list"),  # before initialize: the SDK server's to refuse
            request(1, "initialize", {**HELLO, "protocolVersion": "1970-01-01"}),
            '{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
            request(2, "tools/list"),
            request(3, "resources/list"),
            call,
            request(5, "ping"),
        ]
    )
    versions = MANIFEST["versions"]
    assert [m["id"] for m in sent] == [1, 2, 3, 5]
    assert sent[0]["result"] == versions[MANIFEST["latest"]]["initialize"]  # an unknown version: the newest
    assert sent[1]["result"] == versions[MANIFEST["latest"]]["tools/list"]
    assert [t["name"] for t in sent[1]["result"]["tools"]][0] == "org_recall"
    queued = []
    while (line := f.lines.get_nowait()) is not None:
        queued.append(json.loads(line))
    assert [m.get("id") for m in queued] == [0, None, 4]
    # The SDK server reads the answered initialize first, under the front's id; its reply
    # to that is dropped, every other reply goes out.
    replay = [json.loads(line) for line in f.hand_off()]
    assert replay == [
        {**json.loads(request(1, "initialize", {**HELLO, "protocolVersion": "1970-01-01"})), "id": front.REPLAYED}
    ]
    out: list[bytes] = []
    f.write = out.append
    f.deliver(json.dumps({"jsonrpc": "2.0", "id": front.REPLAYED, "result": {}}))
    f.deliver(json.dumps({"jsonrpc": "2.0", "id": 4, "result": {"content": []}}))
    assert [json.loads(b)["id"] for b in out] == [4]


def modern(version: str) -> dict:
    """The `_meta` a client of a protocol version without a handshake sends with each request."""
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    }


def test_a_client_without_a_handshake_is_answered_from_the_manifest_too():
    """Claude Code 2.1.332 starts with `server/discover` and the lists, each naming its
    protocol version; a version the manifest does not hold, a page of a list, or a call
    goes to the SDK server."""
    call = request(5, "tools/call", {"name": "org_facts", "arguments": {}, **modern("2026-07-28")})
    f, sent = _front(
        [
            request(1, "server/discover", modern("2026-07-28")),
            request(2, "tools/list", modern("2026-07-28")),
            request(3, "prompts/list", modern("2026-07-28")),
            request(4, "tools/list", modern("2099-01-01")),
            request(6, "tools/list", {**modern("2026-07-28"), "cursor": "x"}),
            call,
        ]
    )
    versions = MANIFEST["modern"]["2026-07-28"]
    assert [(m["id"], m["result"]) for m in sent] == [
        (1, versions["server/discover"]),
        (2, versions["tools/list"]),
    ]
    assert [t["name"] for t in versions["tools/list"]["tools"]][0] == "org_recall"
    queued = []
    while (line := f.lines.get_nowait()) is not None:
        queued.append(json.loads(line)["id"])
    # prompts/list too: the server has no prompts, so the SDK says the method is not found
    assert queued == [3, 4, 6, 5] and f.hand_off() == []  # nothing to replay without a handshake


@pytest.mark.slow
def test_the_front_answers_before_the_database_and_the_sdk(tmp_path):
    """With no database to reach, `initialize` and `tools/list` are answered all the same
    (from the manifest), then the server stops with one line, exit 1."""
    requests = tmp_path / "in.jsonl"
    requests.write_text(
        request(1, "initialize", HELLO)
        + '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        + request(2, "tools/list")
    )
    env = {**os.environ, "CLI_ORG_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "PYTHONPATH": str(ROOT)}
    with open(requests) as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "cli_org", "mcp"], stdin=stdin, capture_output=True, text=True, env=env, timeout=120
        )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[1]["result"] == MANIFEST["versions"]["2025-06-18"]["tools/list"]
    assert done.returncode == 1 and done.stderr.startswith("cli-org: ") and done.stderr.count("\n") == 1


def _spawn(org, app: str, site: Path | None = None) -> subprocess.Popen:
    """`cli-org mcp --as bot`; with `site`, a sitecustomize there registers an atexit hook
    that writes `site/teardown`: it is written only if the interpreter's teardown runs."""
    path = str(ROOT)
    if site is not None:
        (site / "sitecustomize.py").write_text(
            f"import atexit\natexit.register(lambda: open({str(site / 'teardown')!r}, 'w').close())\n"
        )
        path = f"{site}{os.pathsep}{ROOT}"
    env = {**os.environ, **org.env, "HF_HUB_OFFLINE": "1", "PGAPPNAME": app, "PYTHONPATH": path}
    env.pop("ORG_AGENT", None)
    return subprocess.Popen(
        [sys.executable, "-m", "cli_org", "mcp", "--as", "bot"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )


def _exchange(org, payload: str, replies: int) -> dict[int, dict]:
    """Send `payload` (requests, each a line) to a new `cli-org mcp`, read `replies` answers
    by id, then close its input: it must exit 0."""
    proc = _spawn(org, "cli-org-mcp-first")
    try:
        proc.stdin.write(payload.encode())
        proc.stdin.flush()
        got = {r["id"]: r for r in (json.loads(proc.stdout.readline()) for _ in range(replies))}
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return got


def _ask(proc: subprocess.Popen, line: str) -> dict:
    proc.stdin.write(line.encode())
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def _backends(org, app: str) -> int:
    with org.admin() as conn:
        row = conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = %s", (app,)).fetchone()
    return row["n"]


def _ended(proc: subprocess.Popen, sig: signal.Signals) -> None:
    """Send `sig`; the server exits 0 with no traceback (killed if it hangs, and failed)."""
    try:
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in proc.stderr.read().decode()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_the_server_cleanly_and_closes_its_connection(org, sig, tmp_path):
    """...at once: after the Org is closed the process skips the interpreter's teardown
    (0.55 s with the model's libraries loaded; Claude Code sends SIGTERM 100 ms after its
    SIGINT), so an atexit hook never runs."""
    app = f"cli-org-mcp-{sig.name.lower()}"
    proc = _spawn(org, app, site=tmp_path)
    assert _ask(proc, request(1, "initialize", HELLO))["result"]["serverInfo"]["name"] == "cli-org"
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    facts = _ask(proc, request(2, "tools/call", {"name": "org_facts", "arguments": {}}))
    assert facts["result"]["content"][0]["text"] == "no facts"  # served by the SDK, on the Org
    assert _backends(org, app) == 1
    _ended(proc, sig)
    assert not (tmp_path / "teardown").exists()
    deadline = time.monotonic() + 10
    while _backends(org, app) and time.monotonic() < deadline:  # the server notices the close itself
        time.sleep(0.1)
    assert _backends(org, app) == 0


@pytest.mark.slow
def test_a_signal_while_starting_ends_the_server_at_once(org, tmp_path):
    proc = _spawn(org, "cli-org-mcp-starting", site=tmp_path)
    assert "result" in _ask(proc, request(1, "initialize", HELLO))  # the front is up; the SDK is loading
    _ended(proc, signal.SIGINT)
    assert not (tmp_path / "teardown").exists()


# --- the first tool call: the front answers an org_recall on the Org it opened ----------------

RECALL = {"name": "org_recall", "arguments": {"question": "when do deploys run?"}}


def _taken(lines: list[str]) -> tuple[front.Front, list[object]]:
    """A front that has read `lines` (no Org yet); the ids of the requests it queued for the
    SDK server, with "front" in place of each call it took for itself."""
    f, sent = _front(lines)
    assert all(m["id"] != 3 for m in sent)  # no call answered before the Org is open
    queued = []
    while (line := f.lines.get_nowait()) is not None:
        if "id" in json.loads(line):
            queued.append(json.loads(line)["id"])
    return f, queued + ["front"] * f.calls.unfinished_tasks


def test_the_front_takes_an_org_recall_only_with_plain_arguments_and_nothing_waiting_ahead():
    hello = [request(1, "initialize", HELLO), '{"jsonrpc":"2.0","method":"notifications/initialized"}\n']
    assert _taken([*hello, request(3, "tools/call", RECALL)])[1] == ["front"]
    bad = [
        {"name": "org_recall", "arguments": {"question": "   "}},  # blank: the SDK server says what is wrong
        {"name": "org_recall", "arguments": {"question": "q", "limit": True}},
        {"name": "org_recall", "arguments": {"question": "q", "limit": 51}},
        {"name": "org_recall", "arguments": {"question": "q", "limit": "5"}},
        {"name": "org_recall", "arguments": {"question": "q", "as": "boss"}},
        {"name": "org_recall", "arguments": {"question": "q", "project": 7}},
        {"name": "org_recall", "arguments": ["q"]},
        {"name": "org_facts", "arguments": {}},
        {**RECALL, "task": {}},
        {**RECALL, "_meta": "x"},
    ]
    for params in bad:
        assert _taken([*hello, request(3, "tools/call", params)])[1] == [3], params
    # Before the handshake, or behind a request queued for the SDK server: queued, in order.
    assert _taken([request(3, "tools/call", RECALL)])[1] == [3]
    facts = request(2, "tools/call", {"name": "org_facts", "arguments": {}})
    assert _taken([*hello, facts, request(3, "tools/call", RECALL)])[1] == [2, 3]
    # A client without a handshake: taken with its envelope, not on a handshake's session.
    assert _taken([request(3, "tools/call", {**RECALL, **modern("2026-07-28")})])[1] == ["front"]
    assert _taken([*hello, request(3, "tools/call", {**RECALL, **modern("2026-07-28")})])[1] == [3]
    assert _taken([request(3, "tools/call", {**RECALL, **modern("2099-01-01")})])[1] == [3]


REMEMBER = {
    "name": "org_remember",
    "arguments": {"subject": "deploys", "claim": "Deploys run at night from the release branch", "source": "a.md"},
}


def test_the_front_takes_an_org_remember_only_with_plain_arguments():
    hello = [request(1, "initialize", HELLO), '{"jsonrpc":"2.0","method":"notifications/initialized"}\n']
    every = {**REMEMBER["arguments"], "project": None, "kind": "rule", "supersedes": 3, "inferred": True}
    for arguments in (REMEMBER["arguments"], {**every, "allow_duplicate": False}):
        assert _taken([*hello, request(3, "tools/call", {**REMEMBER, "arguments": arguments})])[1] == ["front"]
    plain = REMEMBER["arguments"]
    bad = [
        {"subject": "s", "claim": "c"},  # no source: the SDK server says it is missing
        {**plain, "kind": "gossip"},
        {**plain, "supersedes": 0},
        {**plain, "supersedes": True},
        {**plain, "supersedes": "3"},
        {**plain, "inferred": "yes"},
        {**plain, "allow_duplicate": 1},
        {**plain, "project": 7},
        {**plain, "claim": None},
        {**plain, "as": "boss"},
    ]
    for arguments in bad:
        assert _taken([*hello, request(3, "tools/call", {**REMEMBER, "arguments": arguments})])[1] == [3], arguments


def test_the_fronts_org_remember_is_the_listed_one():
    for version in MANIFEST["versions"].values():
        listed = next(t for t in version["tools/list"]["tools"] if t["name"] == "org_remember")["inputSchema"]
        assert tuple(listed["properties"]) == REMEMBER_ARGUMENTS
        assert listed["required"] == ["subject", "claim", "source"]
        supersedes = listed["properties"]["supersedes"]["anyOf"][0]
        assert (supersedes["type"], supersedes["minimum"]) == ("integer", 1)
        assert [listed["properties"][k]["type"] for k in ("inferred", "allow_duplicate")] == ["boolean", "boolean"]


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
def test_the_fronts_org_remember_is_the_sdk_servers_word_for_word(org, era):
    """The same refused write, answered by the front (the first call) and by the SDK server (a
    call behind one queued for it), then a stored one from each: written with the same harness."""
    envelope = {} if era == "handshake" else modern(era)
    start = request(1, "initialize", HELLO) if era == "handshake" else request(1, "server/discover", modern(era))
    secret = {**REMEMBER["arguments"], "claim": "The deploy key is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}
    calls = [
        {"name": "org_remember", "arguments": secret},  # the front's
        {"name": "org_facts", "arguments": {}},
        {"name": "org_remember", "arguments": secret},  # the SDK server's
        REMEMBER,
    ]
    replies = _exchange(
        org, start + "".join(request(3 + i, "tools/call", {**c, **envelope}) for i, c in enumerate(calls)), 5
    )
    assert replies[3]["result"]["isError"] is True and "secret" in replies[3]["result"]["content"][0]["text"]
    assert replies[3]["result"] == replies[5]["result"]
    assert replies[6]["result"]["isError"] is False
    with org.admin() as conn:
        logged = conn.execute("SELECT tool, ok FROM tool_calls ORDER BY id").fetchall()
        stored = conn.execute("SELECT author, via FROM memory_facts").fetchall()
    assert [(r["tool"], r["ok"]) for r in logged] == [
        ("org_remember", False),
        ("org_facts", True),
        ("org_remember", False),
        ("org_remember", True),
    ]
    assert len(stored) == 1 and stored[0]["author"] == "bot"
    client = "test" if era == "handshake" else "claude-code"
    assert stored[0]["via"].startswith(f"{client}@"), stored[0]["via"]


@pytest.mark.slow
def test_a_stored_first_remember_from_the_front_carries_the_harness(org):
    replies = _exchange(org, request(1, "initialize", HELLO) + request(3, "tools/call", REMEMBER), 2)
    assert replies[3]["result"]["isError"] is False
    with org.admin() as conn:
        stored = conn.execute("SELECT id, author, via FROM memory_facts").fetchall()
    assert len(stored) == 1 and stored[0]["author"] == "bot" and stored[0]["via"].startswith("test@")
    assert str(stored[0]["id"]) in replies[3]["result"]["content"][0]["text"]


def test_the_fronts_org_recall_is_the_listed_one():
    """The arguments the front takes are the tool's schema (the manifest: what the SDK server
    lists), so a change to org_recall that the front does not know of sends its calls to the
    SDK server rather than answering them by an old rule."""
    for version in MANIFEST["versions"].values():
        listed = next(t for t in version["tools/list"]["tools"] if t["name"] == "org_recall")["inputSchema"]
        assert tuple(listed["properties"]) == RECALL_ARGUMENTS and listed["required"] == ["question"]
        assert listed["properties"]["question"]["type"] == "string"
        assert listed["properties"]["project"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
        limit = listed["properties"]["limit"]
        assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == (
            "integer",
            RECALL_HITS.low,
            RECALL_HITS.high,
            RECALL_HITS.default,
        )


def _org(org):
    from cli_org.org import Org

    return Org.open(org.settings, "bot", face="mcp", pool=1)


def test_a_call_that_arrives_before_the_org_is_open_is_answered_once_it_is_and_before_the_hand_off(org):
    from cli_org.store import facts

    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night from the release branch", source="docs/deploy.md")
    f, taken = _taken([request(1, "initialize", HELLO), request(3, "tools/call", RECALL), request(4, "ping")])
    assert taken == ["front"]
    out: list[bytes] = []
    f.write = out.append
    with _org(org) as opened:
        f.ready(opened)
        replay = f.hand_off()  # waits for the front's call in hand
        answer = json.loads(out[0])
        assert answer["id"] == 3 and answer["result"]["isError"] is False
        text = answer["result"]["content"][0]["text"]
        assert "Deploys run at night" in text
        assert text == recall_text(opened, RECALL["arguments"]["question"])  # what org_recall says (server.py)
        assert [json.loads(line)["id"] for line in replay] == [front.REPLAYED]
    with org.admin() as conn:
        logged = conn.execute("SELECT agent, tool, ok FROM tool_calls").fetchall()
    assert [(r["agent"], r["tool"], r["ok"]) for r in logged] == [("bot", "org_recall", True)]


def test_a_signal_while_the_front_has_a_call_in_hand_ends_the_process_after_it(org):
    f, taken = _taken([request(1, "initialize", HELLO), request(3, "tools/call", RECALL)])
    assert taken == ["front"]
    out: list[bytes] = []
    f.write = out.append
    ended: list[int] = []
    assert f.in_hand(lambda: ended.append(len(out)))  # the signal's handler: not at once
    with _org(org) as opened:
        f.ready(opened)
        f.calls.join()
    assert ended == [1] and json.loads(out[0])["id"] == 3  # after the answer went out
    idle, _ = _front([request(1, "initialize", HELLO)])
    assert not idle.in_hand(lambda: None)  # nothing in hand: the handler ends the process at once


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
def test_the_fronts_answer_is_the_sdk_servers_word_for_word(org, era):
    """The same recall, answered by the front (the first call) and by the SDK server (a call
    behind one queued for it), in a session of each protocol era."""
    from cli_org.store import facts

    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "Deploys run at night from the release branch", source="docs/deploy.md")
        conn.commit()
    envelope = {} if era == "handshake" else modern(era)
    start = request(1, "initialize", HELLO) if era == "handshake" else request(1, "server/discover", modern(era))
    replies = _exchange(
        org,
        start
        + request(3, "tools/call", {**RECALL, **envelope})  # the front's
        + request(4, "tools/call", {"name": "org_facts", "arguments": {}, **envelope})
        + request(5, "tools/call", {**RECALL, **envelope}),  # the SDK server's
        4,
    )
    assert "Deploys run at night" in replies[3]["result"]["content"][0]["text"]
    assert replies[3]["result"] == replies[5]["result"]
    with org.admin() as conn:
        logged = conn.execute("SELECT tool, ok FROM tool_calls ORDER BY id").fetchall()
    assert [(r["tool"], r["ok"]) for r in logged] == [("org_recall", True), ("org_facts", True), ("org_recall", True)]


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["nobody", "bot"], ids=["unknown agent", "database down"])
def test_a_failed_start_with_a_recall_waiting_is_still_one_line(org, agent, tmp_path):
    """A recall the front took is never answered when the Org cannot open: the process
    stops with the same one line and exit 1 as without it."""
    requests = tmp_path / "in.jsonl"
    requests.write_text(request(1, "initialize", HELLO) + request(3, "tools/call", RECALL))
    env = {**os.environ, **org.env, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    if agent == "bot":
        env["CLI_ORG_DATABASE_URL"] = "postgresql://nobody@127.0.0.1:1/none"
    with open(requests) as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "cli_org", "mcp", "--as", agent],
            stdin=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [1]
    assert done.returncode == 1 and done.stderr.startswith("cli-org: ") and done.stderr.count("\n") == 1
    if agent == "nobody":
        assert done.stderr.startswith("cli-org: unknown agent 'nobody'")


# --- subscriptions/listen: acknowledged by the front, the stream kept by the SDK server -------

LISTEN_ALL = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}


def _sdk_acknowledgement(line: str) -> dict:
    """What the SDK server (built with no Org, as scripts/mcp_manifest.py does) sends first
    for `line`."""
    import anyio

    from cli_org.faces.mcp.server import Session, build_server, serve_lines

    server = build_server(Session(None))  # type: ignore[arg-type]
    sent: list[dict] = []
    done = anyio.Event()

    def send(text: str) -> None:
        sent.append(json.loads(text))
        done.set()

    async def lines():
        yield line
        await done.wait()

    anyio.run(serve_lines, server, lines(), send)
    return sent[0]


@pytest.mark.parametrize("wanted", [LISTEN_ALL, {"toolsListChanged": True}, {"promptsListChanged": False}, {}])
def test_the_front_acknowledges_a_listen_as_the_sdk_server_does_and_replays_it(wanted):
    listen = request("listen:0", "subscriptions/listen", {**modern("2026-07-28"), "notifications": wanted})
    f, sent = _front([request(1, "server/discover", modern("2026-07-28")), listen])
    assert sent[1] == _sdk_acknowledgement(listen)
    assert f.hand_off() == [listen]  # the SDK server keeps the stream...
    out: list[bytes] = []
    f.write = out.append
    f.deliver(json.dumps(sent[1]))  # ...and its own acknowledgement is dropped, once
    f.deliver(json.dumps(sent[1]))
    f.deliver(json.dumps({"jsonrpc": "2.0", "id": "listen:0", "error": {"code": -32000, "message": "closed"}}))
    assert [json.loads(b).get("id") for b in out] == [None, "listen:0"]


def test_a_listen_the_front_cannot_vouch_for_goes_to_the_sdk_server():
    hello = [request(1, "initialize", HELLO)]
    for lines in (
        [*hello, request("l", "subscriptions/listen", {**modern("2026-07-28"), "notifications": LISTEN_ALL})],
        [request("l", "subscriptions/listen", {**modern("2099-01-01"), "notifications": LISTEN_ALL})],
        [
            request(
                "l", "subscriptions/listen", {**modern("2026-07-28"), "notifications": {"resourceSubscriptions": []}}
            )
        ],
        [request("l", "subscriptions/listen", {**modern("2026-07-28"), "notifications": {"toolsListChanged": 1}})],
        [request("l", "subscriptions/listen", modern("2026-07-28"))],
    ):
        f, sent = _front(lines)
        assert all(m.get("method") != front.ACKNOWLEDGED for m in sent)
        assert json.loads(f.lines.get_nowait())["id"] == "l" and f.listens == []


@pytest.mark.slow
def test_a_listen_is_acknowledged_once_and_its_stream_ends_with_the_session(org):
    proc = _spawn(org, "cli-org-mcp-listen")
    try:
        proc.stdin.write(
            (
                request("d", "server/discover", modern("2026-07-28"))
                + request("listen:0", "subscriptions/listen", {**modern("2026-07-28"), "notifications": LISTEN_ALL})
                + request(4, "tools/call", {"name": "org_facts", "arguments": {}, **modern("2026-07-28")})
            ).encode()
        )
        proc.stdin.flush()
        first = [json.loads(proc.stdout.readline()) for _ in range(3)]
        proc.stdin.close()
        rest = [json.loads(line) for line in proc.stdout.read().splitlines()]
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = first + rest
    assert [m.get("id", m.get("method")) for m in said[:3]] == ["d", front.ACKNOWLEDGED, 4]
    assert said[2]["result"]["content"][0]["text"] == "no facts"
    assert [m.get("id") for m in rest] == ["listen:0"]  # the SDK server ended the stream it kept
