"""Real PostgreSQL for every test: the embedded server, or CLI_ORG_TEST_DATABASE_URL."""

from __future__ import annotations

import os
import shutil

# Every library call in the suite checks the connection rule (cli_org/db/session.py): it
# leaves the connection idle and its settings as it found them. Set before cli_org loads,
# and inherited by the CLI processes tests start.
os.environ["CLI_ORG_CHECK_CONNECTIONS"] = "1"
# No warm helper unless a test starts one (tests/test_warm.py): every other CLI process the
# suite runs answers cold, and none leaves a helper behind.
os.environ["CLI_ORG_WARM"] = "0"
# Sealed from the user's own data: every test runs against folders it made, whatever the user
# has done before (issue 34: after the README's demo, whose `vault embed` fills the user's
# data folder with the query model, in-process write checks found the model there, and a
# shell that kept the demo's exports pointed tests at its database). The run's own data
# folder (the embedded test server lives in it, and the session builds the query model there
# once, `_query_model`, so every test sees what a user sees: the model there, the injection
# classifier on), its own home and XDG folders, and none of the user's cli-org settings.
# Set before cli_org loads, and inherited by every process a test starts (the harnesses' own
# tests set HOME again for theirs). Not under pytest's temporary root (see `server`).
from tests.session_data import OWNER  # noqa: E402 (seals os.environ, once per run: see there)

# isort: split
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict

from cli_org.db import embedded
from tests.databases import OrgDb, Server, _can_have_vectors, fresh_database, with_team

SESSION_DATA = Path(os.environ["CLI_ORG_DATA_DIR"])  # the session's own data folder (above)

# The real corpora (SciFact, the TIL vault, agent transcripts) live beside the project, not in it.
CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


@pytest.fixture(scope="session")
def corpora():
    """The one way a test reaches ../shared/corpora: `corpora("transcripts")` is that folder,
    or the test is skipped saying which folder is missing and where it was looked for."""

    def folder(name: str) -> Path:
        if not CORPORA.is_dir():
            pytest.skip(f"../shared/corpora not found: {CORPORA} does not exist (the corpora sit beside the project)")
        path = CORPORA / name
        if not path.is_dir():
            pytest.skip(f"../shared/corpora/{name} not found: {path} does not exist")
        return path

    return folder


@pytest.fixture(scope="session")
def server() -> Server:
    url = os.environ.get("CLI_ORG_TEST_DATABASE_URL")
    if url:
        params = conninfo_to_dict(url)
        host = params.get("host") or "127.0.0.1"
        tcp_host = "127.0.0.1" if host.startswith("/") else host
        yield Server(url, None, tcp_host, int(params.get("port") or 5432), _can_have_vectors(url))
        return
    # A folder of its own, not under pytest's temporary root: every new pytest run by the same
    # user re-secures that root (mode 0700), which cut the server's user off from its data and
    # killed the suite's server when one test file ran beside it (issue 25; docs/design.md).
    # One server for the run: the workers of `-n` share it (started once, under its lock),
    # and the process that made the run's folder stops it at the end (pytest_sessionfinish).
    data_dir = SESSION_DATA
    info = embedded.ensure_running(data_dir)
    admin_url = info.conninfo("postgres")
    # A server thrown away at the end needs no durability: without fsync a test's database
    # is made and dropped in tens of milliseconds, not seconds (measured in
    # docs/testing.md). The suite's server only, never one of a user's.
    with psycopg.connect(admin_url, autocommit=True) as conn:
        # (synchronous_commit stays on: tests/test_connection_rule.py sets it on a session)
        for setting in ("fsync", "full_page_writes"):
            conn.execute(pgsql.SQL("ALTER SYSTEM SET {} = off").format(pgsql.Identifier(setting)))
        conn.execute("SELECT pg_reload_conf()")
    yield Server(admin_url, data_dir, "127.0.0.1", info.port)


@pytest.fixture(scope="session", autouse=True)
def _query_model():
    """The query model, built once for the session in its data folder (where the weights
    are installed, as the README installs them), before any test: a test sees the model a
    user's first command would have built, and no test prints the one-time build line.
    The folder goes when the session ends (pytest_sessionfinish): pytest may tear a session
    fixture down between two tests and set it up again, and removing the folder here then
    took the running server's data with it."""
    from cli_org.vault.embedders import build_model, model_file

    build_model(model_file(SESSION_DATA), say=lambda *args, **kwargs: None)


def pytest_sessionfinish(session, exitstatus):
    """The run's folder goes with its server, once, when the process that made it ends (the
    workers of `-n` end first and leave both to it)."""
    if not OWNER:
        return
    if embedded.pgdata_path(SESSION_DATA).exists():
        embedded.stop(SESSION_DATA)
    shutil.rmtree(SESSION_DATA.parent, ignore_errors=True)


@pytest.fixture(autouse=True)
def _needs_vectors(request):
    """Tests marked `vectors` are skipped, saying why, on a server without pgvector."""
    if request.node.get_closest_marker("vectors") and not request.getfixturevalue("server").vectors:
        pytest.skip("the test server has no pgvector (team server): keyword fallback is tested instead")


@pytest.fixture
def blank_db(server):
    """An empty database (no migrations) and its settings; dropped with its roles after."""
    with fresh_database(server) as blank:
        yield blank


