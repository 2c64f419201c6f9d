"""The rule for every library function that takes a connection.

The MCP server, the web server and the hooks call the library thousands of times on one
connection or a pool, so a call may leave nothing behind:

- it receives an idle connection (no transaction open);
- it owns its transaction: what it did is committed when it returns and rolled back when it
  raises, on every path;
- it leaves no session state: autocommit, role, search_path and the other settings are as
  they were (use `SET LOCAL` / `set_config(..., true)`, restore autocommit in `finally`).

`@owns_transaction` applies the rule to a public function whose first argument is the
connection. A call made from inside another such call joins the outer one's transaction.
With CLI_ORG_CHECK_CONNECTIONS=1 (the test suite sets it) every outermost call also checks
that the settings below are unchanged, and fails loudly if not.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

P = ParamSpec("P")
R = TypeVar("R")

CHECKING = os.environ.get("CLI_ORG_CHECK_CONNECTIONS") == "1"
# The session state a call must leave as it found it.
WATCHED = ("role", "search_path", "synchronous_commit", "statement_timeout", "lock_timeout", "application_name")
_DEPTH = "_cli_org_depth"


class ConnectionRuleBroken(AssertionError):
    """A library function broke the connection rule: a bug in cli-org, not bad input."""


def owns_transaction(fn: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        conn = args[0]
        if conn is None:  # a function that can work without a database was given none
            return fn(*args, **kwargs)
        if not isinstance(conn, psycopg.Connection):
            raise TypeError(f"{fn.__qualname__} takes a psycopg connection first, not {type(conn).__name__}")
        depth = getattr(conn, _DEPTH, 0)
        if depth:  # called by another library function: its transaction, its rules
            return fn(*args, **kwargs)
        if conn.info.transaction_status != TransactionStatus.IDLE:
            raise ConnectionRuleBroken(
                f"{fn.__qualname__} needs an idle connection; the caller left a transaction open "
                f"({conn.info.transaction_status.name})"
            )
        before = _state(conn) if CHECKING else None
        setattr(conn, _DEPTH, 1)
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            _end(conn, commit=False)
            raise
        finally:
            setattr(conn, _DEPTH, 0)
        _end(conn, commit=True)
        if before is not None:
            after = _state(conn)
            if after != before:
                changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
                raise ConnectionRuleBroken(f"{fn.__qualname__} changed the session: {changed}")
        return result

    # A marker tests/test_connection_rule.py looks for; mypy types no attributes set on a function.
    wrapper.owns_transaction = True  # type: ignore[attr-defined]
    return wrapper


def _end(conn: psycopg.Connection, *, commit: bool) -> None:
    if conn.closed or conn.broken:
        return
    status = conn.info.transaction_status
    if status == TransactionStatus.INTRANS and commit:
        conn.commit()
    elif status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
        conn.rollback()


def _state(conn: psycopg.Connection) -> dict[str, object]:
    """The watched settings and autocommit, read without leaving a transaction behind."""
    cur = conn.cursor(row_factory=tuple_row)
    values = cur.execute("SELECT " + ", ".join(f"current_setting('{name}')" for name in WATCHED)).fetchone()
    if values is None:  # never: a SELECT without FROM returns its one row
        raise LookupError("reading the session settings returned no row")
    if conn.info.transaction_status == TransactionStatus.INTRANS:
        conn.rollback()
    return {"autocommit": conn.autocommit, **dict(zip(WATCHED, values, strict=True))}
