"""Real PostgreSQL for every test: the embedded server, or CLI_ORG_TEST_DATABASE_URL."""

from __future__ import annotations

import os
import shutil
import time
import uuid

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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from cli_org.config import Settings
from cli_org.db import embedded

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


@dataclass
class Server:
    """Where the tests' databases live, and how to reach them as admin or over TCP."""

    admin_url: str  # to the maintenance database, as a superuser or a CREATEROLE/CREATEDB admin
    data_dir: Path | None  # set for the embedded server
    tcp_host: str
    tcp_port: int
    vectors: bool = True  # whether the admin can have pgvector in a new database

    def url(self, dbname: str) -> str:
        return make_conninfo(self.admin_url, dbname=dbname)


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
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
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


def _can_have_vectors(admin_url: str) -> bool:
    """Whether the admin can create pgvector in a database of its own (a team server may lack
    it: docs/operations.md, Team server). Tried in a scratch database, dropped after."""
    name = f"t_vec_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
        try:
            with psycopg.connect(make_conninfo(admin_url, dbname=name), autocommit=True) as scratch:
                scratch.execute("CREATE EXTENSION vector")
            return True
        except psycopg.Error:
            return False
        finally:
            _drop_database(conn, name)


@pytest.fixture(autouse=True)
def _needs_vectors(request):
    """Tests marked `vectors` are skipped, saying why, on a server without pgvector."""
    if request.node.get_closest_marker("vectors") and not request.getfixturevalue("server").vectors:
        pytest.skip("the test server has no pgvector (team server): keyword fallback is tested instead")


@dataclass
class OrgDb:
    """One fresh, migrated cli-org database for a test."""

    server: Server
    name: str
    settings: Settings
    env: dict[str, str]
    writers: dict[str, psycopg.Connection] = field(default_factory=dict, repr=False)

    def admin(self) -> psycopg.Connection:
        return psycopg.connect(self.server.url(self.name), row_factory=dict_row)

    def login(self, role: str, password: str) -> psycopg.Connection:
        """Connect over TCP as a role with its own password: no superuser, no SET ROLE."""
        return psycopg.connect(
            host=self.server.tcp_host,
            port=self.server.tcp_port,
            dbname=self.name,
            user=role,
            password=password,
            row_factory=dict_row,
        )

    def as_agent(self, agent: str) -> psycopg.Connection:
        from cli_org.db.connect import connect

        return connect(self.settings, agent)

    def writer(self, agent: str) -> psycopg.Connection:
        """A connection as `agent`, kept until the test ends, for writing the test's data a
        fact at a time: a connection's first write compiles the write checks' patterns
        (PostgreSQL caches compiled expressions per connection; 1.6-3 s measured on 2 cores),
        so a test's helpers share one per agent rather than pay that on every fact."""
        if agent not in self.writers or self.writers[agent].closed:
            self.writers[agent] = self.as_agent(agent)
        return self.writers[agent]

    def close(self) -> None:
        for conn in self.writers.values():
            conn.close()
        self.writers.clear()


def _settings_for(server: Server, name: str) -> tuple[Settings, dict[str, str]]:
    if server.data_dir is not None:
        env = {"CLI_ORG_DATA_DIR": str(server.data_dir), "CLI_ORG_DATABASE": name, "CLI_ORG_DATABASE_URL": ""}
    else:
        env = {"CLI_ORG_DATABASE_URL": server.url(name)}
    return Settings.from_env(env), env


def _drop_database(conn: psycopg.Connection, name: str) -> None:
    """DROP DATABASE ... WITH (FORCE). A non-superuser admin (a team server's) may not end an
    autovacuum worker busy in the database, so it waits for the worker to finish."""
    for attempt in range(100):
        try:
            conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name)))
            return
        except psycopg.errors.InsufficientPrivilege:
            if attempt == 99:
                raise
            time.sleep(0.2)


@contextmanager
def fresh_database(server: Server, template: str | None = None) -> Iterator[OrgDb]:
    """An empty database (no migrations), or with `template` a copy of that migrated one
    (`org`), and its settings; dropped with its roles after. `blank_db` for one test; a
    module's fixture may hold one for all its tests."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        if template:
            conn.execute(pgsql.SQL("CREATE DATABASE {} TEMPLATE {}").format(*map(pgsql.Identifier, (name, template))))
        else:
            conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    db = OrgDb(server, name, *_settings_for(server, name))
    try:
        if template:
            _own_member_group(db, template)
        yield db
    finally:
        db.close()
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            _drop_database(conn, name)
            # and what `db restore --force` kept (tests/test_backup.py, test_json_output.py)
            kept = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (name + "\\_replaced\\_%",))
            for (database,) in kept.fetchall():
                _drop_database(conn, database)
            roles = [r[0] for r in conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (name + "\\_%",))]
            # A role that granted memberships (a test's own non-superuser admin) goes last.
            roles.sort(key=lambda role: role.endswith("_admin"))
            for role in roles:
                conn.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(role)))


# A copy of the template holds the privileges migrating gave the template's member group
# (org_member_role(): the database's name + "_member", a role of the whole server). Each
# copy gets a group of its own with the same privileges, and the template's group keeps
# none there, so a copy is what migrating it would have made (tests/test_migrate.py
# compares the two). A database's own privileges are not copied with it; the rest are.
_HELD = """
SELECT a.privilege_type || coalesce(' (' || quote_ident(o.col) || ')', '') || ' ON ' || o.target AS privilege,
       a.is_grantable AS grantable, o.target NOT LIKE 'DATABASE %%' AS copied
