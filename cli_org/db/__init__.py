"""Database access: the embedded server, connections, migrations and named SQL."""

from __future__ import annotations

from typing import Any, TypeAlias

import psycopg
from psycopg.rows import DictRow

# What every library function takes: a connection whose rows are dicts (connect() and the
# pool set dict_row), so `row["name"]` type-checks.
Conn: TypeAlias = psycopg.Connection[DictRow]


def first(conn: Conn, query: str | bytes, params: Any = None) -> DictRow:
    """The first row of a query that always returns one (a count, an aggregate, RETURNING)."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        raise LookupError(f"the query returned no row: {str(query)[:80]}")
    return row
