"""A whole Hermes Agent session (the real client, tests/clients.py) against the stand-in model
API speaking OpenAI's chat completions (tests/standin_chat.py), on a real cli-org database.

As a user would: `cli-org setup hermes --agent bot` in a home folder of the test's own, then
`hermes -z PROMPT` (its one-shot mode) in a project folder, the model scripted to call
org_recall and then org_forget on another agent's fact. What is asserted is what Hermes put in
front of the model: its own identity and cli-org's instructions in the system prompt,
cli-org's tools in the first request, the recall's result as the CLI's text, the refusal as
the CLI's one line. One session serves the module's tests.

Hermes 0.19 has no hook that adds context at a session's start (its `on_session_start`
shell hook cannot add any); its `pre_llm_call` shell hook runs before each turn and adds
what it prints to the turn's user message. Setup wires it to `cli-org hook hermes
session-start`: the context block (a pinned fact's claim in it) on the first turn. Hermes runs
a shell hook only once the user allows it (a question in a terminal, or `--accept-hooks`
once): the session here passes --accept-hooks, and a test of its own shows the hook skipped
before that and kept after it. cli-org's instructions live in its system prompt, which its
compaction keeps (context_compressor.py summarises the middle of the conversation only). The
session is made to compact: one turn carries a long text and a later one reports a prompt as
large as the model's window, and the request after the summary must still carry Hermes's
identity, cli-org's instructions and the block.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli_org.store.facts import remember
from tests.clients import client, query_model
from tests.standin import standing
from tests.standin_chat import CONTEXT_LENGTH, MODEL, Call, Chat, Step, Turn

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.xdist_group("clients")]

WORKTREE = Path(__file__).resolve().parents[1]
HERMES = "hermes-0.19.0"
SERVER = "cli-org"
PREFIX = "mcp__cli_org__"  # Hermes names an MCP tool mcp__<server, non-word characters as _>__<tool>
# Hermes's own identity (agent/prompt_builder.py DEFAULT_AGENT_IDENTITY), its first sentence.
IDENTITY = "You are Hermes Agent, an intelligent AI assistant created by Nous Research."
ANSWER = "Deploys go through scripts/deploy.sh."
PINNED = "Release builds are signed on the build host, never on a laptop"
BLOCK = "== Org context for bot, project web =="  # the block's first line (session/context.py)
RUN_SECONDS = 180  # a guard against a hang, not a measurement


@dataclass
class Home:
    """A user's machine for one test: a home folder, a project, `cli-org` on PATH."""

    project: Path
    env: dict[str, str]

    def run(
        self, *command: str, env: dict[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command,
            cwd=self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def cli(self, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
        """`cli-org ARGS` as the user types it (ORG_AGENT picks who, as in a shell)."""
        return self.run("cli-org", *args, env={"ORG_AGENT": agent} if agent else None)

    def hermes(self, *args: str, base_url: str = "") -> subprocess.CompletedProcess[str]:
        """`hermes ARGS` in the project; with base_url, on the stand-in: Hermes's "custom"
        provider is any OpenAI-compatible base URL (hermes_cli/runtime_provider.py reads
        CUSTOM_BASE_URL; a local one needs no key)."""
        endpoint = {"HERMES_INFERENCE_PROVIDER": "custom", "CUSTOM_BASE_URL": base_url + "/v1"} if base_url else {}
        return self.run(str(client(HERMES)), *args, env=endpoint, timeout=RUN_SECONDS)


def user_home(root: Path, org_env: dict[str, str]) -> Home:
    """HOME, HERMES_HOME and XDG_* inside `root`; PATH with this checkout's `cli-org` first (a
    script that runs it: setup writes that path into Hermes's config, and Hermes passes the
    server no PYTHONPATH); the database's settings, as a user's shell would have them."""
    home, project, tools = root / "home", root / "web", root / "bin"
    for folder in (home, project / ".git", tools):
        folder.mkdir(parents=True)
    program = tools / "cli-org"
    program.write_text(f'#!/bin/sh\nPYTHONPATH={WORKTREE} exec {sys.executable} -m cli_org "$@"\n')
    program.chmod(0o755)
    keep = {k: os.environ[k] for k in ("LANG", "TMPDIR") if k in os.environ}
    env = {
        **keep,
        **org_env,
        "PATH": os.pathsep.join([str(tools), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "HERMES_HOME": str(home / ".hermes"),
        **{f"XDG_{k}_HOME": str(home / f".{k.lower()}") for k in ("CONFIG", "CACHE", "DATA", "STATE")},
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return Home(project, env)


@dataclass
class Session:
    """One `hermes -z` run on the stand-in playing a script."""

    chat: Chat
    answer: str
    started: float  # time.monotonic() when hermes was started
    seconds: float  # the whole run, start to exit

    def system_prompt(self, turn: int = 0) -> str:
        messages = self.chat.first(turn).request.body["messages"]
        return "\n".join(m["content"] for m in messages if m["role"] == "system")

    def tools(self, turn: int = 0) -> list[str]:
        return [t["function"]["name"] for t in self.chat.first(turn).request.body.get("tools") or []]

    def results(self) -> dict[str, str]:
        """What Hermes handed the model for each tool call: the tool message's content, by
        the id of the call it answers, as first sent (a compaction may summarise it later)."""
        found: dict[str, str] = {}
        for exchange in self.chat.turns():
            for m in exchange.request.body["messages"]:
                if m["role"] == "tool":
                    found.setdefault(m["tool_call_id"], m["content"])
        return found


def run_session(home: Home, script: list[Turn], prompt: str, *flags: str) -> Session:
    chat = Chat(script)
    with standing(chat) as standin:
        started = time.monotonic()
        done = home.hermes(*flags, "-z", prompt, "-m", MODEL, base_url=standin.url)
        seconds = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return Session(chat, done.stdout, started, seconds)


def payload(content: str) -> Any:
    """What cli-org's server gave Hermes for one call, out of the envelope Hermes wraps an MCP
    tool's result in (agent/tool_dispatch_helpers.py _maybe_wrap_untrusted: a tag, a header
    paragraph and a blank line before it, the closing tag after)."""
    if content.startswith("<untrusted_tool_result"):
        content = content.split("\n\n", 1)[1].removesuffix("\n</untrusted_tool_result>")
    return json.loads(content)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The CLI's refusal: exit 1, one line on stderr after `cli-org: `."""
    assert done.returncode == 1 and done.stderr.startswith("cli-org: "), done.stderr
    return done.stderr.removeprefix("cli-org: ").rstrip("\n")


def pinned_fact(org: Any) -> None:
    """A fact of another agent's, pinned org-wide: every agent's block starts with it."""
    from cli_org.store.pins import pin

    other = org.writer("other")
    pin(other, remember(other, "release", PINNED, source="docs/release.md", embedder=query_model(org)).id)


def user_text(chat: Chat, turn: int) -> str:
    """The text of the user messages of a turn's first request."""
    messages = chat.first(turn).request.body["messages"]
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "user")


@dataclass
class Ran:
    home: Home
    setup: subprocess.CompletedProcess[str]
    listed: subprocess.CompletedProcess[str]
    tested: subprocess.CompletedProcess[str]
    session: Session
    mine: int  # bot's fact
    theirs: int  # other's fact, which bot may not retire
    question: str
    why: str
    retired: bool  # whether `theirs` was retired after the session


@pytest.fixture(scope="module")
def ran(server, template, tmp_path_factory) -> Iterator[Ran]:
    from tests.databases import fresh_database, with_team  # here: benchmarks/client_hermes.py imports this module

    client(HERMES)  # installed (once) before anything is timed
    with fresh_database(server, template) as blank:
        org = with_team(blank)
        mine = remember(
            org.writer("bot"),
            "deploy",
            "Deploys go through scripts/deploy.sh",
            source="docs/deploy.md",
            embedder=query_model(org),
        )
        theirs = remember(
            org.writer("other"),
            "cache",
            "The cache TTL is 60 seconds",
            source="config/cache.yml",
            embedder=query_model(org),
        )
        pinned_fact(org)
        home = user_home(tmp_path_factory.mktemp("hermes"), org.env)
        setup = home.cli("setup", "hermes", "--agent", "bot")
        assert setup.returncode == 0, setup.stderr
        listed = home.hermes("mcp", "list")
        tested = home.hermes("mcp", "test", SERVER)
        question, why = "how do we deploy", "I think it is wrong"
        facts = [Call(PREFIX + "org_facts", {"subject": s}) for s in ("deploy", "cache", "ci")]
        script: list[Turn] = [
            [Call(PREFIX + "org_recall", {"question": question})],
            [Call(PREFIX + "org_forget", {"id": theirs.id, "why": why})],
            # Compaction needs a middle to summarise (more than its head and 3 tail messages,
            # longer than the tail's token budget) and a prompt over its threshold.
            Step(text="Let me read the facts. " * 5000, calls=facts[:1]),
            facts[1:2],
            Step(calls=facts[2:], prompt_tokens=CONTEXT_LENGTH),
            ANSWER,
        ]
        session = run_session(home, script, "How do we deploy?", "--accept-hooks")
        with org.admin() as conn:
            row = conn.execute("SELECT valid_to FROM memory_facts WHERE id = %s", (theirs.id,)).fetchone()
        yield Ran(home, setup, listed, tested, session, mine.id, theirs.id, question, why, row["valid_to"] is not None)


def test_hermes_lists_cli_org_and_connects_to_it_after_setup(ran):
    assert ran.listed.returncode == 0, ran.listed.stderr
    line = next((s for s in ran.listed.stdout.splitlines() if s.strip().startswith(SERVER + " ")), "")
    assert "enabled" in line, ran.listed.stdout
    assert ran.tested.returncode == 0, ran.tested.stderr
    from cli_org.org.registry import MCP

    tools = f"Tools discovered: {len(MCP)}"  # every tool the server lists
    assert "Connected (" in ran.tested.stdout and tools in ran.tested.stdout, ran.tested.stdout


def test_the_session_ran_the_script_to_its_end(ran):
    assert ran.session.answer.strip() == ANSWER
    assert [e.turn for e in ran.session.chat.turns()] == [0, 1, 2, 3, 4, 5]


def test_system_prompt_keeps_hermes_identity_and_adds_cli_org_instructions(ran):
    prompt = ran.session.system_prompt(0)
    assert "## Org memory (cli-org)" in prompt and "the server knows which" in prompt
    assert IDENTITY in prompt  # cli-org's block added to Hermes's prompt, not in place of it


def test_after_compaction_the_prompt_still_holds_identity_and_instructions(ran):
    chat = ran.session.chat
    before, after = chat.first(4), chat.first(5)
    asked = [e for e in chat.exchanges if e.turn is None and before.arrived < e.arrived < after.arrived]
    assert asked, "Hermes asked for no summary between the full prompt and the next request"
    # The middle (the forget and its refusal) is summarised: a user message in its place.
    roles = [[m["role"] for m in e.request.body["messages"]] for e in (before, after)]
    assert "call_1_0" in json.dumps(before.request.body) and "call_1_0" not in json.dumps(after.request.body)
    assert roles[1].count("user") == roles[0].count("user") + 1
    assert ran.session.system_prompt(5) == ran.session.system_prompt(0)


def test_cli_org_tools_are_in_the_first_request(ran):
    from cli_org.org.registry import MCP

    first = set(ran.session.tools(0))
    assert {PREFIX + name for name in MCP} <= first
    # The server offers no prompts, so Hermes adds no prompt tools for it (issue 37); its
    # resources hold something, and Hermes offers them as two tools of its own.
    ours = {name.removeprefix(PREFIX) for name in first if name.startswith(PREFIX)}
    assert ours == set(MCP) | {"list_resources", "read_resource"}, sorted(ours - set(MCP))


def test_recall_reaches_the_model_as_the_cli_text(ran):
    recall = ran.home.cli("recall", ran.question, agent="bot")
    assert recall.returncode == 0 and f"[fact #{ran.mine}]" in recall.stdout, recall.stderr
    assert payload(ran.session.results()["call_0_0"]) == {"result": recall.stdout.rstrip("\n")}


def test_refused_forget_reaches_the_model_as_the_cli_line(ran):
    line = one_line(ran.home.cli("forget", str(ran.theirs), ran.why, agent="bot"))
    assert "\n" not in line
    assert payload(ran.session.results()["call_1_0"]) == {"error": line}
    assert not ran.retired


def test_every_tool_runs_unasked_with_the_model_set_in_hermes_config(org, tmp_path):
    """Hermes 0.19 asks before no MCP tool (its approvals cover shell commands): after setup,
    recall, remember and a forget of bot's own fact all run, and only cli-org's rights stand
    in the way of a forget (the session above: another agent's fact is refused). The model is
    set the way docs/agents.md tells a user, with `hermes config set` (provider, model, base
    URL) and no environment: a local endpoint needs no key."""
    mine = remember(org.writer("bot"), "deploy", ANSWER, source="docs/deploy.md", embedder=query_model(org))
    home = user_home(tmp_path, org.env)
    assert home.cli("setup", "hermes", "--agent", "bot").returncode == 0
    claim = {"subject": "release", "claim": "Releases are tagged from main by the release job", "source": "ci.yml"}
    script: list[Turn] = [
        [Call(PREFIX + "org_recall", {"question": "how do we deploy"})],
        [Call(PREFIX + "org_remember", claim)],
        [Call(PREFIX + "org_forget", {"id": mine.id, "why": "moved to the release job"})],
        "Done.",
    ]
    chat = Chat(script)
    with standing(chat) as standin:
        for key, value in (
            ("model.provider", "custom"),
            ("model.default", MODEL),
            ("model.base_url", standin.url + "/v1"),
        ):
            done = home.hermes("config", "set", key, value)
            assert done.returncode == 0, done.stderr
        done = home.hermes("-z", "How do we deploy?")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    found = Session(chat, done.stdout, 0.0, 0.0).results()
    recalled, remembered, forgot = (payload(found[f"call_{n}_0"]) for n in range(3))
    assert f"[fact #{mine.id}]" in recalled["result"]
    with org.admin() as conn:
        new = conn.execute("SELECT id FROM memory_facts WHERE subject = 'release'").fetchone()
        gone = conn.execute(
            "SELECT valid_to IS NOT NULL AS gone FROM memory_facts WHERE id = %s", (mine.id,)
        ).fetchone()
    assert remembered == {"result": str(new["id"])} and "error" not in forgot, forgot
    assert gone["gone"]


def test_the_first_request_holds_the_block_with_a_pinned_fact(ran):
    first = user_text(ran.session.chat, 0)
    assert BLOCK in first and PINNED in first and "How do we deploy?" in first
    assert BLOCK not in ran.session.system_prompt(0)  # in the turn's user message, as Hermes puts it


def test_after_compaction_the_request_holds_the_block_again(ran):
    chat = ran.session.chat
    assert any(e.turn is None for e in chat.exchanges), "no compaction happened"
    after = user_text(chat, 5)  # the request after the summary (the compaction test above)
    assert PINNED in after and after.count(BLOCK) == 1


def test_the_hook_runs_once_the_user_allows_it_and_from_then_on(server, template, tmp_path):
    """Until the user allows the hook (a terminal's question, or --accept-hooks), Hermes skips
    it: no block. Allowed once, it runs in every later session, and setup --remove takes it out."""
    from tests.databases import fresh_database, with_team

    with fresh_database(server, template) as blank:
        org = with_team(blank)
        pinned_fact(org)
        home = user_home(tmp_path, org.env)
        assert home.cli("setup", "hermes", "--agent", "bot").returncode == 0
        untrusted = run_session(home, [ANSWER], "hello")
        allowed = run_session(home, [ANSWER], "hello", "--accept-hooks")
        later = run_session(home, [ANSWER], "hello")
        assert home.cli("setup", "hermes", "--remove").returncode == 0
        removed = run_session(home, [ANSWER], "hello")
    assert PINNED not in user_text(untrusted.chat, 0)
    assert PINNED in user_text(allowed.chat, 0) and PINNED in user_text(later.chat, 0)
    assert PINNED not in user_text(removed.chat, 0)


def test_a_later_turn_replays_the_block_once_and_adds_nothing(server, template, tmp_path):
    """A session of two turns (`hermes chat -q`, then `--continue`): the hook gives the block on
    the first turn; on the second, the conversation Hermes hands it still holds the block (the
    first turn's user message, as sent), so it adds nothing, and the request holds it once."""
    from tests.databases import fresh_database, with_team

    with fresh_database(server, template) as blank:
        org = with_team(blank)
        pinned_fact(org)
        home = user_home(tmp_path, org.env)
        assert home.cli("setup", "hermes", "--agent", "bot").returncode == 0
        chat = Chat([ANSWER, ANSWER])
        with standing(chat) as standin:
            for key, value in (("model.provider", "custom"), ("model.base_url", standin.url + "/v1")):
                assert home.hermes("config", "set", key, value).returncode == 0
            for prompt, flag in (("first question", "--accept-hooks"), ("second question", "--continue")):
                done = home.hermes("chat", "-q", prompt, flag, "-m", MODEL)
                assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    first, second = user_text(chat, 0), user_text(chat, 1)
    assert PINNED in first and BLOCK in first
    assert second.count(BLOCK) == 1 and second.startswith(first) and second.endswith("second question"), second
