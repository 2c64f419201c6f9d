"""What a recall works out before its arms, read in one statement (`recall.inputs`): each
round trip saved is one a team server no longer waits for (benchmarks/RESULTS.md, "Round
trips of a warm recall"). An arm called on its own reads its part through the same statement."""

from __future__ import annotations

from psycopg.rows import DictRow

from ..db import Conn, first
from ..db.queries import sql

# Facts counted for recall's notice: the newest this many on the list of facts without a
# vector (migration 0038), of which the notice counts those the reader can see.
UNEMBEDDED_SCAN = 1000


def read_inputs(
    conn: Conn,
    *,
    texts: list[str] | None = None,
    words: list[str] | None = None,
    notebook: bool = False,
    counted: bool = False,
    ef_search: int | None = None,
) -> DictRow:
    """`pieces` of `texts`, the `unknown` of `words`, the caller's `notebook` entries, with
    `counted` the `unembedded` count (`recall.inputs_counted`: it needs pgvector), and with
    `ef_search` the fact arm's HNSW settings set for the transaction; NULL for a part not asked."""
    return first(
        conn,
        sql("recall.inputs_counted" if counted else "recall.inputs"),
        {
            "texts": texts,
            "words": words,
            "notebook": notebook,
            "scan": UNEMBEDDED_SCAN,
            "ef_search": None if ef_search is None else str(min(1000, ef_search)),
        },
    )
