"""The warm helper: the same bytes as a cold run, its own database only, the caller's identity
only, a private socket, an idle exit, and the cold path whenever it is not there."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from cli_org.faces.warm import ask, client
from cli_org.faces.warm.server import status
from cli_org.store import facts, notebook
from tests.helpers import _hook, helper, served  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "eval" / "sample"


@pytest.fixture
def warm_env(org, tmp_path_factory):
    """The environment of a CLI process with the helper on, its sockets in a folder of this
    test (kept short: a socket path holds about 100 bytes)."""
    where = Path(tmp_path_factory.getbasetemp()) / f"w{org.name[-6:]}"
    assert len(str(where)) < 70, where
    env = {**os.environ, **org.env, "CLI_ORG_WARM": "1", "CLI_ORG_WARM_DIR": str(where), "ORG_ROOT": str(SAMPLE)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)  # this checkout's code
    env["CLI_ORG_WARM_IDLE"] = "30"  # a helper a cold answer launched goes by itself soon
    env.pop("ORG_AGENT", None)
    yield env
    # ... and is stopped here: the suite leaves no helper behind.
    found = status(env)
    if found.running and found.pid:
        os.kill(found.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while status(env).running and time.monotonic() < deadline:
            time.sleep(0.1)


def run(env, *args, cwd=ROOT):
    """`cli-org ARGS` in a fresh process from this checkout (`-m` looks in cwd first)."""
    return subprocess.run(
        [sys.executable, "-m", "cli_org", *args], env=env, capture_output=True, text=True, timeout=120, cwd=cwd
    )


def cold(env, *args, cwd=ROOT):
    return run({**env, "CLI_ORG_WARM": "0"}, *args, cwd=cwd)


def _dress(org):
    """Facts, and notebooks that only their owners may read."""
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploy", "Deploys go out from the release branch on Tuesdays", source="docs/deploy.md")
        facts.remember(conn, "build", "The build cache lives in the ci-cache bucket", source="docs/build.md")
        notebook.add(conn, "memory", "Bot's private plan: rotate the deploy keys on Friday")
    with org.as_agent("other") as conn:
        notebook.add(conn, "memory", "Other's secret plan: deploy keys live in the vault at kv/other")


def _without_ms(text: str) -> dict:
    data = json.loads(text)
    data.pop("ms", None)
    return data


CASES = [
    ("recall", "when do deploys go out", "--as", "bot"),
    ("recall", "when do deploys go out", "--as", "bot", "--json"),
    ("recall", "deploy keys plan", "--as", "other", "--arms", "fact,memory"),
    ("recall", "where is the build cache", "--as", "other", "--project", "x", "--limit", "2"),
    ("recall", "nothing matches zebra quantum", "--as", "bot"),
    ("context", "--as", "bot"),
    ("context", "--as", "other", "--for", "deploy keys", "--format", "markdown"),
    ("context", "--as", "bot", "--for", "deploys", "--json"),
    ("recall", "deploys", "--as", "nobody"),  # an unknown agent: the same error line
    ("recall", "   "),  # a usage error: exit 2, the same line
    ("context", "--as", "bot", "--budget", "3"),
]


@pytest.mark.slow
def test_warm_answers_are_the_cold_answers(org, warm_env):
    _dress(org)
    with helper(warm_env):
        for args in CASES:
            before = served(warm_env)
            warm = run(warm_env, *args)
            assert served(warm_env) == before + 1, f"{args}: the helper did not answer"
            expected = cold(warm_env, *args)
            assert (warm.returncode, warm.stderr) == (expected.returncode, expected.stderr), args
            if "--json" in args and "recall" in args:
                assert _without_ms(warm.stdout) == _without_ms(expected.stdout), args
            else:
                assert warm.stdout == expected.stdout, args
        assert "Tuesdays" in run(warm_env, "recall", "when do deploys go out", "--as", "bot").stdout


@pytest.mark.slow
def test_hooks_are_answered_by_the_helper_with_the_cold_bytes(org, warm_env):
    """The hook's stdin travels with the request; the session's delivery record is the same
    one a cold hook would use, so a repeated prompt adds nothing, warm or cold."""
    _dress(org)
    start = {"session_id": "warm-s1", "cwd": str(ROOT), "hook_event_name": "SessionStart"}
    prompt = {**start, "hook_event_name": "UserPromptSubmit", "prompt": "when do deploys go out?"}
    with helper(warm_env):
        before = served(warm_env)
        warm = _hook(warm_env, "session-start", start)
        assert served(warm_env) == before + 1, "the helper did not answer the hook"
        assert warm.returncode == 0 and "Tuesdays" in json.loads(warm.stdout)["hookSpecificOutput"]["additionalContext"]
        # A new session, cold and then warm: the same bytes.
        other = {**start, "session_id": "warm-s2"}
        assert (
            _hook(warm_env, "session-start", {**other, "session_id": "warm-s3"}).stdout
            == _hook(warm_env, "session-start", other, cold_run=True).stdout
        )
        # A prompt in two new sessions, warm and cold: the same bytes; the repeat adds nothing.
        first = _hook(warm_env, "prompt", {**prompt, "session_id": "warm-s4"})
        assert (
            first.stdout
            and first.stdout == _hook(warm_env, "prompt", {**prompt, "session_id": "warm-s5"}, cold_run=True).stdout
        )
        assert _hook(warm_env, "prompt", {**prompt, "session_id": "warm-s5"}).stdout == ""
        assert _hook(warm_env, "prompt", {**prompt, "session_id": "warm-s4"}, cold_run=True).stdout == ""
        assert served(warm_env) == before + 4


@pytest.mark.slow
def test_a_cold_hook_starts_the_helper_the_next_hook_asks(org, warm_env):
    """The hook bounds its connection itself (Settings.connect_timeout), never through
    PGCONNECT_TIMEOUT in the environment, a PG* variable and so part of a helper's key: the
    helper it launches must be the one the next hook reaches."""
    _dress(org)
    env = {**warm_env, "CLI_ORG_WARM_IDLE": "20"}
    env.pop("PGCONNECT_TIMEOUT", None)
    start = {"session_id": "launch-1", "cwd": str(ROOT), "hook_event_name": "SessionStart"}
    first = _hook(env, "session-start", start)
    try:
        deadline = time.monotonic() + 60
        while not status(env).running:
            assert time.monotonic() < deadline, "no helper for the hook's database after a cold hook"
            time.sleep(0.1)
        second = _hook(env, "session-start", {**start, "session_id": "launch-2"})
        assert second.stdout == first.stdout and served(env) == 1
    finally:
        assert run(env, "warm", "stop").stdout == "stopped\n"


@pytest.mark.slow
def test_the_caller_environment_and_folder_decide_the_answer(org, warm_env, tmp_path):
    """ORG_ROOT, ORG_AGENT and the working folder travel with each request."""
    memory = tmp_path / "proj" / ".agents" / "org" / "memory"
    memory.mkdir(parents=True)
    (memory / "ops.md").write_text("- the staging database restarts every night at two\n")
    env = {**warm_env, "ORG_AGENT": "bot"}
    env.pop("ORG_ROOT")
    with helper(env):
        for where, expect in ((tmp_path / "proj", True), (tmp_path, False)):
            warm = run(env, "recall", "when does staging restart", cwd=where)
            assert warm.stdout == cold(env, "recall", "when does staging restart", cwd=where).stdout
            assert ("staging database restarts" in warm.stdout) is expect
        rooted = {**env, "ORG_ROOT": str(tmp_path / "proj")}
        assert "staging database" in run(rooted, "recall", "when does staging restart").stdout
        # A relative ORG_ROOT means the caller's folder, not the helper's (it once did).
        relative = {**env, "ORG_ROOT": "proj"}
        warm = run(relative, "recall", "when does staging restart", cwd=tmp_path)
        assert "staging database" in warm.stdout
        assert warm.stdout == cold(relative, "recall", "when does staging restart", cwd=tmp_path).stdout
        assert served(env) == 4


@pytest.mark.slow
def test_an_agent_cannot_read_another_agents_notebook_through_the_helper(org, warm_env):
    _dress(org)
    with helper(warm_env):
        for agent, own, foreign in (("bot", "Bot's private plan", "kv/other"), ("other", "kv/other", "Bot's private")):
            # Ask in turn on the one resident connection: each request gets its own role only.
            for _ in range(2):
                out = run(warm_env, "context", "--as", agent, "--for", "deploy keys plan").stdout
                assert own in out and foreign not in out
                out = run(warm_env, "recall", "deploy keys plan", "--as", agent).stdout
                assert foreign not in out
        # No agent named: the admin login, as cold; and a request naming an agent after it
        # still sees only that agent's notebook.
        assert run(warm_env, "context").stdout == cold(warm_env, "context").stdout
        assert "kv/other" not in run(warm_env, "context", "--as", "bot").stdout


@pytest.mark.slow
def test_on_a_shared_server_the_login_decides_not_the_helper(org, warm_env):
    """With a URL the helper connects as that URL's login; `--as` another agent is refused
    exactly as it is cold, and another login's URL reaches another helper."""
    _dress(org)
    url = f"postgresql://{org.name}_other:other-pw@{org.server.tcp_host}:{org.server.tcp_port}/{org.name}"
    env = {**warm_env, "CLI_ORG_DATABASE_URL": url}
    with helper(env):
        as_bot = run(env, "context", "--as", "bot")
        assert as_bot.returncode == 1 and "may not act as agent 'bot'" in as_bot.stderr
        assert (as_bot.stderr, as_bot.returncode) == (cold(env, "context", "--as", "bot").stderr, 1)
        mine = run(env, "context", "--for", "deploy keys")
        assert "kv/other" in mine.stdout and "Bot's private" not in mine.stdout
        assert served(env) == 2
        # The same login with a wrong password is another key: no helper, and cold refuses it.
        wrong = {**env, "CLI_ORG_DATABASE_URL": url.replace("other-pw", "guess")}
        assert ask("context", [], wrong, str(ROOT)) is None
        answer = run(wrong, "context")
        assert answer.returncode == 1 and "password authentication failed" in answer.stderr
        assert served(env) == 2


