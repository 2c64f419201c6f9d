"""Shared by the test modules (moved from tests/test_web_browser.py; no test module imports another)."""

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
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.databases import fresh_database, with_team

ROOT = Path(__file__).resolve().parents[1]


CHROMIUM = os.environ.get("CLI_ORG_CHROMIUM", "/usr/bin/chromium")


# The flags for a sandboxed CI machine with no network: no GPU, no QUIC, nothing phoned home.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


HOSTILE = "<script>alert('claim')</script><img src=x onerror=alert(1)>"


QUESTION = "when is the deploy freeze"


ANSWER = "December 20 to January 3"


def screens_dir() -> Path:
    """Where the screenshots go: $CLI_ORG_SCREENS, or test-output/screens (git-ignored)."""
    folder = Path(os.environ.get("CLI_ORG_SCREENS") or ROOT / "test-output" / "screens")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def served_paths() -> set[str]:
    """The paths the routers of cli_org/faces/web/pages serve (the one test of whether a page exists)."""
    from cli_org.faces.web.pages import ROUTERS

    return {getattr(route, "path", "") for router in ROUTERS for route in router.routes}


def _needs_a_page(path: str) -> None:
    if path not in served_paths():
        pytest.skip(f"{path} is in PAGES but no router in cli_org/faces/web/pages serves it yet")


def _browser_or_skip() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"no Chromium at {CHROMIUM}: .ci/run installs Debian's chromium; the browser test must run in CI")
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CLI_ORG_CHROMIUM); CI=true fails here")


def _claude_line(session: str, uuid: str, block: dict, minutes_ago: float, role: str = "assistant") -> str:
    at = (datetime.now(UTC) - timedelta(minutes=minutes_ago)).isoformat().replace("+00:00", "Z")
    message = {"role": role, "id": "msg-" + uuid, "model": "m", "content": [block]}
    record = {"type": role, "sessionId": session, "uuid": uuid, "timestamp": at, "cwd": "/w/shop"}
    return json.dumps({**record, "message": message}) + "\n"


