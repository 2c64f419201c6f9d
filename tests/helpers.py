"""Helpers shared by the test modules: no test module imports another (tests/test_layers.py
checks it), so what two of them use lives here (fixtures: tests/conftest.py, tests/web_site.py,
tests/browsing.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import click
from mcp import ClientSession, StdioServerParameters, stdio_client

from cli_org.evaluation import CaseResult, GoldenRun, figures, save_run
from cli_org.faces.cli import cli as group
from cli_org.faces.warm.server import status
from cli_org.session.hooks import HOOK_SECONDS

ROOT = Path(__file__).resolve().parents[1]


def params(org, agent: str | None, **extra: str) -> StdioServerParameters:
    env = {**org.env, "CLI_ORG_CHECK_CONNECTIONS": "1", "HF_HUB_OFFLINE": "1", **extra}
    env.pop("ORG_AGENT", None)
    args = ["-m", "cli_org", "mcp"] + (["--as", agent] if agent else [])
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))


@asynccontextmanager
async def connected(org, agent: str | None = "bot", **extra: str):
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params(org, agent, **extra), errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def text(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def serve(org, script, agent: str | None = "bot", **extra: str):
    """Run `script(session)` against a fresh server process; returns what it returns."""
    out = {}

    async def main():
        async with connected(org, agent, **extra) as session:
            out["value"] = await script(session)

    anyio.run(main)
    return out["value"]


def _transcript(root):
    """The constructed session as Claude Code writes it, plus a session that never recalls."""
    folder = root / "-w-billing"
    folder.mkdir(parents=True, exist_ok=True)
    use = lambda i, name, inp: [{"type": "tool_use", "id": i, "name": name, "input": inp}]  # noqa: E731
    result = lambda i, text: [{"type": "tool_result", "tool_use_id": i, "content": [{"type": "text", "text": text}]}]  # noqa: E731
    say = lambda text: [{"type": "text", "text": text}]  # noqa: E731
    lines = [
        _line(1, "user", f"{QUESTION}? Check the org memory first."),
        _line(2, "assistant", use("t1", "Bash", {"command": f'cli-org recall "{QUESTION}"'})),
        _line(3, "user", result("t1", FIRST_ANSWER)),
        _line(4, "assistant", say("Per fact #12 the switch does it; reading the runbook.")),
        _line(5, "assistant", use("t2", "Bash", {"command": "sed -n 1,40p vault/ops/billing-runbook.md"})),
        _line(6, "user", result("t2", "# Rollback\n...")),
        _line(7, "assistant", say("The staging DB gets wiped on Mondays, so not then.")),
        _line(8, "assistant", say("Remember: the deploy window is Friday night.")),
        _line(9, "assistant", use("t3", "mcp__cli-org__org_recall", {"question": "session cache expiry"})),
        _line(10, "user", result("t3", SECOND_ANSWER)),
        _line(11, "assistant", say("Noted: the session cache expires after ninety minutes.")),
        _line(12, "assistant", use("t4", "Bash", {"command": "cli-org recall 'never answered'"})),
        _line(13, "assistant", use("t5", "Bash", {"command": "cli-org remember cache 'x' --source a.md"})),
    ]
    (folder / "S1.jsonl").write_text("".join(lines))
    (folder / "S2.jsonl").write_text(_line(1, "user", "hello", "S2") + _line(2, "assistant", say("hi"), "S2"))


def _continuation(root):
    """S3, a continuation of S1 started after it, repeating S1's first recall call and its
    result (same call id), then naming fact #13, which S1 never names after the result."""
    folder = root / "-w-billing"
    folder.mkdir(parents=True, exist_ok=True)
    call = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f'cli-org recall "{QUESTION}"'}}]
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": FIRST_ANSWER}]}]
    lines = [
        _line(30, "user", "Carry on with the billing deploy.", "S3"),
        _line(31, "assistant", call, "S3"),
        _line(32, "user", result, "S3"),
        _line(33, "assistant", [{"type": "text", "text": "Going by fact #13."}], "S3"),
    ]
    (folder / "S3.jsonl").write_text("".join(lines))


