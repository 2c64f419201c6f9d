"""A whole Claude Code session with cli-org, for each version the project supports, against
the stand-in model API (tests/standin_anthropic.py): set up as a user types it, start
`claude -p` in the project, and assert on what Claude Code put in front of the model: the
context block from the SessionStart hook, cli-org's tools in the first request, a recall
that reaches the model as the CLI's text, a refused forget as one line, and the context
block again after `/compact`.

How Claude Code is started so that it talks only to the stand-in (`User.claude`): a home of
its own (HOME; CLAUDE_CONFIG_DIR left unset so it reads HOME/.claude as a user's does),
ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,
DISABLE_TELEMETRY and DISABLE_AUTOUPDATER; nothing of the caller's environment but PATH.
In `-p` mode an MCP tool runs only when allowed: setup allows the tools that only read or add
(org/registry.py, UNASKED_TOOLS); a test that needs `org_forget` allows it by name, as a user
would (`--allowedTools mcp__cli-org__org_forget`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli_org.org.registry import MCP as TOOLS
from cli_org.store import facts
from tests.clients import client, query_model, trust_folder
from tests.standin import StandIn, standing
from tests.standin_anthropic import (
    Block,
    Scripted,
    block_text,
    contents,
    messages,
    prompt_text,
    text,
    tool_names,
    tool_results,
    tool_use,
)

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.xdist_group("clients")]

WORKTREE = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
VERSIONS = ("claude-code-2.1.197", "claude-code-2.1.332")
SERVER = "cli-org"
ALLOW = f"mcp__{SERVER}__org_forget"  # what a user allows by name for a headless run: setup leaves it out
QUESTION = "when do deploys run?"
MINE = "Deploys run at night from the release branch"  # bot's fact
THEIRS = "The payments e2e test is flaky on Fridays"  # other's fact, which bot may not retire
SUMMARY = "Summary: the user asked when deploys run; the org memory answered."


def tool(name: str) -> str:
    """The name Claude Code gives a cli-org tool."""
    return f"mcp__{SERVER}__{name}"


@dataclass
class User:
    """A user's machine for Claude Code: a home of its own, a project folder (a git
    checkout), the environment Claude Code and cli-org run in."""

    claude_path: Path
    home: Path
    project: Path
    env: dict[str, str]

    @classmethod
    def make(cls, version: str, org_env: Mapping[str, str], folder: Path) -> User:
        home, project = folder / "home", folder / "web"
        (project / ".git").mkdir(parents=True)
        home.mkdir()
        env = {
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(home),
            "PYTHONPATH": str(WORKTREE),  # the checkout's cli_org for `cli-org` and its children
            "LANG": "C.UTF-8",
            "ANTHROPIC_API_KEY": "sk-ant-stand-in",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLI_ORG_WARM": "0",
            **{k: os.environ[k] for k in ("CLI_ORG_CHECK_CONNECTIONS",) if k in os.environ},
            **org_env,
        }
        return cls(client(version), home, project, env)

    def claude(self, *args: str, url: str = "http://127.0.0.1:9") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.claude_path), *args],
            cwd=self.project,
            env={**self.env, "ANTHROPIC_BASE_URL": url},
            capture_output=True,
            text=True,
            timeout=180,  # a guard against a hang, not a measurement
        )

    def prompt(self, standin: StandIn, words: str, *more: str) -> dict[str, Any]:
        """`claude -p WORDS --output-format json ...`: its result object."""
        done = self.claude("-p", words, "--output-format", "json", *more, url=standin.url)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)

    def cli_org(self, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **({"ORG_AGENT": agent} if agent else {})}
        return subprocess.run(
            [str(BIN / "cli-org"), *args], cwd=self.project, env=env, capture_output=True, text=True, timeout=120
        )

    def set_up(self, agent: str) -> subprocess.CompletedProcess[str]:
        """What the user types: `cli-org setup claude-code --project-dir P --agent A`."""
        return self.cli_org("setup", "claude-code", "--project-dir", str(self.project), "--agent", agent)


def main_requests(standin: StandIn, since: int = 0) -> list[Any]:
    """The bodies of the agent loop's requests (the ones that offer tools), in order."""
    return [r.body for r in standin.kept("/v1/messages")[since:] if r.method == "POST" and tool_names(r.body)]


def said_last(body: Any) -> Block:
    """The last block the user's side said: a tool result or a text that is not a system
    reminder Claude Code adds."""
    said = [
        b
        for m in messages(body)
        if m.get("role") == "user"
        for b in contents(m)
        if not block_text(b).startswith("<system-reminder>")
    ]
    return said[-1] if said else {}


def plan(steps: dict[str, Block], first: Block, words: str) -> Callable[[Any], list[Block]]:
    """A script: the prompt `words` is answered with `first`; the result of each tool_use
    id in `steps` with the block there; anything else (a compaction, another prompt) with
    SUMMARY, which a compaction keeps as its summary."""

    def script(body: Any) -> list[Block]:
        last = said_last(body)
        if last.get("type") == "tool_result":
            return [steps.get(last.get("tool_use_id", ""), text("done"))]
        return [first if words in block_text(last) else text(f"<summary>{SUMMARY}</summary>")]

    return script