@pytest.fixture
def second_db(org):
    """Another, empty database on the same server."""
    import psycopg
    from psycopg import sql as pgsql

    name = f"{org.name}_b"
    with psycopg.connect(org.server.admin_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    yield name
    with psycopg.connect(org.server.admin_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("DROP DATABASE {} WITH (FORCE)").format(pgsql.Identifier(name)))


@pytest.mark.slow
def test_a_helper_serves_only_its_own_database(org, warm_env, second_db):
    if org.server.data_dir is None:
        pytest.skip("needs the embedded server: the database is chosen by CLI_ORG_DATABASE there")
    other_db = {**warm_env, "CLI_ORG_DATABASE": second_db}
    with helper(warm_env):
        assert client.socket_path(other_db) != client.socket_path(warm_env)
        assert ask("recall", ["deploys", "--as", "bot"], other_db, str(ROOT)) is None
        # A request sent straight to A's socket whose environment names database B is refused.
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(str(client.socket_path(warm_env)))
        with sock:
            client.send(
                sock,
                {
                    "version": client.fingerprint(),
                    "key": client.target(warm_env)[0],
                    "kind": "recall",
                    "args": ["deploys"],
                    "env": other_db,
                    "cwd": str(ROOT),
                },
            )
            assert client.receive(sock) == {"cold": "malformed"}
        assert served(warm_env) == 0
        # B's cold answer is B's (not initialised), not A's.
        answer = run(other_db, "recall", "deploys")
        assert answer.returncode == 1 and "cli-org init" in answer.stderr


@pytest.mark.slow
def test_socket_and_folder_are_private(org, warm_env):
    with helper(warm_env):
        path = client.socket_path(warm_env)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_ISSOCK(path.stat().st_mode)
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert path.parent.stat().st_uid == os.geteuid()
        # Opened up by someone: the client no longer trusts it, and answers cold.
        path.parent.chmod(0o755)
        try:
            assert ask("context", ["--as", "bot"], warm_env, str(ROOT)) is None
            answer = run(warm_env, "context", "--as", "bot")
            assert answer.returncode == 0 and served(warm_env) == 0
        finally:
            path.parent.chmod(0o700)


@pytest.mark.slow
def test_a_folder_that_is_not_private_is_refused(warm_env):
    where = Path(warm_env["CLI_ORG_WARM_DIR"])
    where.mkdir(mode=0o755)
    where.chmod(0o755)
    out = run(warm_env, "warm", "serve", "--idle", "5")
    assert out.returncode == 1 and "is not private" in out.stderr
    assert not client.start(warm_env)
    if os.geteuid() == 0:  # a folder another user made, even if closed
        where.chmod(0o700)
        os.chown(where, 65534, 65534)
        assert run(warm_env, "warm", "serve", "--idle", "5").returncode == 1
        assert list(where.iterdir()) == []


@pytest.mark.slow
def test_the_helper_exits_when_idle_and_removes_its_socket(org, warm_env):
    with helper(warm_env, idle="1") as proc:
        assert proc.wait(timeout=30) == 0
        assert "idle" in (proc.stderr.read() if proc.stderr else "")
    assert not client.socket_path(warm_env).exists()
    assert not status(warm_env).running


@pytest.mark.slow
def test_a_killed_helper_means_a_cold_answer(org, warm_env):
    _dress(org)
    expected = cold(warm_env, "recall", "when do deploys go out", "--as", "bot")
    with helper(warm_env) as proc:
        proc.kill()  # SIGKILL: no clean-up, the socket file stays behind
        proc.wait()
        assert client.socket_path(warm_env).exists()
        answer = run({**warm_env}, "recall", "when do deploys go out", "--as", "bot")
        assert (answer.returncode, answer.stdout) == (0, expected.stdout)
    # The cold answer launched a new helper over the stale socket; it answers the next call.
    deadline = time.monotonic() + 60
    while not status(warm_env).running:
        assert time.monotonic() < deadline, "no helper replaced the killed one"
        time.sleep(0.1)
    again = run(warm_env, "recall", "when do deploys go out", "--as", "bot")
    assert again.stdout == expected.stdout and served(warm_env) == 1


@pytest.mark.slow
def test_a_helper_that_dies_mid_request_means_a_cold_answer(org, warm_env):
    """A listener that accepts and hangs up before answering, as a helper killed mid-way."""
    path = client.socket_path(warm_env)
    assert client.private_folder(path.parent) is None
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(1)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli_org", "context", "--as", "bot"],
            env=warm_env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        conn, _ = listener.accept()
        conn.recv(10)
        conn.close()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and err == ""
        assert out == cold(warm_env, "context", "--as", "bot").stdout
    finally:
        listener.close()
        path.unlink()


@pytest.mark.slow
def test_off_means_cold_and_nothing_started(org, warm_env):
    off = {**warm_env, "CLI_ORG_WARM": "0"}
    assert run(off, "recall", "deploys", "--as", "bot").returncode == 0
    time.sleep(0.5)
    assert not status(off).running and not client.socket_path(off).exists()
    assert ask("recall", ["deploys"], off, str(ROOT)) is None
    assert not client.start(off)


@pytest.mark.slow
def test_a_cold_answer_starts_the_helper_and_the_next_is_warm(org, warm_env):
    _dress(org)
    env = {**warm_env, "CLI_ORG_WARM_IDLE": "20"}
    first = run(env, "recall", "when do deploys go out", "--as", "bot")
    try:
        deadline = time.monotonic() + 60
        while not status(env).running:
            assert time.monotonic() < deadline, "no helper started after a cold answer"
            time.sleep(0.1)
        second = run(env, "recall", "when do deploys go out", "--as", "bot")
        assert second.stdout == first.stdout and served(env) == 1
        # The warm path loads no heavy module in the calling process.
        traced = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "cli_org", "recall", "deploys", "--as", "bot"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        imported = {line.split("|")[-1].strip().split(".")[0] for line in traced.stderr.splitlines() if "|" in line}
        assert served(env) == 2
        assert not imported & {"psycopg", "numpy", "onnxruntime", "click", "tokenizers"}
    finally:
        assert run(env, "warm", "stop").stdout == "stopped\n"
    deadline = time.monotonic() + 30
    while client.socket_path(env).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not status(env).running


@pytest.mark.slow
def test_a_helper_of_another_version_sends_the_caller_cold_and_exits(org, warm_env):
    with helper(warm_env) as proc:
        answer = client.request(warm_env, {"kind": "status", "version": "0.0.0 elsewhere"})
        assert answer == {"cold": "another version"}
        assert proc.wait(timeout=30) == 0


@pytest.mark.slow
def test_status_and_stop_commands(org, warm_env):
    out = json.loads(run(warm_env, "warm", "status", "--json").stdout)
    assert out["running"] is False and out["socket"].endswith(".sock") and org.name in out["target"]
    assert run(warm_env, "warm", "stop").stdout == "no helper was running\n"
    with helper(warm_env) as proc:
        text = run(warm_env, "warm", "status").stdout
        assert text.startswith(f"running: pid {proc.pid}") and "exits after 60 s idle" in text
        assert json.loads(run(warm_env, "warm", "stop", "--json").stdout) == {"stopped": True}
        assert proc.wait(timeout=30) == 0
    url_env = {**warm_env, "CLI_ORG_DATABASE_URL": "postgresql://u:secret@localhost:1/db"}
    shown = run(url_env, "warm", "status").stdout
    assert "secret" not in shown and "not running" in shown


@pytest.mark.slow
def test_one_helper_per_database(org, warm_env):
    with helper(warm_env):
        second = run(warm_env, "warm", "serve", "--idle", "5")
        assert second.returncode == 0 and "another helper serves this database" in second.stderr


def test_the_entry_point_loads_the_right_module_alone():
    """`cli-org recall` and `cli-org context` register their own module only (app.ALONE);
    the guess whether a query model will be needed never changes an answer, only timing."""
    from importlib import import_module

    from cli_org.faces.cli import needs_model
    from cli_org.faces.cli.app import ALONE

    for name, module in ALONE.items():
        assert name in [c.name for c in import_module(f"cli_org.faces.cli.{module}").COMMANDS]
    assert needs_model(["recall", "q"]) and needs_model(["recall", "q", "--arms", "fact,vault"])
    assert needs_model(["recall", "q", "--arms", "fact"])  # the fact arm finds by meaning too (issue 37)
    assert not needs_model(["recall", "--arms=memory", "q"]) and not needs_model(["recall", "q", "--arms", "memory"])
    assert needs_model(["context", "--for", "x"]) and needs_model(["context", "--for=x"])
    assert not needs_model(["context"]) and not needs_model(["recall", "q", "--help"]) and not needs_model([])


@pytest.mark.slow
def test_db_stop_stops_the_helper_of_that_database(server, tmp_path_factory):
    """`cli-org db stop` stops the warm helper of the database it stops (issue 37: the helper
    stayed, holding a connection to a server that was gone)."""
    if server.data_dir is None:
        pytest.skip("CLI_ORG_TEST_DATABASE_URL is set: the embedded server is not under test")
    from cli_org.db import embedded

    # A server of this test's own (not under pytest's temporary root, as tests/test_backup.py).
    folder = Path(tempfile.mkdtemp(prefix="cli-org-test-data-"))
    data_dir = folder / "data"
    where = Path(tmp_path_factory.getbasetemp()) / "wstop"
    env = {k: v for k, v in os.environ.items() if k not in ("CLI_ORG_DATABASE_URL", "CLI_ORG_DATABASE", "ORG_AGENT")}
    env.update({"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_WARM": "1", "CLI_ORG_WARM_DIR": str(where)})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    try:
        embedded.ensure_running(data_dir)
        with helper(env) as proc:
            stopped = run(env, "db", "stop")
            assert stopped.returncode == 0 and stopped.stdout == "stopped (and its warm helper)\n", stopped.stderr
            assert proc.wait(timeout=30) == 0
        assert not status(env).running and embedded.running(data_dir) is None
        # Nothing running: says so, and stops nothing.
        assert run(env, "db", "stop").stdout == "not running\n"
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(folder, ignore_errors=True)
