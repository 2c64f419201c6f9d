"""A database blip under the long-lived faces: the embedded server stopped (and started again)
under a running web page, MCP server and warm helper. While it is down each answers at once
with the command that fixes it; the first request after `cli-org db start` works.

These stop and start a server, so they run on one of their own (the suite's is shared)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli_org.config import Settings
from cli_org.db import embedded
from cli_org.db.connect import EMBEDDED_DOWN, connect
from cli_org.store import facts
from cli_org.store.agents import add_agent
from cli_org.store.bootstrap import init

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_blip")]

ROOT = Path(__file__).resolve().parents[1]
CLAIM = "Deploys go out from the release branch on Tuesdays"
# Far above the fast answer, far below the 30 s a page used to wait: catches the hang only.
HANG = 10.0


@dataclass
class Own:
    """A server of this module's own, with an org (owner boss, bot) and one fact."""

    data_dir: Path
    settings: Settings
    env: dict[str, str]

    def stop(self) -> None:
        assert embedded.stop(self.data_dir)

    def start(self) -> None:
        embedded.start(self.data_dir)


@pytest.fixture(scope="module")
def own():
    folder = Path(tempfile.mkdtemp(prefix="cli-org-test-blip-"))
    data_dir = folder / "data"
    env = {"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_DATABASE_URL": "", "CLI_ORG_DATABASE": "blip"}
    settings = Settings.from_env(env)
    try:
        init(settings, "boss")
        with connect(settings) as conn:
            add_agent(conn, "bot")
            conn.commit()
        with connect(settings, "bot") as conn:
            facts.remember(conn, "deploy", CLAIM, source="docs/deploy.md")
        yield Own(data_dir, settings, env)
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def running(own):
    """The server runs at the start of each test, whatever the last one left."""
    own.start()
    return own


def test_a_page_with_the_database_down_names_the_fix_and_the_next_after_start_works(running):
    from fastapi.testclient import TestClient

    from cli_org.faces.web.app import create_app, opened
    from cli_org.faces.web.guard import hosts_for

    token = "t" * 32
    with opened(running.settings, "boss", token=token, hosts=hosts_for("127.0.0.1", 8765)) as web:
        client = TestClient(
            create_app(web), base_url="http://127.0.0.1:8765", headers={"Authorization": f"Bearer {token}"}
        )
        pool = web.org.pool
        assert pool is not None
        held = [pool.getconn() for _ in range(3)]  # three idle connections for the restart to kill
        for conn in held:
            pool.putconn(conn)
        assert client.get("/facts").status_code == 200

        # A restart between two requests: the next one is served (no dead connection handed out).
        running.stop()
        running.start()
        after = client.get("/api/facts")
        assert after.status_code == 200 and CLAIM in after.text

        # Down: a page and the API answer at once, naming the command that fixes it.
        running.stop()
        began = time.monotonic()
        page, api = client.get("/facts"), client.get("/api/facts")
        took = time.monotonic() - began
        assert page.status_code == 503 and "text/html" in page.headers["content-type"]
        assert "The database could not answer" in page.text and "cli-org db start" in page.text
        assert api.status_code == 503 and api.json() == {"error": EMBEDDED_DOWN}
        assert took < HANG, took

        # Up again: the very next request works.
        running.start()
        again = client.get("/facts")
        assert again.status_code == 200 and CLAIM in again.text


def test_an_mcp_tool_call_with_the_database_down_names_the_fix_and_after_start_works(running):
    from tests.helpers import serve, text

    async def script(s):
        first = await s.call_tool("org_facts", {})
        running.stop()
        began = time.monotonic()
        down = await s.call_tool("org_facts", {})
        took = time.monotonic() - began
        running.start()
        after = await s.call_tool("org_facts", {})
        running.stop()
        running.start()  # a restart between two calls
        restarted = await s.call_tool("org_recall", {"question": "when do deploys go out"})
        return first, down, took, after, restarted

    first, down, took, after, restarted = serve(running, script)
    assert not first.is_error and CLAIM in text(first)
    assert down.is_error and text(down) == EMBEDDED_DOWN and took < HANG
    assert not after.is_error and CLAIM in text(after)
    assert not restarted.is_error and "Tuesdays" in text(restarted)


def test_the_first_hook_after_a_restart_delivers_from_the_warm_helper(running):
    """The helper's one connection dies with the server; the first hook after `db start`
    still gets the context block, answered by the helper (not cold), every time."""
    from tests.helpers import _hook, helper, served

    where = Path(tempfile.mkdtemp(prefix="cw"))  # a socket path holds about 100 bytes
    env = {**os.environ, **running.env, "CLI_ORG_WARM": "1", "CLI_ORG_WARM_DIR": str(where / "w")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("ORG_AGENT", None)
    start = {"session_id": "blip-0", "cwd": str(ROOT), "hook_event_name": "SessionStart"}

    def delivered(session: str) -> bool:
        done = _hook(env, "session-start", {**start, "session_id": session})
        assert done.returncode == 0, done.stderr
        return bool(done.stdout) and CLAIM in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]

    try:
        with helper(env):
            assert delivered("blip-0") and served(env) == 1
            for n in range(1, 4):
                running.stop()
                running.start()
                assert delivered(f"blip-{n}"), f"restart {n}: nothing delivered"
                assert served(env) == n + 1, f"restart {n}: the helper did not answer"
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_an_unreachable_url_server_is_named_by_host_and_port_never_by_its_password():
    from cli_org.errors import DatabaseError

    settings = Settings.from_env({"CLI_ORG_DATABASE_URL": "postgresql://bot:hunter2@127.0.0.1:1/org"})
    for start in (True, False):  # a command's connection, and a pool's reconnect
        with pytest.raises(DatabaseError) as refused:
            connect(settings, start=start)
        said = str(refused.value)
        assert said.startswith("cannot connect to CLI_ORG_DATABASE_URL: the server at 127.0.0.1:1 is unreachable")
        assert "refused" in said and "start it, or correct the URL" in said and "hunter2" not in said
