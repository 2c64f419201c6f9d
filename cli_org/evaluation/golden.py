"""Golden runs: every case through recall, scored on where the expected text first appears."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..db import Conn
from ..db.session import owns_transaction
from ..errors import ThresholdNotMet
from ..recall.answer import recall
from .cases import Case

if TYPE_CHECKING:
    from ..config import Settings
    from ..vault.embedders import Embedder


@dataclass
class CaseResult:
    question: str
    expected: str
    tag: str
    position: int | None  # first hit line holding the expected text, 1-based; None is a miss
    chars: int
    ms: float


@dataclass
class Figures:
    n: int
    hit_rate: float
    mrr: float
    chars_median: float
    chars_p95: float
    ms_median: float
    ms_p95: float


@dataclass
class GoldenRun:
    k: int
    overall: Figures
    by_tag: dict[str, Figures]
    cases: list[CaseResult] = field(default_factory=list)


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def figures(results: list[CaseResult]) -> Figures:
    chars = [r.chars for r in results]
    ms = [r.ms for r in results]
    return Figures(
        n=len(results),
        hit_rate=sum(1 for r in results if r.position) / len(results),
        mrr=sum(1 / r.position for r in results if r.position) / len(results),
        chars_median=statistics.median(chars),
        chars_p95=_p95(chars),
        ms_median=statistics.median(ms),
        ms_p95=_p95(ms),
    )


def first_position(lines: list[str], expected: str) -> int | None:
    needle = expected.lower()
    return next((i for i, line in enumerate(lines, 1) if needle in line.lower()), None)


@owns_transaction
def run_golden(
    conn: Conn,
    cases: list[Case],
    *,
    settings: Settings,
    limit: int = 8,
    project: str | None = None,
    embedder: Embedder | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> GoldenRun:
    """Every case through recall itself (not logged as usage), scored on its text answer."""
    results = []
    for i, case in enumerate(cases):
        answer = recall(
            conn, case.question, settings=settings, project=project, limit=limit, embedder=embedder, log=False
        )
        lines = [h.text for h in answer.hits]
        results.append(
            CaseResult(
                case.question,
                case.expected,
                case.tag,
                first_position(lines, case.expected),
                answer.chars,
                round(answer.ms, 1),
            )
        )
        if progress:
            progress(i + 1, len(cases), case.question)
    tags = sorted({r.tag for r in results})
    by_tag = {t: figures([r for r in results if r.tag == t]) for t in tags} if len(tags) > 1 else {}
    return GoldenRun(limit, figures(results), by_tag, results)


def require_hit_rate(run: GoldenRun, floor: float) -> None:
    """The `--min-hit` check: a run whose hit@k is below FLOOR fails."""
    if run.overall.hit_rate < floor:
        raise ThresholdNotMet(f"hit@{run.k} {run.overall.hit_rate:.3f} is below --min-hit {floor}")
