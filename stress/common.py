"""What the stress scripts share: a fresh org database with agents that log in over TCP as
their own roles (the scripts), or the test suite's `org` fixture (the small versions)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from cli_org.config import Settings


@dataclass
class Org:
    """One org database: `admin()` as the administrator, `login(agent)` over TCP as the
    agent's own role with its password (no superuser, no SET ROLE)."""

    settings: Settings
    host: str
    port: int
    dbname: str
    passwords: dict[str, str]
    admin: Callable[[], psycopg.Connection]

    def login(self, agent: str) -> psycopg.Connection:
        return psycopg.connect(
            host=self.host,
            port=self.port,
            dbname=self.dbname,
            user=f"{self.dbname}_{agent}",
            password=self.passwords[agent],
            row_factory=dict_row,
        )


def fresh_org(name: str, agents: list[str]) -> Org:
    """Database bench_<name> on the embedded server (dropped first, with its roles), migrated,
    with one login agent per name, each with password `<name>-pw`."""
    from benchmarks.common import WORK
    from cli_org.db import embedded
    from cli_org.db.connect import admin_conninfo, connect
    from cli_org.store.agents import add_agent
    from cli_org.store.bootstrap import init

    settings = Settings.from_env({"CLI_ORG_DATA_DIR": str(WORK / "data"), "CLI_ORG_DATABASE": f"bench_{name}"})
    dbname = settings.database_name
    with psycopg.connect(admin_conninfo(settings, "postgres"), autocommit=True) as conn:
        conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(dbname)))
        roles = conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (dbname + "\\_%",)).fetchall()
        for (role,) in roles:
            conn.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(role)))
    init(settings, "boss")
    passwords = {a: f"{a}-pw" for a in agents}
    with connect(settings) as conn:
        for a in agents:
            add_agent(conn, a, password=passwords[a])
    info = embedded.ensure_running(settings.data_dir)
    return Org(
        settings,
        "127.0.0.1",
        info.port,
        dbname,
        passwords,
        lambda: psycopg.connect(admin_conninfo(settings), row_factory=dict_row),
    )


def figures(values_ms: list[float]) -> dict:
    """n, p50 and p95 (milliseconds, rounded) of a list of timings."""
    if not values_ms:
        return {"n": 0}
    ordered = sorted(values_ms)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"n": len(ordered), "p50": round(statistics.median(ordered), 1), "p95": round(p95, 1)}
