"""Agents: each one a PostgreSQL role in the database's member group."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from psycopg import sql as pgsql

from .db import Conn, first
from .db.errors import translated
from .db.queries import sql
from .db.session import owns_transaction
from .errors import InputError, NotFound
from .rules import AGENT_NAME


@dataclass
class Agent:
    name: str
    kind: str
    team_lead: str | None
    is_owner: bool
    role_name: str
    created_at: datetime


def role_for(conn: Conn, name: str) -> str:
    """The default role of an agent: the database name, then the agent name."""
    return f"{conn.info.dbname}_{name}"


@owns_transaction
def add_agent(
    conn: Conn,
    name: str,
    *,
    lead: str | None = None,
    owner: bool = False,
    person: bool = False,
    password: str | None = None,
    role: str | None = None,
) -> Agent:
    """Create the role and the agent row in one transaction (run as an admin)."""
    if not AGENT_NAME.match(name):
        raise InputError(f"agent name {name!r}: use lowercase letters, digits, '_' or '-', starting with a letter")
    with translated(conn), conn.transaction():
        if conn.execute(sql("agents.get"), {"name": name}).fetchone():
            raise InputError(f"agent {name!r} already exists")
        if lead and not conn.execute(sql("agents.get"), {"name": lead}).fetchone():
            raise NotFound(f"unknown team lead {lead!r}")
        role = role or role_for(conn, name)
        exists = first(conn, sql("agents.role_exists"), {"role": role})["found"]
        if exists and password is not None:
            raise InputError(f"role {role!r} already exists; map it without --login")
        if not exists:
            login = pgsql.SQL("LOGIN PASSWORD {}").format(pgsql.Literal(password)) if password else pgsql.SQL("NOLOGIN")
            conn.execute(pgsql.SQL("CREATE ROLE {} {}").format(pgsql.Identifier(role), login))
        group = first(conn, sql("agents.member_role"))["name"]
        conn.execute(pgsql.SQL("GRANT {} TO {}").format(pgsql.Identifier(group), pgsql.Identifier(role)))
        if not first(conn, sql("agents.admin_may_become"), {"role": role})["yes"]:
            # A team server's administrator is no superuser (README, Team server): to act as
            # an agent (`--as`) it must be a member of the agent's role, as PostgreSQL
            # requires for SET ROLE. It gains nothing it lacked: with CREATEROLE it could
            # already reset the role's password.
            conn.execute(pgsql.SQL("GRANT {} TO CURRENT_USER").format(pgsql.Identifier(role)))
        conn.execute(
            sql("agents.insert"),
            {"name": name, "kind": "person" if person else "bot", "lead": lead, "owner": owner, "role": role},
        )
        return Agent(**first(conn, sql("agents.get"), {"name": name}))


@owns_transaction
def find_agent(conn: Conn, name: str) -> Agent | None:
    """The agent of that name, or None."""
    with translated(conn):
        row = conn.execute(sql("agents.get"), {"name": name}).fetchone()
        return Agent(**row) if row else None


@owns_transaction
def list_agents(conn: Conn) -> list[Agent]:
    with translated(conn):
        return [Agent(**row) for row in conn.execute(sql("agents.list"))]