def _load(org, tmp: Path) -> dict[str, int]:
    from click.testing import CliRunner

    from cli_org.archive.importer import import_sessions
    from cli_org.faces.cli import cli as group
    from cli_org.store.facts import remember

    with org.as_agent("bot") as conn:
        freeze = remember(conn, "deploy freeze", f"No deploys from {ANSWER}.", source="docs/freeze.md").id
        old = remember(conn, "log retention", "Logs are kept for 30 days.", source="#ops-1").id
        remember(conn, "log retention", "Logs are kept for 90 days since the audit.", source="#ops-2", supersedes=old)
        hostile = remember(conn, "<b>hostile</b>", f"A claim that tries {HOSTILE}", source="#sec-1").id
    with org.as_agent("other") as conn:
        remember(conn, "billing", "Invoices go out on the first working day.", source="#fin-1", kind="rule")

    vault = tmp / "root" / "vault"
    (vault / "ops").mkdir(parents=True)
    (vault / "ops" / "freeze.md").write_text("# Deploy freeze\n\nThe yearly freeze covers the holidays.\n")
    (vault / "ops" / "oncall.md").write_text("# On call\n\nThe on-call rota changes on Mondays at 09:00.\n")
    golden = tmp / "golden.txt"
    golden.write_text(f"{QUESTION}|{ANSWER}|fact\nwho is on call|rota changes on Mondays|vault\n")

    runner = CliRunner()
    env = {**org.env, "ORG_ROOT": str(tmp / "root"), "ORG_AGENT": "boss"}
    for args in (["vault", "scan", str(vault), "--embed"], ["eval", "golden", str(golden), "--save", "first"]):
        done = runner.invoke(group, args, env=env, catch_exceptions=False)
        assert done.exit_code == 0, done.output

    # An archived session that recalled (bot's real recall, its printed answer as the tool's
    # result, also in the recall log) and then quoted the fact it found.
    asked = runner.invoke(group, ["recall", QUESTION], env={**env, "ORG_AGENT": "bot"}, catch_exceptions=False)
    assert asked.exit_code == 0 and ANSWER in asked.stdout, asked.output
    claude = tmp / "claude" / "-w-shop"
    claude.mkdir(parents=True)
    recall = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f'cli-org recall "{QUESTION}"'}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": asked.stdout}
    quote = {"type": "text", "text": f"Fact #{freeze} says no deploys from {ANSWER}."}
    (claude / "S1.jsonl").write_text(
        _claude_line("S1", "u1", recall, 30)
        + _claude_line("S1", "u2", result, 29.5, "user")
        + _claude_line("S1", "u3", quote, 29)
    )
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": tmp / "claude"})
    return {"freeze": freeze, "hostile": hostile}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_up(proc: subprocess.Popen, url: str, log: Path, seconds: float = 120) -> str:
    """The address with the token that `cli-org serve` printed, once the page answers to it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"cli-org serve exited with {proc.returncode}: {log.read_text()}")
        printed = re.search(r"http://\S+/\?token=[\w-]+", log.read_text())
        try:
            if printed:
                token = printed.group(0).rsplit("=", 1)[1]
                asked = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
                with urllib.request.urlopen(asked, timeout=5) as answer:
                    if answer.status == 200:
                        return printed.group(0)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"cli-org serve did not answer within {seconds:.0f} s: {log.read_text()}")


@pytest.fixture(scope="module")
def site(server, template, tmp_path_factory):
    """`cli-org serve --as boss` on a free port over a database with data for every page;
    yields (base URL, the database, the ids loaded, the login address it printed). Stopped
    and dropped after the module."""
    _browser_or_skip()
    tmp = tmp_path_factory.mktemp("browser")
    with fresh_database(server, template) as blank:
        org = with_team(blank)
        ids = _load(org, tmp)
        port = _free_port()
        env = {**os.environ, **org.env, "ORG_ROOT": str(tmp / "root")}
        env.pop("ORG_AGENT", None)
        log = tmp / "serve.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cli_org", "serve", "--port", str(port), "--as", "boss"],
                env=env,
                cwd=ROOT,  # this checkout's cli_org, whatever the venv installed
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            base = f"http://127.0.0.1:{port}"
            login = _wait_until_up(proc, base + "/facts", log)
            yield base, org, ids, login
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def browser(site):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=_browser_or_skip(), args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Watched:
    """A page that records what must never happen: a script dialog (escaping failed), an
    uncaught script error, or a request to anywhere but the server (nothing fetched from the
    internet at run time)."""

    def __init__(self, browser, base: str) -> None:
        self.base = base
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=base)
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.elsewhere: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("request", self._request)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _request(self, request) -> None:
        url = request.url
        if not (url.startswith(self.base + "/") or url.startswith("data:") or url == self.base):
            self.elsewhere.append(url)

    def login(self, address: str):
        """Open the address `cli-org serve` printed, as its user does: it leaves the token in
        a cookie and lands on the Facts page, the token gone from the address bar."""
        answer = self.page.goto(address, wait_until="load")
        assert answer is not None and answer.status == 200
        assert self.page.url == self.base + "/facts", self.page.url
        return answer

    def open(self, path: str):
        answer = self.page.goto(path, wait_until="load")
        assert answer is not None and answer.status == 200, f"{path}: {answer and answer.status}"
        return answer

    def shoot(self, name: str) -> Path:
        shot = screens_dir() / f"{name}.png"
        self.page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000, f"{shot} is nearly empty"
        return shot

    def clean(self) -> None:
        assert self.dialogs == [], f"a script ran from the page's text: {self.dialogs}"
        assert self.errors == [], f"script errors on the page: {self.errors}"
        assert self.elsewhere == [], f"the page fetched from elsewhere: {self.elsewhere}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(site, browser):
    base, _, _, login = site
    watched = Watched(browser, base)
    watched.login(login)
    yield watched
    watched.close()


def _shot_name(path: str) -> str:
    return path.strip("/").replace("/", "-") or "home"