def resolve(words, root=group):
    """The click command some words name, and the words left for its arguments; None when
    they name a group that does not run on its own."""
    command, rest = root, list(words)
    while isinstance(command, click.Group) and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    # A group that runs on its own (`facts`) is a command too.
    runs_alone = not isinstance(command, click.Group) or command.invoke_without_command
    return (command, rest) if runs_alone else None


def _run(positions, chars, questions=None, k=8) -> GoldenRun:
    questions = questions or [f"question {i}" for i in range(len(positions))]
    cases = [
        CaseResult(q, f"answer {i}", "fact", p, c, 10.0)
        for i, (q, p, c) in enumerate(zip(questions, positions, chars, strict=True))
    ]
    return GoldenRun(k, figures(cases), {}, cases)


def _save(org, agent: str | None, name: str, run: GoldenRun, golden_file: str = "eval/golden.test.txt") -> None:
    conn = org.as_agent(agent) if agent else org.admin()
    with conn:
        save_run(conn, name, run, golden_file=golden_file, project=None)


@contextmanager
def helper(env, idle="60"):
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli_org", "warm", "serve", "--idle", idle],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not status(env).running:
            assert proc.poll() is None, f"the helper exited: {proc.stderr.read() if proc.stderr else ''}"
            assert time.monotonic() < deadline, "the helper did not start in 60 s"
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr:
            proc.stderr.close()


def served(env) -> int:
    return status(env).requests or 0


def _hook(env, event, payload, *, cold_run=False):
    env = {**env, "CLI_ORG_WARM": "0"} if cold_run else env
    return subprocess.run(
        [sys.executable, "-m", "cli_org", "hook", "claude-code", event, "--as", "bot"],
        env=env,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


QUESTION = "How do we deploy billing? The deploy window is Friday night"


FIRST_ANSWER = "\n".join(
    [
        "[fact #12] billing deploy: Billing deploys go through the blue green switch at 02:00 UTC"
        " (docs/deploy.md; ops; 3 days ago)",
        "[vault] ops/billing-runbook.md # Rollback: Rollback needs the previous image tag from the release ledger",
        "[memory] .agents/org/memory/bot.md:4 Staging database resets every Monday morning before the standup",
        "[vault] notes/canary.md: The canary fleet keeps seven hosts warm across three zones",
        "[fact #13] deploy window: The deploy window is Friday night (wiki/deploys; ops; 1 day ago)",
    ]
)


SECOND_ANSWER = json.dumps(
    {
        "query": "cache",
        "hits": [
            {
                "arm": "vault",
                "path": "notes/canary.md",
                "heading": None,
                "snippet": "The canary fleet keeps seven hosts warm across three zones",
            },
            {
                "arm": "fact",
                "id": 15,
                "subject": "cache",
                "claim": "The session cache expires after ninety minutes of idle time",
            },
        ],
    }
)


def _line(n: int, kind: str, content, session: str = "S1") -> str:
    role = "assistant" if kind == "assistant" else "user"
    return (
        json.dumps(
            {
                "type": role,
                "sessionId": session,
                "uuid": f"{session}-u{n}",
                "timestamp": _iso(n),
                "cwd": "/w/billing",
                "message": {"role": role, "model": "m", "content": content},
            }
        )
        + "\n"
    )


def _iso(minutes: int) -> str:
    return (NOW - timedelta(hours=2) + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


NOW = datetime.now(UTC)


def free_port() -> int:
    """A TCP port on loopback that the OS picked as free just now (never a fixed one: the
    user's own `cli-org serve` may hold 8765)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def hook(
    org,
    event: str,
    stdin: str,
    *,
    agent: str = "bot",
    env: dict | None = None,
    cwd: Path | None = None,
    argv: list[str] | None = None,
):
    """`cli-org hook claude-code EVENT --as AGENT` (or `argv`) as the harness runs it."""
    base = {k: v for k, v in os.environ.items() if k not in ("ORG_AGENT", "ORG_VIA")}
    done = subprocess.run(
        [sys.executable, "-m", "cli_org", *(argv or ["hook", "claude-code", event, "--as", agent])],
        input=stdin,
        cwd=cwd or ROOT,
        env={**base, **org.env, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=HOOK_SECONDS + 30,  # a guard against a hang, not a measurement
    )
    assert done.returncode == 0, done.stderr
    return done


SECRET = "ghp_" + "a" * 36  # split: no key-shaped literal in the repository


def archived_session(org, external="s-1", project=None, harness="claude-code") -> int:
    """An archived session's row, as the import writes it (as the administrator); its id."""
    with org.admin() as conn:
        row = conn.execute(
            "INSERT INTO archive_sessions (harness, external_id, project) VALUES (%s, %s, %s) RETURNING id",
            (harness, external, project),
        ).fetchone()
        conn.commit()
    return int(row["id"])


def insert_proposal(conn, session_id, claim, *, agent="bot", project=None, subject="package manager", key="m-1"):
    """A proposal as the archive's import writes it (its own query, on an admin connection);
    its id, or None where the claim was proposed before."""
    from cli_org.db.queries import sql
    from cli_org.store.proposals import claim_key

    row = conn.execute(
        sql("proposals.insert"),
        {"session_id": session_id, "message_key": key, "agent": agent, "project": project, "subject": subject,
         "claim": claim, "kind": "rule", "why": "correction", "score": 0.9, "claim_key": claim_key(claim)},
    ).fetchone()  # fmt: skip
    return None if row is None else int(row["id"])


def propose(org, session_id, claim, **kw) -> int | None:
    """insert_proposal on its own admin connection, committed."""
    with org.admin() as conn:
        made = insert_proposal(conn, session_id, claim, **kw)
        conn.commit()
    return made


def statement_names(statements: list[str]) -> list[str]:
    """The statements `sent` traced, each by its name in cli_org/sql ("recall.log"), the HNSW
    settings of vault/search.py's hnsw_scan as "hnsw_scan", anything else as sent ("BEGIN")."""
    import re
    from importlib import resources

    from cli_org.db.queries import _load, sql

    def plain(text: str) -> str:  # placeholders alike: psycopg sends %(name)s as $n
        return re.sub(r"\$\d+", "?", re.sub(r"%\(\w+\)s", "?", text).replace("%%", "%"))

    groups = [f.name.removesuffix(".sql") for f in resources.files("cli_org").joinpath("sql").iterdir()]
    queries = {f"{g}.{n}": plain(sql(f"{g}.{n}")) for g in groups if g.isidentifier() for n in _load(g)}
    out = []
    for line in statements:
        text = line.removeprefix("Execute").strip().removeprefix('"')
        whole = text.endswith('"')  # shown whole (a longer one is cut at 90 characters)
        text = re.sub(r"\\x[0-9a-f]?$", "", text.removesuffix('"') if whole else text)
        text = plain(re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m[1], 16)), text))
        named = [n for n, q in queries.items() if (q == text if whole else q.startswith(text))]
        if text.startswith("SELECT set_config('hnsw.ef_search'"):
            named = ["hnsw_scan"]
        out.append(named[0] if len(named) == 1 else text)
    return out


