"""A primary and a streaming replica of it on localhost, built from the embedded server's own
binaries: the primary is an embedded server in a temporary folder (so a caller may stop
it); the replica is `pg_basebackup -R` of it, started on a free port as the unprivileged
user. Used by tests/test_replica.py and benchmarks/replica.py."""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from cli_org.config import Settings
from cli_org.db import embedded

REPLAY_WAIT = 30.0  # seconds a test waits for the replica to replay the primary's WAL


@dataclass
class Pair:
    primary_dir: Path
    primary: embedded.ServerInfo
    replica_dir: Path
    replica: embedded.ServerInfo
    name: str  # the cli-org database on both
    roles: dict[str, str]  # agent -> role name

    def admin(self, *, replica: bool = False) -> psycopg.Connection:
        info = self.replica if replica else self.primary
        return psycopg.connect(info.conninfo(self.name), row_factory=dict_row, autocommit=True)

    def tcp(self, agent: str, password: str, *, replica: bool = False) -> str:
        port = (self.replica if replica else self.primary).port
        return f"host=127.0.0.1 port={port} dbname={self.name} user={self.roles[agent]} password={password}"

    def embedded_env(self, agent: str | None = None) -> dict[str, str | None]:
        """The embedded primary, reads from the replica (as its superuser, then SET ROLE)."""
        return {
            "CLI_ORG_DATA_DIR": str(self.primary_dir),
            "CLI_ORG_DATABASE": self.name,
            "CLI_ORG_DATABASE_URL": None,
            "CLI_ORG_READ_URL": self.replica.conninfo(self.name),
            "ORG_AGENT": agent,
        }

    def server_env(self, agent: str, password: str) -> dict[str, str | None]:
        """A shared server: the agent logs in as its own role on both."""
        return {
            "CLI_ORG_DATA_DIR": str(self.primary_dir),
            "CLI_ORG_DATABASE": self.name,
            "CLI_ORG_DATABASE_URL": self.tcp(agent, password),
            "CLI_ORG_READ_URL": self.tcp(agent, password, replica=True),
            "ORG_AGENT": None,
        }

    def caught_up(self) -> None:
        """Wait until the replica has replayed everything the primary has written so far."""
        with self.admin() as p:
            lsn = p.execute("SELECT pg_current_wal_lsn()::text AS lsn").fetchone()["lsn"]
        deadline = time.monotonic() + REPLAY_WAIT
        with self.admin(replica=True) as r:
            while time.monotonic() < deadline:
                row = r.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn AS done", (lsn,)).fetchone()
                if row["done"]:
                    return
                time.sleep(0.05)
        raise AssertionError(f"the replica did not replay {lsn} within {REPLAY_WAIT} s")

    @contextmanager
    def paused(self):
        """The replica receives WAL but replays none of it inside the block: what is written
        on the primary meanwhile is not visible there yet."""
        with self.admin(replica=True) as r:
            r.execute("SELECT pg_wal_replay_pause()")
            _wait(
                lambda: r.execute("SELECT pg_get_wal_replay_pause_state() = 'paused' AS p").fetchone()["p"],
                "the replica did not pause",
            )
            try:
                yield
            finally:
                r.execute("SELECT pg_wal_replay_resume()")

    def stop_primary(self) -> None:
        embedded.stop(self.primary_dir)

    def start_primary(self) -> None:
        """Start the primary again on its own port (saved connection strings keep working)."""
        pgdata = embedded.pgdata_path(self.primary_dir)
        options = embedded.start_options(pgdata, self.primary.port, self.primary.socket_dir)
        embedded._pg("pg_ctl", "-w", "-t", "30", *options, "start", pgdata=pgdata)


def _wait(check, what: str, seconds: float = REPLAY_WAIT):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} within {seconds} s")


def build_pair(base: Path) -> Pair:
    """A primary (embedded, in base/p) with a cli-org database, agents bot and other (and
    owner boss), and a hot standby of it in base/r, streaming and caught up."""
    from cli_org.store.agents import add_agent
    from cli_org.store.bootstrap import init

    primary_dir, replica_dir = base / "p", base / "r"
    primary = embedded.ensure_running(primary_dir)
    name = f"r_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(primary.conninfo("postgres"), autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    init(Settings.from_env({"CLI_ORG_DATA_DIR": str(primary_dir), "CLI_ORG_DATABASE": name}), "boss")
    with psycopg.connect(primary.conninfo(name), row_factory=dict_row) as conn:
        add_agent(conn, "bot", password="bot-pw")
        add_agent(conn, "other", password="other-pw")
        conn.commit()
        roles = {r["name"]: r["role_name"] for r in conn.execute("SELECT name, role_name FROM org_agents")}

    # The standby: a base backup over TCP (initdb's pg_hba allows replication from
    # 127.0.0.1 with a password; the standby, run as the server's user, may not reach the
    # primary's socket in its data folder), with -R writing standby.signal and
    # primary_conninfo. Made by the server's user, from inside its own folder.
    password = uuid.uuid4().hex
    with psycopg.connect(primary.conninfo("postgres"), autocommit=True) as conn:
        conn.execute(pgsql.SQL("ALTER ROLE {} PASSWORD {}").format(pgsql.Identifier(embedded.SUPERUSER), password))
    replica_pg = embedded.pgdata_path(replica_dir)
    replica_pg.mkdir(parents=True)
    embedded.give_to_server(replica_pg)
    source = f"host=127.0.0.1 port={primary.port} user={embedded.SUPERUSER} password={password}"
    embedded._pg("pg_basebackup", "-d", source, "-R", "-X", "stream", "-c", "fast", pgdata=replica_pg)
    embedded._start(replica_pg, embedded.kept_port(replica_dir))
    replica = _wait(lambda: embedded.running(replica_dir), "the replica did not start")
    made = Pair(primary_dir, primary, replica_dir, replica, name, roles)
    with made.admin(replica=True) as r:
        assert r.execute("SELECT pg_is_in_recovery() AS standby").fetchone()["standby"]
        _wait(
            lambda: r.execute("SELECT status FROM pg_stat_wal_receiver").fetchone() is not None,
            "the replica is not streaming from the primary",
        )
    made.caught_up()
    return made


def stop_pair(pair: Pair) -> None:
    for folder in (pair.replica_dir, pair.primary_dir):
        if embedded.running(folder):
            embedded._pg("pg_ctl", "-w", "-m", "immediate", "stop", pgdata=embedded.pgdata_path(folder))