@pytest.fixture(scope="session")
def template(server) -> Iterator[str]:
    """A database migrated once for the session, with no agents: every `org` is a copy of it
    (CREATE DATABASE ... TEMPLATE), which saves migrating each test's database (measured:
    TODO). Tests of migrating itself start from `blank_db`."""
    from cli_org.db.connect import connect
    from cli_org.db.migrate import migrate

    with fresh_database(server) as blank:
        with connect(blank.settings, bounded=False) as conn:
            migrate(conn, lock_wait=blank.settings.lock_wait)
        yield blank.name


@pytest.fixture
def org(server, template) -> Iterator[OrgDb]:
    """A migrated database with an owner `boss`, a lead `lead`, and bots `bot` (led by lead) and `other`."""
    with fresh_database(server, template) as copy:
        yield with_team(copy)


@pytest.fixture
def cli(org, monkeypatch):
    """Run cli-org in-process against the test database; returns (exit code, stdout, stderr)."""
    from cli_org.faces.cli import cli as group

    for key, value in org.env.items():
        monkeypatch.setenv(key, value)
    for key in ("ORG_AGENT", "ORG_VIA"):
        monkeypatch.delenv(key, raising=False)
    runner = CliRunner()

    def run(*args: str, agent: str | None = None, input: str | None = None):
        env = {"ORG_AGENT": agent} if agent else {}
        result = runner.invoke(group, list(args), env=env, input=input, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return run


@pytest.fixture
def web(org):
    """A client of the web page on the test database: `web("bot")` serves as bot on loopback
    with a random token, logged in as a browser is, through the address that carries it
    (its cookie); pass token=... to choose it, login=False for a client without it. The
    pools are closed after the test."""
    from contextlib import ExitStack

    from fastapi.testclient import TestClient

    from cli_org.faces.web.app import create_app, opened
    from cli_org.faces.web.guard import hosts_for, new_token

    stack = ExitStack()

    def make(
        agent: str | None = "boss",
        *,
        token: str | None = None,
        login: bool = True,
        host: str = "127.0.0.1",
        port: int = 8765,
    ):
        token = token or new_token()
        served = stack.enter_context(opened(org.settings, agent, token=token, hosts=hosts_for(host, port)))
        client = TestClient(create_app(served), base_url=f"http://{host}:{port}", follow_redirects=False)
        stack.enter_context(client)
        if login:
            assert client.get("/", params={"token": token}).status_code == 303
        return client

    yield make
    stack.close()


# The adversarial tally (issue 21): every test marked `@pytest.mark.attack("surface")` is one
# attack; it passes when the attack is refused. `python -m pytest -m attack` ends with a table
# of tried / refused / through per surface (and writes it as JSON to CLI_ORG_ATTACK_REPORT).
# The surface rides on each test's report (user_properties), which pytest-xdist's workers send
# back to the process that prints the table.
_ATTACK_SURFACE: dict[str, str] = {}


def pytest_collection_modifyitems(config, items):
    for item in items:
        marker = item.get_closest_marker("attack")
        # attack(None) on a test in a module of attacks: a guard that also passed before its
        # fix (or a unit test), which is not counted as an attack refused
        if marker is not None and (not marker.args or marker.args[0] is not None):
            item.user_properties.append(("attack", marker.args[0] if marker.args else "other"))


def pytest_runtest_logreport(report):
    surface = dict(getattr(report, "user_properties", ())).get("attack")
    if surface:
        _ATTACK_SURFACE[report.nodeid] = surface


def pytest_terminal_summary(terminalreporter):
    if not _ATTACK_SURFACE:
        return
    outcome: dict[str, str] = {}
    for status in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
        for report in terminalreporter.stats.get(status, []):
            nodeid = getattr(report, "nodeid", None)
            if nodeid not in _ATTACK_SURFACE:
                continue
            if status in ("failed", "error") or nodeid not in outcome:
                outcome[nodeid] = status
    table: dict[str, dict[str, int]] = {}
    for nodeid, status in outcome.items():
        row = table.setdefault(_ATTACK_SURFACE[nodeid], {"tried": 0, "refused": 0, "through": 0, "skipped": 0})
        if status == "skipped":
            row["skipped"] += 1
            continue
        row["tried"] += 1
        row["refused" if status in ("passed", "xfailed") else "through"] += 1
    if not table:
        return
    terminalreporter.section("attacks: tried / refused / through per surface")
    for surface in sorted(table):
        row = table[surface]
        terminalreporter.write_line(
            f"{surface:<12} tried {row['tried']:>4}  refused {row['refused']:>4}  through {row['through']:>4}"
            + (f"  (skipped {row['skipped']})" if row["skipped"] else "")
        )
    total = {k: sum(r[k] for r in table.values()) for k in ("tried", "refused", "through")}
    terminalreporter.write_line(
        f"{'all':<12} tried {total['tried']:>4}  refused {total['refused']:>4}  through {total['through']:>4}"
    )
    path = os.environ.get("CLI_ORG_ATTACK_REPORT")
    if path:
        import json

        Path(path).write_text(json.dumps({"surfaces": table, "all": total}, indent=2) + "\n")
