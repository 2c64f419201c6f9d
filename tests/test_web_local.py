"""Issue 21, finding 3: the web page against another user of the same machine and against a
page on another port of 127.0.0.1. Loopback is shared by every local user, so every request
needs the token `cli-org serve` draws at start; and a page on another port is the same
site (the browser sends it the cookie) but not the same origin, so it may neither write nor
ask a question (which is logged)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from cli_org.store import facts
from cli_org.store import notebook as nb

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SECRET = "The payroll export key rotates on the 3rd."  # in the owner-readable notebook of bot


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _current(org, fid: int) -> bool:
    with org.admin() as conn:
        return conn.execute("SELECT valid_to IS NULL AS c FROM memory_facts WHERE id = %s", (fid,)).fetchone()["c"]


def _recalls(org) -> int:
    with org.admin() as conn:
        return conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"]


@pytest.fixture
def served(org, tmp_path):
    """A real `cli-org serve --as boss` (the owner) on a free loopback port; yields (base,
    the token in the address it printed, or "" if it printed none, and its pid)."""
    port = _free_port()
    env = {**os.environ, **org.env}
    env.pop("ORG_AGENT", None)
    env.pop("CLI_ORG_WEB_TOKEN", None)
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli_org", "serve", "--port", str(port), "--as", "boss"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while "cli-org serve: " not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        found = re.search(r"/\?token=([\w-]+) ", log.read_text())
        yield f"http://127.0.0.1:{port}", found.group(1) if found else "", proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def stranger():
    """Another Unix user of this machine, created for the test and removed after it."""
    if os.geteuid() != 0:
        pytest.skip("creating a second Unix user needs root")
    name = "cow" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=True)


def _curl_as(user: str, *args: str) -> tuple[int, str]:
    """curl run as `user`: (HTTP status, body)."""
    done = subprocess.run(
        ["runuser", "-u", user, "--", "curl", "-s", "-o", "-", "-w", "\n%{http_code}", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    body, _, status = done.stdout.rpartition("\n")
    return int(status), body


def _as_owner(url: str, token: str, body: dict | None = None) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    asked = urllib.request.Request(url, data=data, headers={"Authorization": f"Bearer {token}"})
    if data is not None:
        asked.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(asked, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.attack("web")
def test_another_local_user_can_neither_read_nor_retire_through_the_page(org, served, stranger):
    base, token, pid = served
    with org.as_agent("bot") as conn:
        fid = facts.remember(conn, "payroll", "Payroll runs on the 25th.", source="#fin-1").id
        nb.add(conn, "memory", SECRET)
    for path in ("/api/agents/bot", "/agents/bot", "/facts", "/api/facts", f"/facts/{fid}"):
        status, body = _curl_as(stranger, base + path)
        assert status == 401 and "payroll" not in body.lower(), (path, status)
    status, _ = _curl_as(
        stranger, "-X", "POST", "-H", "Content-Type: application/json", "-d", '{"why": "x"}',
        f"{base}/api/facts/{fid}/forget",
    )  # fmt: skip
    assert status == 401 and _current(org, fid)
    status, _ = _curl_as(stranger, f"{base}/?token=guessed-{uuid.uuid4().hex}")
    assert status == 401
    # Nor does the process show the token to other users (its command line is world-readable).
    status = subprocess.run(["runuser", "-u", stranger, "--", "cat", f"/proc/{pid}/cmdline"], capture_output=True)
    assert token and token.encode() not in status.stdout
    # The owner, with the token, reads and retires.
    ok, page = _as_owner(base + "/api/agents/bot", token)
    assert ok == 200 and SECRET in page
    ok, _ = _as_owner(f"{base}/api/facts/{fid}/forget", token, {"why": "moved to the 28th"})
    assert ok == 200 and not _current(org, fid)


def test_the_printed_address_logs_a_browser_in_once(org, served):
    base, token, _ = served
    assert token, "serve printed no address that carries a token"
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    with opener.open(f"{base}/?token={token}", timeout=30) as landed:
        assert landed.status == 200 and landed.url == base + "/facts"  # the token left the address
    with opener.open(base + "/agents", timeout=30) as again:
        assert again.status == 200  # the cookie it left


@pytest.mark.attack("web")
def test_a_page_on_another_port_can_neither_write_nor_ask(org, web):
    """The browser sends the cookie to a same-site page's requests: other ports of 127.0.0.1
    are refused by Origin and Sec-Fetch-Site, and no GET asks (a recall is logged)."""
    with org.as_agent("bot") as conn:
        fid = facts.remember(conn, "cache", "The cache holds an hour of results.", source="#t-1").id
    client = web("boss")  # logged in: the cookie is in its jar
    csrf = client.get(f"/facts/{fid}").text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    other = "http://127.0.0.1:9999"
    same_site = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    tries = [
        client.post(f"/facts/{fid}/forget", data={"why": "x", "csrf": csrf}, headers={"Origin": other}),
        client.post(f"/facts/{fid}/forget", data={"why": "x", "csrf": csrf}, headers={"Sec-Fetch-Site": "same-site"}),
        client.post(f"/api/facts/{fid}/forget", json={"why": "x"}, headers={"Origin": other}),
        client.post(f"/api/facts/{fid}/forget", json={"why": "x"}, headers=same_site),
        client.post(f"/api/facts/{fid}/forget", json={"why": "x"}, headers={"Sec-Fetch-Site": "cross-site"}),
        client.post("/recall", data={"q": "deploy window", "csrf": csrf}, headers={"Origin": other}),
        client.post("/api/recall", json={"q": "deploy window"}, headers=same_site),
        client.get("/api/facts", headers=same_site),
    ]
    assert [t.status_code for t in tries] == [403] * len(tries)
    # A link from the other port (a top-level navigation) only reads: the box, nothing asked.
    link = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    for path in ("/recall", "/api/recall"):
        client.get(path, params={"q": "deploy window"}, headers=link)
    assert _current(org, fid) and _recalls(org) == 0
    # From the page itself, both work.
    mine = {"Origin": "http://127.0.0.1:8765", "Sec-Fetch-Site": "same-origin"}
    assert client.post("/recall", data={"q": "deploy window", "csrf": csrf}, headers=mine).status_code == 200
    assert _recalls(org) == 1
    assert client.post(f"/facts/{fid}/forget", data={"why": "x", "csrf": csrf}, headers=mine).status_code == 303
    assert not _current(org, fid)
