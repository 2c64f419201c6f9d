"""Agents behind a real PgBouncer in transaction mode (Debian's /usr/sbin/pgbouncer, started in
front of the test server): nobody acts as someone else, and remember, recall, the notebook and
the admin locks work (the pooler rule: cli_org/db/connect.py; docs/operations.md, Connection
pooling). Skipped only when pgbouncer is not installed."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql as pgsql

from cli_org.config import Settings
from cli_org.db import locks
from cli_org.db.connect import connect, current_agent, pooled
from cli_org.db.migrate import migrate
from cli_org.errors import AccessDenied, ConfigError, DatabaseError
from cli_org.org import Org
from cli_org.store import notebook as nb
from cli_org.store.facts import forget, remember

PGBOUNCER = "/usr/sbin/pgbouncer"
# Two server connections per login: few enough that every client shares them with the
# others, and the two a pooled admin job needs (its lock's transaction, and its work).
POOL_SIZE = 2

pytestmark = [
    pytest.mark.skipif(not os.access(PGBOUNCER, os.X_OK), reason="pgbouncer is not installed"),
    pytest.mark.slow,
]


@dataclass
class Pooler:
    port: int
    database: str
    roles: dict[str, str]  # agent (or "admin") -> role

    def url(self, who: str, password: str) -> str:
        return f"postgresql://{self.roles[who]}:{password}@127.0.0.1:{self.port}/{self.database}"

    def settings(self, who: str, password: str) -> Settings:
        return Settings.from_env({"CLI_ORG_DATABASE_URL": self.url(who, password)})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def pooler(org) -> Iterator[Pooler]:
    """PgBouncer in transaction mode in front of `org`'s database, for bot, other and a
    superuser admin login (what the embedded server's admin is), each with a password."""
    with org.admin() as conn:
        roles = {
            a: conn.execute(f"SELECT role_name FROM org_agents WHERE name = '{a}'").fetchone()["role_name"]
            for a in ("bot", "other")
        }
        roles["admin"] = f"{org.name}_admin"
        conn.execute(
            pgsql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD 'admin-pw'").format(pgsql.Identifier(roles["admin"]))
        )
        conn.commit()
    folder = Path(tempfile.mkdtemp(prefix="cli-org-test-pgbouncer-"))
    port = _free_port()
    passwords = {"bot": "bot-pw", "other": "other-pw", "admin": "admin-pw"}
    (folder / "users.txt").write_text("".join(f'"{roles[w]}" "{p}"\n' for w, p in passwords.items()))
    (folder / "pgbouncer.ini").write_text(
        f"[databases]\n{org.name} = host={org.server.tcp_host} port={org.server.tcp_port} dbname={org.name}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = scram-sha-256\nauth_file = {folder / 'users.txt'}\n"
        f"pool_mode = transaction\ndefault_pool_size = {POOL_SIZE}\nmax_client_conn = 100\n"
    )
    argv = [PGBOUNCER, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        folder.chmod(0o755)
        for name in ("users.txt", "pgbouncer.ini"):
            os.chown(folder / name, pwd.getpwnam("nobody").pw_uid, -1)
            (folder / name).chmod(0o600)
        argv = ["runuser", "-u", "nobody", "--", *argv]
    log = (folder / "pgbouncer.log").open("w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"pgbouncer did not start: {(folder / 'pgbouncer.log').read_text()}") from None
                time.sleep(0.05)
        yield Pooler(port, org.name, roles)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.attack("sql")
def test_a_login_that_sets_roles_is_refused_behind_the_pooler(pooler):
    admin = pooler.url("admin", "admin-pw")
    # The danger is real: a session's SET ROLE stays on the server connection for the
    # pooler's next client of that login.
    leaked = set()
    with psycopg.connect(admin, autocommit=True) as a, psycopg.connect(admin, autocommit=True) as b:
        a.execute(pgsql.SQL("SET ROLE {}").format(pgsql.Identifier(pooler.roles["bot"])))
        for _ in range(POOL_SIZE * 3):
            leaked.add(b.execute("SELECT current_user").fetchone()[0])
        a.execute("RESET ROLE")
    assert pooler.roles["bot"] in leaked
    # cli-org refuses to act as an agent that way, on a command's connection and a server's pool.
    settings = pooler.settings("admin", "admin-pw")
    with pytest.raises(ConfigError, match="behind a connection pooler each agent logs in as its own role"):
        connect(settings, "bot")
    with pytest.raises(ConfigError, match="connection pooler"), Org.open(settings, "bot", face="mcp", pool=1):
        pass
    # An agent's own login cannot take another agent's name either.
    with pytest.raises(ConfigError, match="connection pooler"):
        connect(pooler.settings("bot", "bot-pw"), "other")


@pytest.mark.attack("sql")
def test_two_agents_through_the_pooler_stay_themselves(pooler, org):
    bot, other = pooler.settings("bot", "bot-pw"), pooler.settings("other", "other-pw")
    # Three clients per agent over two server connections each; the same statements run many
    # times on each (psycopg would prepare them after five: a name on one server connection).
    clients = [(name, connect(s)) for name, s in (("bot", bot), ("other", other)) for _ in range(3)]
    try:
        assert all(pooled(conn) for _, conn in clients)
        for i in range(8):  # one statement, past psycopg's five runs, on clients sharing servers
            for _, conn in clients[:3]:
                assert conn.execute("SELECT org_me() AS me, %s::int AS i", (i,)).fetchone() == {"me": "bot", "i": i}
                conn.commit()
        fact = remember(clients[0][1], "deploys", "deploys of the pooled service run at noon", source="#m1").id
        nb.add(clients[0][1], "memory", "bot's own private note")
        nb.add(clients[3][1], "memory", "other's own private note")
        for _ in range(8):
            for name, conn in clients:
                assert current_agent(conn) == name
                notes = [e.body for s in nb.show(conn).stores for e in s.entries]
                assert notes == [f"{name}'s own private note"]
        with pytest.raises(AccessDenied):
            nb.show(clients[3][1], agent="bot")
        with pytest.raises((AccessDenied, DatabaseError)):
            forget(clients[4][1], fact, "other may not retire bot's fact")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            clients[5][1].execute(
                "INSERT INTO memory_facts (subject, claim, source, author)"
                " VALUES ('x', 'forged by other', '#m2', 'bot')"
            )
        clients[5][1].rollback()
    finally:
        for _, conn in clients:
            conn.close()
    with org.admin() as conn:
        rows = conn.execute("SELECT author, claim FROM memory_facts").fetchall()
    assert [(r["author"], r["claim"]) for r in rows] == [("bot", "deploys of the pooled service run at noon")]

    # A server's pool (the MCP server's) and the command line, as each agent.
    with Org.open(other, None, face="mcp", pool=2) as org_other:
        for _ in range(6):
            assert "deploys of the pooled service run at noon" in org_other.recall("when do deploys run?").result.text
            assert org_other.run(current_agent) == "other"
    runner = CliRunner()
    from cli_org.faces.cli import cli as group

    env = {"CLI_ORG_DATABASE_URL": pooler.url("other", "other-pw"), "ORG_AGENT": ""}
    done = runner.invoke(
        group, ["remember", "builds", "builds of the pooled service take ten minutes", "--source", "#m3"], env=env
    )
    assert done.exit_code == 0, done.stderr
    done = runner.invoke(group, ["recall", "how long do builds take?"], env=env)
    assert done.exit_code == 0 and "[fact" in done.stdout and "(#m3; other;" in done.stdout, done.stdout
    done = runner.invoke(group, ["notebook", "show"], env=env)
    assert done.exit_code == 0 and "other's own private note" in done.stdout
    assert "bot's own private note" not in done.stdout


def test_admin_locks_hold_behind_the_pooler(pooler, org):
    admin = pooler.settings("admin", "admin-pw")
    with connect(admin, bounded=False) as one, connect(admin, bounded=False) as two:
        assert pooled(one) and pooled(two)
        assert migrate(one, lock_wait=5) == []  # the migrations' lock, taken and let go
        with locks.held(one, locks.SCAN, "vault scans", 5):
            with (
                pytest.raises(DatabaseError, match="vault scans: waited 0.3 s"),
                locks.held(two, locks.SCAN, "vault scans", 0.3),
            ):
                pass
            # the block's own work goes on through the pooler meanwhile
            assert one.execute("SELECT count(*) AS n FROM org_agents").fetchone()["n"] == 4
            one.rollback()
        with locks.held(two, locks.SCAN, "vault scans", 0.3):
            pass
    with org.admin() as conn:  # nothing left behind on any server connection
        assert conn.execute("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory'").fetchone()["n"] == 0