def sent(conn, call) -> list[str]:
    """The statements the client sends the server while `call` runs, read from libpq's own
    trace of the protocol: a simple query, or an extended one's Execute (so BEGIN, COMMIT and
    SAVEPOINT count too), each with the start of its text, quoted, the closing quote only when whole (a
    statement psycopg prepared, after its fifth run, before the trace began shows none)."""
    import re
    import tempfile

    from psycopg import pq

    with tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            call()
        finally:
            conn.pgconn.untrace()
        trace.seek(0)
        lines = trace.read().splitlines()
    out, texts, bound = [], {}, ""
    for line in lines:  # each Execute shown with the start of the statement its Bind named
        if line.startswith("F") and "\tParse\t" in line:  # ' "name" "text" n oid...'
            name, text = line.split("\tParse\t", 1)[1].strip().split(" ", 1)
            texts[name] = re.sub(r"( \d+)+$", "", text)[:90]
        elif line.startswith("F") and "\tBind\t" in line:  # ' "portal" "statement" ...'
            bound = texts.get(line.split("\tBind\t", 1)[1].split()[1], "")
        elif line.startswith("F") and "\tExecute\t" in line:
            out.append(f"Execute {bound}")
        elif line.startswith("F") and "\tQuery\t" in line:
            out.append(line.split("\tQuery\t", 1)[1][:90])
    return out
