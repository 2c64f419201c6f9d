"""Embed the chunks that lack a vector, a page at a time, so an interrupted run resumes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..db import Conn, first
from ..db.errors import translated
from ..db.migrate import NO_VECTORS, vectors_ready
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import ConfigError, InputError
from .embedders import Embedder, vector_literal
from .scan import chunk_embed_text

if TYPE_CHECKING:
    import numpy as np

PAGE = 512


@dataclass
class EmbedSummary:
    model: str
    embedded: int = 0
    total: int = 0
    seconds: float = 0.0
    # Fact vectors `vault embed` stored after the chunks (facts written before the model
    # existed), and why it stored none when it could not (store/vectors.py embed_missing).
    facts: int = 0
    facts_skipped: str | None = None

    def line(self) -> str:
        rate = self.embedded / self.seconds if self.seconds else 0
        line = f"{self.embedded} chunks embedded with {self.model} in {self.seconds:.1f} s ({rate:.0f}/s)"
        if self.facts:
            line += f"; {self.facts} fact vector{'' if self.facts == 1 else 's'} stored"
        return line


@owns_transaction
def require_vectors(conn: Conn) -> None:
    """Refuse, in one line, on a database without its vector parts (docs/operations.md, Team server):
    called before a model is loaded, which takes seconds."""
    if not vectors_ready(conn):
        raise ConfigError(NO_VECTORS)


@owns_transaction
def embed_pending(
    conn: Conn,
    embedder: Embedder,
    *,
    batch: int = 64,
    reset: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> EmbedSummary:
    started = time.perf_counter()
    summary = EmbedSummary(embedder.name)
    with translated(conn):
        require_vectors(conn)
        stored = conn.execute(sql("vault.get_meta"), {"key": "embed_model"}).fetchone()
        if stored and stored["value"] != embedder.name and not reset:
            raise InputError(
                f"the vault's vectors were made with {stored['value']}, not {embedder.name}; "
                "pass --reset to re-embed everything with the new model"
            )
        if reset:
            conn.execute(sql("embed.reset"))
        conn.execute(sql("vault.set_meta"), {"key": "embed_model", "value": embedder.name})
        conn.commit()
        summary.total = first(conn, sql("embed.pending_count"))["n"]
        while True:
            rows = conn.execute(sql("embed.pending_page"), {"limit": PAGE}).fetchall()
            if not rows:
                break
            texts = [chunk_embed_text(r["title"], r["heading"], r["content"]) for r in rows]
            # Batches of similar length: a batch pads to its longest text, so mixing one long
            # chunk with short ones wastes most of the work (benchmarks/embed_speed.py).
            order = sorted(range(len(rows)), key=lambda i: len(texts[i]))
            rows, texts = [rows[i] for i in order], [texts[i] for i in order]
            vectors: list[np.ndarray] = []
            for start in range(0, len(texts), batch):
                vectors.extend(embedder.embed(texts[start : start + batch]))
                if progress:
                    progress(summary.embedded + min(start + batch, len(texts)), summary.total, "chunks")
            conn.cursor().executemany(
                sql("embed.store"),
                [
                    {"id": r["id"], "embedding": vector_literal(v), "model": embedder.name}
                    for r, v in zip(rows, vectors, strict=True)
                ],
            )
            conn.commit()
            summary.embedded += len(rows)
    summary.seconds = time.perf_counter() - started
    return summary
