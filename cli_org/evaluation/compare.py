"""Two saved runs side by side: per-metric deltas, the cases that flipped, and a verdict
that says what changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..db import Conn
from ..db.session import owns_transaction
from .runs import SavedRun, load_with_previous

# (label, attribute of Figures, unit, higher is better)
METRICS = [
    ("hit@k", "hit_rate", "rate", True),
    ("MRR", "mrr", "rate", True),
    ("chars median", "chars_median", "chars", False),
    ("chars p95", "chars_p95", "chars", False),
    ("ms median", "ms_median", "ms", False),
    ("ms p95", "ms_p95", "ms", False),
]

# The metrics whose value depends on the cut-off k: between runs of a different k their
# change is "not comparable", and so is the verdict.
_DEPENDS_ON_K = {"hit_rate", "mrr", "chars_median", "chars_p95"}
NOT_COMPARABLE = "not comparable"

# A change smaller than the precision a metric is shown with is no change: the words of the
# verdict never contradict the numbers printed beside them.
_RESOLUTION = {"rate": 0.0005, "chars": 0.5, "ms": 0.5}


def format_value(unit: str, value: float) -> str:
    """Rates with three decimals; characters and milliseconds as whole numbers."""
    return f"{value:.3f}" if unit == "rate" else f"{value:,.0f}"


def format_delta(unit: str, delta: float) -> str:
    """Like format_value, always signed."""
    return f"{delta:+.3f}" if unit == "rate" else f"{delta:+,.0f}"


def direction(unit: str, delta: float) -> str:
    """rose, fell or held, at the precision the metric is shown with."""
    if abs(delta) < _RESOLUTION[unit]:
        return "held"
    return "rose" if delta > 0 else "fell"


@dataclass
class MetricRow:
    metric: str
    unit: str  # rate | chars | ms
    a: float
    b: float
    delta: float  # b - a
    direction: str  # rose | fell | held
    change: str  # better | worse | same | not comparable (runs of a different k)


@dataclass
class CaseChange:
    """A case (by question) in both runs whose rank moved: a flip or a hit that rose or fell."""

    question: str
    expected: str
    position_a: int | None  # None: a miss
    position_b: int | None
    chars_a: int
    chars_b: int
    change: str  # now hit | now miss | rose | fell (rank 1 is the top)


def _change(a: int | None, b: int | None) -> str:
    if not a:
        return "now hit"
    if not b:
        return "now miss"
    return "rose" if b < a else "fell"


def changed_cases(a: SavedRun, b: SavedRun) -> list[CaseChange]:
    """The cases of B whose first hit position differs from A's, flips first, in B's order."""
    before = {c.question: c for c in a.cases}
    out = [
        CaseChange(
            c.question, c.expected, was.position, c.position, was.chars, c.chars, _change(was.position, c.position)
        )
        for c in b.cases
        if (was := before.get(c.question)) is not None and was.position != c.position
    ]
    order = {"now miss": 0, "now hit": 1, "fell": 2, "rose": 3}
    return sorted(out, key=lambda x: order[x.change])


@dataclass
class Comparison:
    a: str  # the runs' names (AUTHOR/NAME when an agent saved them)
    b: str
    k_a: int
    k_b: int
    rows: list[MetricRow]
    now_hit: list[str]  # miss in A, hit in B
    now_miss: list[str]  # hit in A, miss in B
    hit: str  # rose | fell | held: hit@k from A to B
    chars: str  # rose | fell | held: median characters from A to B
    verdict: str
    warnings: list[str]
    changed: list[CaseChange] = field(default_factory=list)  # every case whose rank moved


def _row(label: str, attr: str, unit: str, higher_is_better: bool, a: SavedRun, b: SavedRun) -> MetricRow:
    va, vb = getattr(a.overall, attr), getattr(b.overall, attr)
    delta = vb - va
    moved = direction(unit, delta)
    change = "same" if moved == "held" else ("better" if (moved == "rose") == higher_is_better else "worse")
    if a.k != b.k and attr in _DEPENDS_ON_K:
        change = NOT_COMPARABLE
    return MetricRow(label, unit, va, vb, delta, moved, change)


def _said(name: str, row: MetricRow) -> str:
    if row.direction == "held":
        return f"{name} held at {format_value(row.unit, row.b)}"
    return (
        f"{name} {row.direction} from {format_value(row.unit, row.a)} to {format_value(row.unit, row.b)} "
        f"({format_delta(row.unit, row.delta)})"
    )


def verdict(hit: MetricRow, chars: MetricRow, k: int | None = None) -> str:
    """One line: a judgement, then what hit@k and the median characters actually did.

    hit@k comes first: a fall is a regression whatever the length did; a rise that costs
    characters is a trade-off; with hit@k held, shorter answers win and longer ones lose.
    Runs of a different k (the rows say "not comparable") get no judgement."""
    if hit.change == NOT_COMPARABLE:
        judgement = NOT_COMPARABLE
    elif hit.direction == "fell":
        judgement = "a regression"
    elif hit.direction == "rose":
        judgement = "a trade-off" if chars.direction == "rose" else "a clear win"
    else:
        judgement = {"fell": "a clear win", "rose": "a regression", "held": "no change"}[chars.direction]
    return f"{judgement}: {_said(f'hit@{k}' if k else 'hit@k', hit)}; {_said('median characters', chars)}"


def compare(a: SavedRun, b: SavedRun) -> Comparison:
    rows = [_row(label, attr, unit, better, a, b) for label, attr, unit, better in METRICS]
    hit, chars = rows[0], rows[2]
    before = {c.question: c for c in a.cases}
    now_hit = [c.question for c in b.cases if c.position and c.question in before and not before[c.question].position]
    now_miss = [c.question for c in b.cases if not c.position and c.question in before and before[c.question].position]
    warnings = []
    if a.k != b.k:
        warnings.append(
            f"the runs used different --limit (k={a.k} for {a.name}, k={b.k} for {b.name}): "
            "hit@k and characters are not comparable"
        )
    return Comparison(
        a.name,
        b.name,
        a.k,
        b.k,
        rows,
        now_hit,
        now_miss,
        hit.direction,
        chars.direction,
        verdict(hit, chars, a.k if a.k == b.k else None),
        warnings,
        changed_cases(a, b),
    )


@dataclass
class VersusPrevious:
    """A run against the run of the same golden file and k saved just before it."""

    run: str
    golden_file: str | None
    k: int
    previous: str | None  # None: the first run of its set, nothing to compare with
    comparison: Comparison | None  # previous -> run


@owns_transaction
def compare_with_previous(conn: Conn, name: str) -> VersusPrevious:
    """Run `name` compared with the previous run of its golden file and k (A: that one)."""
    run, before = load_with_previous(conn, name)
    result = compare(before, run) if before else None
    return VersusPrevious(run.name, run.golden_file, run.k, before.name if before else None, result)
