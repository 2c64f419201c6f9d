"""Whole Codex sessions (the real `codex` from its registry, tests/clients.py) against the
stand-in model API (tests/standin_responses.py), as a user runs them: `cli-org setup codex`,
`codex mcp list`, then `codex exec` in a project. What is asserted is what Codex put in
front of the model: the instruction block, cli-org's tools in the first request, a recall
as the CLI's text, a refused forget as one line.

Codex runs with HOME and CODEX_HOME in the test's folder, its analytics, feedback and
update check off, and no network but the stand-in (a `model_providers` entry). The server and
hooks Codex starts run the `cli-org` setup found first on PATH: a script that runs this
checkout (Codex gives a server PATH and HOME, not PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli_org.archive.importer import import_sessions
from cli_org.archive.usage import usage
from cli_org.org.registry import MCP as TOOLS
from cli_org.store import facts, pins
from tests import standin_responses as api
from tests.clients import client, query_model
from tests.standin import StandIn, standing

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.xdist_group("clients")]

ROOT = Path(__file__).resolve().parents[1]
CODEX = "codex-0.169.0"
# Codex 0.169 offers a server's tools as one namespace, `mcp__` + the server's name with `-`
# as `_`, and a model calls `org_recall` in it (seen in its requests).
NAMESPACE = "mcp__cli_org"
# A user's own settings: the model provider (the stand-in), no analytics, feedback or update
# check. Every run passes --strict-config, so each key is one Codex 0.169 knows.
USER_CONFIG = """\
model = "stand-in"
model_provider = "standin"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[model_providers.standin]
name = "stand-in"
base_url = "{url}/v1"
env_key = "STANDIN_API_KEY"
wire_api = "responses"
"""
RUN_SECONDS = 90  # a guard against a hang, not a measurement
# How Codex 0.169 hands a tool's result to the model: a timing line, then the result.
WRAPPED = re.compile(r"\AWall time: [0-9.]+ seconds\nOutput:\n?", re.S)
QUESTION = "how do deploys run"
# Codex's own answer to a call its approval policy stops (a tool setup does not approve, under `codex exec`).
REFUSED_BY_CODEX = "MCP tool call requires approval, but approval policy is never"


@dataclass
class Harness:
    """Codex in a home of its own, a project folder, and what a user types there."""

    program: Path
    home: Path
    project: Path
    env: dict[str, str]
    standin: StandIn

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            list(args),
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
        )
        if check:
            assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done

    def cli_org(self, *args: str) -> str:
        return self.run("cli-org", *args).stdout

    def codex(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run(str(self.program), *args, check=check)

    def exec(self, prompt: str, *flags: str) -> subprocess.CompletedProcess:
        """`codex exec` in the project (not a git repository), as a user runs it."""
        return self.codex("exec", "--skip-git-repo-check", "--strict-config", *flags, prompt)

    def requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.standin.kept("/responses") if r.method == "POST"]


Script = Callable[[dict[str, Any]], list[api.Item]]


@contextmanager
def codex_session(tmp_path: Path, database: dict[str, str], script: Script, **replies: Any) -> Iterator[Harness]:
    """The stand-in serving `script` (`replies`: how, api.responses), and Codex set up to
    use it, in tmp_path; `database` is the environment that names cli-org's database (what
    `cli-org setup` passes on)."""
    home, project, tools = tmp_path / "home", tmp_path / "project", tmp_path / "bin"
    for folder in (home / ".codex", project, tools):
        folder.mkdir(parents=True)
    # This checkout's `cli-org` first on PATH: setup writes its path into Codex's config, and
    # Codex starts the server with an environment of its own, without PYTHONPATH (an
    # installed `cli-org` elsewhere would serve another checkout's tools).
    program = tools / "cli-org"
    program.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m cli_org "$@"\n')
    program.chmod(0o755)
    with standing(api.responses(script, **replies)) as standin:
        (home / ".codex" / "config.toml").write_text(USER_CONFIG.format(url=standin.url))
        env = {
            "PATH": os.pathsep.join(
                [str(tools), str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]
            ),
            "HOME": str(home),
            "CODEX_HOME": str(home / ".codex"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(ROOT),  # the cli-org the test runs is this checkout's
            "STANDIN_API_KEY": "stand-in",
            **{k: v for k, v in database.items() if v},
        }
        yield Harness(client(CODEX), home, project, env, standin)


def scripted(*calls: tuple[str, dict[str, Any]]) -> Script:
    """A model that makes `calls` one per turn, in order, then says it is done."""

    def script(body: dict[str, Any]) -> list[api.Item]:
        answered = len(api.outputs(body))
        if answered < len(calls):
            name, arguments = calls[answered]
            return [api.call(name, arguments, NAMESPACE)]
        return [api.text("Done.")]

    return script


def handed(body: dict[str, Any]) -> list[str]:
    """What the model read back for each call of the request, in order, unwrapped."""
    return [WRAPPED.sub("", output) for output in api.outputs(body).values()]


def two_facts(org: Any) -> tuple[int, int]:
    """A fact by bot and one by other, on the same subject."""
    mine = facts.remember(
        org.writer("bot"),
        "deploy",
        "Deploys run from scripts/deploy.sh on main",
        source="ops.md",
        embedder=query_model(org),
    )
    theirs = facts.remember(
        org.writer("other"), "deploy", "Deploys are frozen on Fridays", source="ops.md", embedder=query_model(org)
    )
    return mine.id, theirs.id


def current(org: Any, fact_id: int) -> bool:
    with org.admin() as conn:
        row = conn.execute("SELECT valid_to IS NULL AS now FROM memory_facts WHERE id = %s", (fact_id,)).fetchone()
    return bool(row["now"])


def test_user_setup_gives_the_first_turn_its_tools_and_reads_without_approval(org, tmp_path):
    """`cli-org setup codex` in the user's CODEX_HOME, then `codex exec` as it comes: the
    instruction block and every tool are in the first request, a recall runs without an
    approval and hands the model the CLI's text, a recall with a wrong argument is answered
    in one line, a remember runs without an approval (setup approves the tools that only read
    or add), and a forget of bot's own fact (destructive) is refused by Codex's approval
    policy (`never` under exec) in one line. The read tools issue 37 added (todos, pins, the
    notebook's read) run without an approval too; the notebook's write tool (it may replace)
    is refused like forget."""
    mine, theirs = two_facts(org)
    claim = {"subject": "release", "claim": "Releases are tagged from main by the release job", "source": "ci.yml"}
    script = scripted(
        ("org_recall", {"question": QUESTION}),
        ("org_recall", {"question": QUESTION, "limit": "many"}),
        ("org_remember", claim),
        ("org_forget", {"id": mine, "why": "out of date"}),
        ("org_todos", {}),
        ("org_pins", {}),
        ("org_notebook", {}),
        ("org_notebook_edit", {"action": "add", "text": "Deploys need a green CI run"}),
    )
    with codex_session(tmp_path, org.env, script) as h:
        h.cli_org("setup", "codex", "--agent", "bot")
        listed = h.codex("mcp", "list").stdout
        assert re.search(r"^cli-org\s.*\benabled\b", listed, re.M), listed
        ran = h.exec("What do we know about deploys?")
        block = (h.home / ".codex" / "AGENTS.md").read_text().strip()
        cli_text = h.cli_org("recall", QUESTION, "--as", "bot").rstrip("\n")
        reads = [
            h.cli_org(*args, "--as", "bot").rstrip("\n") for args in (["todo", "list"], ["pins"], ["notebook", "show"])
        ]
    first, *_, last = h.requests()
    assert block in api.said(first)
    assert {f"{NAMESPACE}/{t}" for t in TOOLS} <= set(api.tools(first)), sorted(api.tools(first))
    recalled, wrong, remembered, refused, *read, edit = handed(last)
    assert recalled == cli_text
    assert "\n" not in wrong.strip() and "limit" in wrong and "http" not in wrong, wrong
    with org.admin() as conn:
        new = conn.execute("SELECT id, author FROM memory_facts WHERE subject = 'release'").fetchone()
    assert remembered.strip() == str(new["id"]) and new["author"] == "bot", remembered
    assert refused == REFUSED_BY_CODEX
    assert current(org, mine) and current(org, theirs)
    assert read == reads and reads[0] == "no todos" and reads[2].startswith("MEMORY (bot)")
    assert edit == REFUSED_BY_CODEX
    assert "Done." in ran.stdout
    # Codex's own record of the session, imported: its two recalls (the namespace and the
    # function joined into one name) count as cli-org's, the refused forget as no recall.
    with org.admin() as conn:
        import_sessions(conn, {"codex": h.home / ".codex" / "sessions"})
        row = next(r for r in usage(conn).harnesses if r.harness == "codex")
        names = {r["tool_name"] for r in conn.execute("SELECT tool_name FROM archive_messages WHERE recall_call")}
    assert (row.sessions_using, row.recall_calls) == (1, 2) and names == {"mcp__cli_org__org_recall"}, names


def test_project_setup_in_a_trusted_project_and_cli_org_refuses_the_forget(org, tmp_path):
    """`cli-org setup codex --project-dir P`: Codex reads P/.codex/config.toml once the
    project is trusted (`codex exec --trust`); with the user letting writes through
    (`--dangerously-bypass-approvals-and-sandbox`), a fact remembered through Codex says it
    came through Codex (ORG_VIA, codex@HOST), and a forget of another agent's fact reaches cli-org,
    which refuses it in one line."""
    _, theirs = two_facts(org)
    claim = {"subject": "release", "claim": "Releases are tagged from main by the release job", "source": "ci.yml"}
    script = scripted(("org_remember", claim), ("org_forget", {"id": theirs, "why": "out of date"}))
    with codex_session(tmp_path, org.env, script) as h:
        h.cli_org("setup", "codex", "--agent", "bot", "--project-dir", str(h.project))
        untrusted = h.codex("mcp", "list").stdout
        ran = h.exec("Retire the Friday freeze.", "--trust", "--dangerously-bypass-approvals-and-sandbox")
        listed = h.codex("mcp", "list").stdout
        block = (h.project / "AGENTS.md").read_text().strip()
    assert "cli-org" not in untrusted and re.search(r"^cli-org\s.*\benabled\b", listed, re.M), listed
    first, *_, last = h.requests()
    assert block in api.said(first)
    assert {f"{NAMESPACE}/{t}" for t in TOOLS} <= set(api.tools(first)), sorted(api.tools(first))
    remembered, refused = handed(last)
    assert refused.strip() == f"agent bot may not retire fact {theirs}: only its author (other), or an owner may"
    assert current(org, theirs)
    with org.admin() as conn:
        new = conn.execute("SELECT id, author, via FROM memory_facts WHERE subject = 'release'").fetchone()
    # via is RUNTIME@HOST (cli_org/checks/rules.py): the harness, and the machine
    assert remembered.strip() == str(new["id"]) and new["author"] == "bot", new
    assert (new["via"] or "").startswith("codex@"), new
    assert "Done." in ran.stdout


def kind(body: dict[str, Any]) -> str:
    """What Codex 0.169 says a request is for (a turn, a compaction), in its metadata."""
    return json.loads(body["client_metadata"]["x-codex-turn-metadata"])["request_kind"]


def test_after_a_compaction_the_next_request_has_the_block_and_the_tools(org, tmp_path):
    """Codex compacts on its own once a reply says the context is past
    `model_auto_compact_token_limit` (set low, as a long session reaches it): it asks the
    model for a summary, then starts the history again from its instructions, so the block
    (AGENTS.md) and cli-org's tools come back with the summary. (The session-start block
    after a compaction is the next test's.)"""
    summary = "Summary: asked the org how deploys run."

    def script(body: dict[str, Any]) -> list[api.Item]:
        if kind(body) == "compaction":
            return [api.text(summary)]
        if summary in api.said(body):
            return [api.text("Done.")]
        return [api.call("org_recall", {"question": QUESTION}, NAMESPACE)]

    def tokens(body: dict[str, Any]) -> int:  # the recall's turn fills the context
        return 5000 if kind(body) == "turn" and summary not in api.said(body) else 100

    with codex_session(tmp_path, org.env, script, tokens=tokens) as h:
        h.cli_org("setup", "codex", "--agent", "bot")
        h.exec("What do we know about deploys?", "-c", "model_auto_compact_token_limit=2000")
        block = (h.home / ".codex" / "AGENTS.md").read_text().strip()
    kinds = [kind(body) for body in h.requests()]
    assert "compaction" in kinds, kinds
    after = h.requests()[kinds.index("compaction") + 1]
    assert summary in api.said(after) and block in api.said(after)
    assert {f"{NAMESPACE}/{t}" for t in TOOLS} <= set(api.tools(after)), sorted(api.tools(after))


# --- the session start: the SessionStart hook gives the block (issue 37) ------------------------

PINNED = "Release builds are signed on the build host, never on a laptop"
SUMMARY = "Summary: asked the org how deploys run."


def pinned_fact(org: Any) -> int:
    """A fact of another agent's, pinned org-wide: every agent's block starts with it."""
    other = org.writer("other")
    fact = facts.remember(other, "release", PINNED, source="docs/release.md", embedder=query_model(org))
    pins.pin(other, fact.id)
    return fact.id


def compacting(body: dict[str, Any]) -> list[api.Item]:
    """A recall, whose reply fills the context (compacting_tokens); the summary; then done."""
    if kind(body) == "compaction":
        return [api.text(SUMMARY)]
    if SUMMARY in api.said(body):
        return [api.text("Done.")]
    return [api.call("org_recall", {"question": QUESTION}, NAMESPACE)]


def compacting_tokens(body: dict[str, Any]) -> int:
    return 5000 if kind(body) == "turn" and SUMMARY not in api.said(body) else 100


def messages(body: dict[str, Any]) -> list[str]:
    """The text of each input message of a request, in order."""
    return ["".join(p.get("text", "") for p in item.get("content") or []) for item in body.get("input") or []]


# What the terminal answers when Codex's interface asks for its colours, the cursor or its
# attributes (it waits for the answers before it draws).
TERMINAL_ANSWERS = {
    b"]10;?": b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\",
    b"]11;?": b"\x1b]11;rgb:0000/0000/0000\x1b\\",
    b"[6n": b"\x1b[1;1R",
    b"[c": b"\x1b[?62;c",
}
SCREEN = re.compile(rb"\x1b\[[0-9;?>]*[a-zA-Z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()=>][A-Z0-9]?")


def trust_in_codex(h: Harness) -> str:
    """Start `codex` (its terminal interface) in the project as a user does, choose "Trust all
    and continue" in its hooks review, and quit; returns the review's screen text."""
    import fcntl
    import pty
    import select
    import signal
    import struct
    import termios
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: codex in a terminal of 40 x 120
        os.chdir(h.project)
        os.execve(str(h.program), [str(h.program), "--strict-config"], {**h.env, "TERM": "xterm-256color"})
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    screen = b""

    def read_until(done: Callable[[], bool]) -> None:
        nonlocal screen
        deadline = time.monotonic() + RUN_SECONDS  # a guard against a hang, not a measurement
        while not done() and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                chunk = os.read(fd, 65536)
                screen += chunk
                for asked, answer in TERMINAL_ANSWERS.items():
                    if asked in chunk:
                        os.write(fd, answer)

    config = h.home / ".codex" / "config.toml"
    try:
        read_until(lambda: b"Continuewithouttrusting" in SCREEN.sub(b"", screen).replace(b" ", b""))
        review = SCREEN.sub(b"", screen).decode(errors="replace")
        for key in (b"\x1b[B", b"\r"):  # down to "2. Trust all and continue", enter
            time.sleep(0.5)  # one key at a time, as typed (two in one read are not read as keys)
            os.write(fd, key)
        read_until(lambda: "trusted_hash" in config.read_text())
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return review


def test_the_session_start_hook_puts_a_pinned_fact_in_the_first_request_and_after_compaction(org, tmp_path):
    """`cli-org setup codex` writes Codex's SessionStart hook beside the Stop hook. Until the
    user trusts them, `codex exec` skips them: the first request holds no block. The user starts
    `codex` once and chooses "Trust all and continue" in its hooks review; from then on the
    hook's block, a pinned fact's claim in it, is in the model's first request of `codex exec`
    (a developer message), and Codex runs it again after its compaction (source compact), so
    the request after the summary holds the block again, after the summary."""
    pinned_fact(org)
    with codex_session(tmp_path, org.env, compacting, tokens=compacting_tokens) as h:
        h.cli_org("setup", "codex", "--agent", "bot")
        hooks = json.loads((h.home / ".codex" / "hooks.json").read_text())
        assert "hook codex session-start --as bot" in hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        compact = ("-c", "model_auto_compact_token_limit=2000")
        h.exec("What do we know about deploys?", *compact)
        untrusted = h.requests()
        review = trust_in_codex(h)
        h.exec("What do we know about deploys?", *compact)
        trusted = h.requests()[len(untrusted) :]
        state = tomllib.loads((h.home / ".codex" / "config.toml").read_text())["hooks"]["state"]
    assert "Hooks need review" in review and "2 hooks are new or changed" in review, review
    assert sorted(key.split(":")[-3] for key in state) == ["session_start", "stop"], state
    assert untrusted and not any(PINNED in api.said(body) for body in untrusted)
    first = trusted[0]
    assert (
        kind(first) == "turn"
        and PINNED in api.said(first)
        and "== Org context for bot, project project ==" in api.said(first)
    )
    kinds = [kind(body) for body in trusted]
    assert "compaction" in kinds, kinds
    after = messages(trusted[kinds.index("compaction") + 1])
    summary = next(n for n, text in enumerate(after) if SUMMARY in text)
    again = [n for n, text in enumerate(after) if PINNED in text]
    assert again and again[-1] > summary, after  # delivered again after the summary, not only kept


# --- the end of a turn: the Stop hook asks for a lesson (issue 35) ---------------------------

CORRECTION = "No, in this repo we always use pnpm, never npm."
ASKS = "cli-org: this turn may hold"  # how the Stop hook's reason begins (session/hooks.py)


def test_the_stop_hook_asks_for_a_correction_once(org, tmp_path):
    """`cli-org setup codex` writes Codex's Stop hook into CODEX_HOME/hooks.json. Codex runs a
    hook only once the user trusts it (its hooks review in `codex`); `codex exec` is told so
    here with --dangerously-bypass-hook-trust. After plain work nothing is asked; after a
    correction the hook's reason is Codex's next prompt to the model, once."""

    def script(body: dict[str, Any]) -> list[api.Item]:
        words = api.said(body)
        if ASKS in words:
            return [api.text("It is lasting; I would save it with org_remember.")]
        if CORRECTION in words:
            return [api.text("Understood: pnpm install it is.")]
        return [api.text("Running npm install now.")]

    with codex_session(tmp_path, org.env, script) as h:
        h.cli_org("setup", "codex", "--agent", "bot")
        hooks = json.loads((h.home / ".codex" / "hooks.json").read_text())
        assert "hook codex stop --as bot" in hooks["hooks"]["Stop"][0]["hooks"][0]["command"]
        # A hook the user has not trusted yet does not run: nothing is asked.
        h.exec(CORRECTION)
        untrusted = h.requests()
        assert untrusted and not any(ASKS in api.said(body) for body in untrusted)
        h.exec("install the dependencies", "--dangerously-bypass-hook-trust")
        plain = h.requests()[len(untrusted) :]
        assert plain and not any(ASKS in api.said(body) for body in plain)
        h.codex(
            "exec",
            "--skip-git-repo-check",
            "--strict-config",
            "--dangerously-bypass-hook-trust",
            "resume",
            "--last",
            CORRECTION,
        )
        later = h.requests()[len(untrusted) + len(plain) :]
    asked = [body for body in later if ASKS in api.said(body)]
    assert asked, "no request after the Stop hook carried its reason"
    assert "always use pnpm, never npm" in api.said(asked[0]) and "org_remember" in api.said(asked[0])
    # The stop after the model's answer (stop_hook_active) asked nothing more.
    assert api.said(later[-1]).count(ASKS) == 1
