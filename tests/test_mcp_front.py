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
from cli_org.faces.mcp.manifest import MANIFEST
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