def two_agents_facts(org) -> int:
    """bot's fact and other's (MINE, THEIRS); the id of other's."""
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", MINE, source="docs/deploy.md", embedder=query_model(org))
    with org.as_agent("other") as conn:
        return facts.remember(conn, "payments", THEIRS, source="ci/log.txt", embedder=query_model(org)).id


@pytest.mark.parametrize("version", VERSIONS)
def test_a_whole_session(version, org, tmp_path):
    theirs = two_agents_facts(org)
    forget = tool_use(tool("org_forget"), {"id": theirs, "why": "it passed every Friday this month"}, "toolu_forget")
    recall = tool_use(tool("org_recall"), {"question": QUESTION}, "toolu_recall")
    model = Scripted(plan({"toolu_recall": forget, "toolu_forget": text("done")}, recall, QUESTION))
    user = User.make(version, org.env, tmp_path)
    with standing(model) as standin:
        # 1. Set up as the user types it; Claude Code then lists the server as connected.
        done = user.set_up("bot")
        assert done.returncode == 0, done.stderr
        trust_folder(user.home, user.project)  # the user accepts Claude Code's first question there
        listed = user.claude("mcp", "list")
        line = next(line for line in listed.stdout.splitlines() if line.startswith(f"{SERVER}:"))
        assert "Connected" in line, listed.stdout  # not "Pending approval" (setup approves it)

        # 2. A session in the project: the context block and the tools on the first request.
        result = user.prompt(standin, QUESTION, "--allowedTools", ALLOW)
        first, *_, last = main_requests(standin)
        assert MINE in prompt_text(first) and THEIRS in prompt_text(first)
        assert {tool(name) for name in TOOLS} <= set(tool_names(first))

        # The recall reaches the model as the CLI's text; the refused forget as its one line.
        answer = tool_results(last)
        cli = user.cli_org("recall", QUESTION, agent="bot")
        assert cli.returncode == 0, cli.stderr
        assert not answer["toolu_recall"].get("is_error")
        assert block_text(answer["toolu_recall"]) == cli.stdout.strip()
        refused = user.cli_org("forget", str(theirs), "it passed", agent="bot")
        assert refused.returncode == 1 and refused.stderr.startswith("cli-org: ")
        assert answer["toolu_forget"].get("is_error") and "\n" not in block_text(answer["toolu_forget"])
        assert block_text(answer["toolu_forget"]) == refused.stderr.removeprefix("cli-org: ").strip()

        # 3. `/compact`, then the next prompt: the block is there again after the summary.
        compacting = tmp_path / "compact.log"
        user.prompt(standin, "/compact", "--resume", result["session_id"], "--debug-file", str(compacting))
        before = len(standin.kept("/v1/messages"))
        user.prompt(standin, "and the payments test?", "--resume", result["session_id"])
        after = prompt_text(main_requests(standin, before)[0])
        assert SUMMARY in after, "no compaction happened"
        assert MINE in after.split(SUMMARY, 1)[1]
        # ...and it was the SessionStart with source compact that gave it (Claude Code's log).
        delivered = [line for line in compacting.read_text().splitlines() if "Hook SessionStart:compact" in line]
        assert delivered and MINE in delivered[0], "the SessionStart hook after compaction gave nothing"


# --- the end of a turn: the Stop hook asks for a lesson (issue 35) ---------------------------

INSTALL = "install the dependencies"
CORRECTION = "No, in this repo we always use pnpm, never npm."
ASKS = "cli-org: this turn may hold"  # how the Stop hook's reason begins (session/hooks.py)
LESSON = "In this repo we always use pnpm, never npm."


def last_user_text(body: Any) -> str:
    """Everything the last user-side message says, system reminders included (Claude Code
    may hand a hook's words to the model as one)."""
    said = [m for m in messages(body) if m.get("role") == "user"]
    return "\n".join(block_text(b) for b in contents(said[-1])) if said else ""


