"""Database access: the embedded server, connections, migrations and named SQL."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any, TypeAlias

import psycopg
from psycopg.rows import DictRow

# What every library function takes: a connection whose rows are dicts (connect() and the
# pool set dict_row), so `row["name"]` type-checks.
Conn: TypeAlias = psycopg.Connection[DictRow]


# Per connection, facts that change rarely and that a recall would otherwise read each time
# (the round trips of a warm recall, tests/test_answer_shape.py): key -> (read at, value).
_MEMO: weakref.WeakKeyDictionary[Any, dict[str, tuple[float, Any]]] = weakref.WeakKeyDictionary()


def remembered(conn: Conn, key: str, read: Callable[[], Any], *, seconds: float, keep: Callable[[Any], bool]) -> Any:
    """`read()`, or what it gave on this connection less than `seconds` ago when `keep`
    said that answer could be kept (a state that only ever turns on, say)."""
    now = time.monotonic()
    memo = _MEMO.setdefault(conn, {})
    if key in memo and now - memo[key][0] < seconds:
        return memo[key][1]
    value = read()
    if keep(value):
        memo[key] = (now, value)
    return value


def first(conn: Conn, query: str | bytes, params: Any = None) -> DictRow:
    """The first row of a query that always returns one (a count, an aggregate, RETURNING)."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        raise LookupError(f"the query returned no row: {str(query)[:80]}")
    return row
