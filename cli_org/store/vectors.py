"""Fact vectors, computed when facts are written: `remember` embeds its claim, an import its
facts, a restore a fact that never had one; `cli-org facts embed` does the same for facts
loaded in bulk. Recall only reads them: it never writes (a read replica could not, and a
read that writes holds locks and makes a team server's recall a write).

Who computes a vector, and which vectors recall trusts, is migration 0017's rule: one
computed by the fact's author, or by the reader itself. So an agent embeds its own facts,
and the admin, who writes imported rows as their authors, writes their vectors as the
authors too (inside the transaction, as transfer.py lifts row-level security for the rows).
The admin's `facts embed` and import are the only writers of a vector as someone else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from psycopg import sql as pgsql

from ..db import Conn, first
from ..db.migrate import NO_VECTORS, vectors_ready
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import ConfigError, InputError

if TYPE_CHECKING:
    from ..vault.embedders import Embedder

# Facts embedded per batch by `facts embed`: one transaction each (the admin's batch holds
# the vectors table locked while it runs, so recalls wait at most one batch).
BATCH = 256


def fact_text(subject: str, claim: str) -> str:
    """What a fact's vector embeds: its subject and claim, as the fact line shows them."""
    return f"{subject}: {claim}"


def store_vectors(
    conn: Conn,
    embedder: Embedder,
    facts: Sequence[Any],
    *,
    as_authors: bool = False,
    vectors: Sequence[Any] | None = None,
) -> int:
    """Embed and store the vectors of `facts` (rows with id, subject, claim and, with
    `as_authors`, author), in the caller's transaction; a vector already there stays.
    `vectors`: theirs, computed already by the caller (`remember` judges with it first). On a
    database without pgvector (a team server may lack it) there is nowhere to store them:
    the write goes on without, as recall falls back to words there."""
    if not facts or not vectors_ready(conn):
        return 0
    from ..vault.embedders import vector_literal

    computed = vectors if vectors is not None else embedder.embed([fact_text(f["subject"], f["claim"]) for f in facts])
    params = [
        {
            "id": f["id"],
            "model": embedder.name,
            "embedding": vector_literal(v),
            "author": f["author"] if as_authors else None,
        }
        for f, v in zip(facts, computed, strict=True)
    ]
    with conn.cursor() as cur:
        cur.executemany(sql("fact_vectors.store"), params)
    return len(params)


def store_as_authors(conn: Conn, embedder: Embedder, facts: Sequence[Any]) -> int:
    """The admin stores the vectors of `facts` as their authors: row-level security, forced
    on the table for its owner too, is lifted inside the caller's transaction only (nobody
    sees the gap; a failure rolls the change back with the rest)."""
    if not facts or not vectors_ready(conn):
        return 0
    conn.execute(pgsql.SQL("ALTER TABLE memory_fact_vectors NO FORCE ROW LEVEL SECURITY"))
    stored = store_vectors(conn, embedder, facts, as_authors=True)
    conn.execute(pgsql.SQL("ALTER TABLE memory_fact_vectors FORCE ROW LEVEL SECURITY"))
    return stored


def store_unembedded(conn: Conn, embedder: Embedder, ids: Sequence[int], *, as_authors: bool = False) -> int:
    """Of the facts `ids`, embed the current ones that lack their author's vector (an import's
    facts, a restored fact), in the caller's transaction; nothing without pgvector."""
    if not ids or not vectors_ready(conn):
        return 0
    missing = conn.execute(sql("fact_vectors.unembedded"), {"ids": list(ids), "model": embedder.name}).fetchall()
    return store_as_authors(conn, embedder, missing) if as_authors else store_vectors(conn, embedder, missing)


@owns_transaction
def embed_missing(conn: Conn, embedder: Embedder, *, progress: Callable[[int, int], None] | None = None) -> int:
    """Embed every current fact that lacks its author's vector of this model: as an agent, its
    own facts; as the admin, every author's, written as the author. Returns how many; one
    transaction per BATCH, so an interruption keeps what was done and a rerun goes on."""
    if not vectors_ready(conn):
        raise ConfigError(NO_VECTORS)
    me = first(conn, sql("facts.me"))
    admin = me["name"] is None
    if admin and not first(conn, sql("fact_vectors.is_admin"))["admin"]:
        raise InputError("embedding facts needs an agent (--as/ORG_AGENT) or the database admin")
    todo = int(first(conn, sql("fact_vectors.missing_count"), {"model": embedder.name, "all": admin})["n"])
    conn.commit()
    done, after = 0, 0
    while done < todo:
        rows = conn.execute(
            sql("fact_vectors.missing"), {"model": embedder.name, "all": admin, "after": after, "limit": BATCH}
        ).fetchall()
        if not rows:
            break
        done += store_as_authors(conn, embedder, rows) if admin else store_vectors(conn, embedder, rows)
        conn.commit()
        after = rows[-1]["id"]
        if progress:
            progress(min(done, todo), todo)
    return done
