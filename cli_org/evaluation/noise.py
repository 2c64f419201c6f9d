"""Noise runs: queries that must find nothing, each through recall (not logged as usage)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..db import Conn
from ..db.session import owns_transaction
from ..errors import ThresholdNotMet
from ..recall.answer import recall

if TYPE_CHECKING:
    from ..config import Settings
    from ..vault.embedders import Embedder


@dataclass
class NoiseResult:
    query: str
    hits: int
    chars: int  # characters of the answer
    arms: list[str]  # the arms that answered


@dataclass
class NoiseRun:
    k: int
    queries: list[NoiseResult]
    passed: int  # queries that found nothing
    failed: int  # queries that found something


@owns_transaction
def run_noise(
    conn: Conn,
    queries: list[str],
    *,
    settings: Settings,
    limit: int = 8,
    embedder: Embedder | None = None,
) -> NoiseRun:
    results = []
    for query in queries:
        answer = recall(conn, query, settings=settings, limit=limit, embedder=embedder, log=False)
        results.append(NoiseResult(query, len(answer.hits), answer.chars, answer.arms))
    failed = sum(1 for r in results if r.hits)
    return NoiseRun(limit, results, len(results) - failed, failed)


def require_quiet(run: NoiseRun) -> None:
    """The noise check: every query must find nothing."""
    if run.failed:
        raise ThresholdNotMet(f"{run.failed} of {len(run.queries)} noise queries found something")