FROM (
    SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE ' ELSE 'TABLE ' END || c.oid::regclass AS target,
           NULL::name AS col, c.relacl AS acl FROM pg_class c
    UNION ALL SELECT 'TABLE ' || t.attrelid::regclass, t.attname, t.attacl FROM pg_attribute t
    UNION ALL SELECT 'ROUTINE ' || p.oid::regprocedure, NULL, p.proacl FROM pg_proc p
    UNION ALL SELECT 'SCHEMA ' || quote_ident(n.nspname), NULL, n.nspacl FROM pg_namespace n
    UNION ALL SELECT 'TYPE ' || t.oid::regtype, NULL, t.typacl FROM pg_type t
    UNION ALL SELECT 'DATABASE ' || quote_ident(current_database()), NULL, d.datacl
    FROM pg_database d WHERE d.datname = %(template)s
) o, aclexplode(o.acl) a
WHERE a.grantee = (SELECT oid FROM pg_roles WHERE rolname = %(role)s)
"""
# What in this database still depends on the role: nothing, once its privileges are moved.
_STILL_HELD = """
SELECT count(*) AS n FROM pg_shdepend
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND refclassid = 'pg_authid'::regclass AND refobjid = (SELECT oid FROM pg_roles WHERE rolname = %(role)s)
"""


def _own_member_group(db: OrgDb, template: str) -> None:
    """Give `db`, a copy of `template`, its own member group, as migrating it would have."""
    with db.admin() as conn:
        new = conn.execute("SELECT org_member_role() AS role").fetchone()["role"]
        old = template + new.removeprefix(db.name)
        held = conn.execute(_HELD, {"template": template, "role": old}).fetchall()
        conn.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN").format(pgsql.Identifier(new)))
        for row in held:
            privilege = pgsql.SQL(row["privilege"])
            option = pgsql.SQL(" WITH GRANT OPTION" if row["grantable"] else "")
            conn.execute(pgsql.SQL("GRANT {} TO {}{}").format(privilege, pgsql.Identifier(new), option))
            if row["copied"]:
                conn.execute(pgsql.SQL("REVOKE {} FROM {}").format(privilege, pgsql.Identifier(old)))
        still = conn.execute(_STILL_HELD, {"role": old}).fetchone()["n"]
        assert still == 0, f"{old} still holds {still} things in its copy {db.name}"
        conn.commit()


@pytest.fixture
def blank_db(server):
    """An empty database (no migrations) and its settings; dropped with its roles after."""
    with fresh_database(server) as blank:
        yield blank


def with_team(blank: OrgDb) -> OrgDb:
    """Migrate `blank` with an owner `boss`, a lead `lead`, and bots `bot` (led by lead) and `other`."""
    from cli_org.store.agents import add_agent
    from cli_org.store.bootstrap import init

    init(blank.settings, "boss")
    with blank.admin() as conn:
        add_agent(conn, "lead")
        add_agent(conn, "bot", lead="lead", password="bot-pw")
        add_agent(conn, "other", password="other-pw")
        conn.commit()
    return blank


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
_ATTACK_SURFACE: dict[str, str] = {}


# The fast tier, `python -m pytest -m "not slow"`: every test that needs no PostgreSQL. A test
# on the test server costs a database of its own and usually a `cli-org` process (0.3 s to
# several seconds each, pytest --durations=0, 2026-12-01); one without runs in milliseconds.
# Measured files whose tests spawn slow processes without the server are named too.
SLOW_FILES = {
    "test_embeddings_real.py",
    "test_fuzz.py",
    "test_replica.py",  # a primary and a streaming replica of its own
    "test_stress.py",
    "test_web_browser.py",
    "test_web_fuzz.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "server" in getattr(item, "fixturenames", ()) or item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if item.path.name.startswith("test_client_"):  # the real harnesses (tests/clients.py)
            item.add_marker(pytest.mark.clients)
            item.add_marker(pytest.mark.slow)
        marker = item.get_closest_marker("attack")
        # attack(None) on a test in a module of attacks: a guard that also passed before its
        # fix (or a unit test), which is not counted as an attack refused
        if marker is not None and (not marker.args or marker.args[0] is not None):
            _ATTACK_SURFACE[item.nodeid] = marker.args[0] if marker.args else "other"


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