def lesson_script(body: Any) -> list[Block]:
    """The person asks for an install, then corrects the agent; each reply ends the turn. Asked
    by the Stop hook, the model saves the lesson with org_remember, then ends its turn."""
    last = said_last(body)
    if last.get("type") == "tool_result":
        return [text("Saved it for the team.")]
    words = last_user_text(body)
    if ASKS in words:
        arguments = {"subject": "package manager", "claim": LESSON, "source": "#session", "kind": "rule"}
        return [tool_use(tool("org_remember"), arguments, "toolu_remember")]
    if CORRECTION in words:
        return [text("Understood: pnpm install it is.")]
    return [text("Running npm install now.")]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_stop_hook_asks_for_a_correction_and_the_agent_saves_it(version, org, tmp_path):
    user = User.make(version, org.env, tmp_path)
    with standing(Scripted(lesson_script)) as standin:
        done = user.set_up("bot")
        assert done.returncode == 0, done.stderr
        trust_folder(user.home, user.project)

        # Plain work: the turn ends and nothing is asked.
        first = user.prompt(standin, INSTALL)
        plain = main_requests(standin)
        assert plain and not any(ASKS in prompt_text(body) for body in plain)

        # The person corrects the agent; the model's reply ends the turn; Claude Code runs the
        # Stop hook and, told to go on, sends the model a request that holds the hook's reason.
        before = len(standin.kept("/v1/messages"))
        debug = tmp_path / "stop.log"
        user.prompt(standin, CORRECTION, "--resume", first["session_id"], "--debug-file", str(debug))
        later = main_requests(standin, before)
        asked = [body for body in later if ASKS in last_user_text(body)]
        assert asked, "no request after the Stop hook carried its reason"
        reason = last_user_text(asked[0])
        assert "always use pnpm, never npm" in reason and "org_remember" in reason
        assert "Stop" in debug.read_text()  # Claude Code's log names the hook it ran
        # The model saved it; the stop after that (stop_hook_active) asked nothing more.
        answer = tool_results(later[-1])
        assert not answer["toolu_remember"].get("is_error"), block_text(answer["toolu_remember"])
        assert sum(ASKS in last_user_text(body) for body in later) == 1
    with org.as_agent("bot") as conn:
        saved = conn.execute("SELECT author, claim FROM memory_facts WHERE valid_to IS NULL").fetchall()
        conn.commit()
    assert [(r["author"], r["claim"]) for r in saved] == [("bot", LESSON)]


# --- permissions: reads and remember run unasked, forget is the person's (issue 37) ---------

REMEMBERED = "Release notes are drafted by the builder of the week"


def permission_script(mine: int) -> Callable[[Any], list[Block]]:
    """The model recalls, then remembers, then tries to forget bot's own fact (which bot may
    retire: only the harness's policy stands in the way), then ends its turn."""
    steps = {
        "toolu_recall": tool_use(
            tool("org_remember"),
            {"subject": "releases", "claim": REMEMBERED, "source": "docs/release.md"},
            "toolu_remember",
        ),
        "toolu_remember": tool_use(tool("org_forget"), {"id": mine, "why": "moved to mornings"}, "toolu_forget"),
        "toolu_forget": text("done"),
    }
    return plan(steps, tool_use(tool("org_recall"), {"question": QUESTION}, "toolu_recall"), QUESTION)


@pytest.mark.parametrize("scope", ["project", "user"])
@pytest.mark.parametrize("version", VERSIONS)
def test_reads_and_remember_run_unasked_and_forget_is_left_to_the_person(version, scope, org, tmp_path):
    """After setup (no --allowedTools), `claude -p` runs org_recall and org_remember and
    refuses org_forget, in either scope; what the model receives is the tools' answers and
    Claude Code's own refusal. The same with forget allowed by name runs it."""
    with org.as_agent("bot") as conn:
        mine = facts.remember(conn, "deploys", MINE, source="docs/deploy.md", embedder=query_model(org)).id
    user = User.make(version, org.env, tmp_path)
    with standing(Scripted(permission_script(mine))) as standin:
        if scope == "project":
            done = user.set_up("bot")
            trust_folder(user.home, user.project)  # the user accepts Claude Code's first question there
        else:
            done = user.cli_org("setup", "claude-code", "--agent", "bot")
        assert done.returncode == 0, done.stderr
        user.prompt(standin, QUESTION)
        answer = tool_results(main_requests(standin)[-1])
        assert not answer["toolu_recall"].get("is_error"), block_text(answer["toolu_recall"])
        assert MINE in block_text(answer["toolu_recall"])
        assert not answer["toolu_remember"].get("is_error"), block_text(answer["toolu_remember"])
        refused = block_text(answer["toolu_forget"])
        assert answer["toolu_forget"].get("is_error")
        assert refused.startswith(f"Claude requested permissions to use {tool('org_forget')}"), refused
        with org.as_agent("bot") as conn:
            live = [
                r["claim"] for r in conn.execute("SELECT claim FROM memory_facts WHERE valid_to IS NULL ORDER BY id")
            ]
            conn.commit()
        assert live == [MINE, REMEMBERED]  # remembered, and not forgotten

        # The person allows forget by name for this run: it runs.
        before = len(standin.kept("/v1/messages"))
        user.prompt(standin, QUESTION, "--allowedTools", tool("org_forget"))
        answer = tool_results(main_requests(standin, before)[-1])
        assert not answer["toolu_forget"].get("is_error"), block_text(answer["toolu_forget"])
    with org.as_agent("bot") as conn:
        retired = conn.execute(
            "SELECT valid_to IS NOT NULL AS gone FROM memory_facts WHERE id = %s", (mine,)
        ).fetchone()
        conn.commit()
    assert retired["gone"]
