"""The tests' databases: where they live (`Server`), one fresh database (`fresh_database`, a
copy of the migrated template or empty), and its team (`with_team`). tests/conftest.py's
fixtures are made of these; a test module that needs a database of its own imports them
from here (never from conftest)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from cli_org.config import Settings


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
            drop_database(conn, name)


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
            drop_database(conn, name)
            # and what `db restore --force` kept (tests/test_backup.py, test_json_output.py)
            kept = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (name + "\\_replaced\\_%",))
            for (database,) in kept.fetchall():
                drop_database(conn, database)
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


def drop_database(conn: psycopg.Connection, name: str) -> None:
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
