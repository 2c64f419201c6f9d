"""Golden-set runs with history, noise and context-cost probes, and a stale-memory check."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
from psycopg import errors as pgerr

from .checks import source_form
from .db.errors import translated
from .db.queries import sql
from .errors import InputError, NotFound
from .golden import Case, line_problem, read_text
from .recall.answer import recall
from .recall.memory_arm import MEMORY_DIR

if TYPE_CHECKING:
    from .config import Settings
    from .vault.embedders import Embedder

CHARS_PER_TOKEN = 4  # an estimate, not a tokenizer count


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


def _p95(values: list[float]) -> float:
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


def run_golden(
    conn: psycopg.Connection,
    cases: list[Case],
    *,
    settings: Settings,
    limit: int = 8,
    project: str | None = None,
    embedder: Embedder | None = None,
    progress=None,
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


def git_commit(start: Path | None = None) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=start or Path.cwd(), capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def save_run(conn: psycopg.Connection, name: str, run: GoldenRun, *, golden_file: str, project: str | None) -> int:
    with translated(conn):
        size = conn.execute(sql("evaluation.vault_size")).fetchone()
        try:
            with conn.transaction():
                row = conn.execute(
                    sql("evaluation.save_run"),
                    {
                        "name": name,
                        "git_commit": git_commit(),
                        "embedder": size["embedder"],
                        "vault_files": size["files"],
                        "vault_chunks": size["chunks"],
                        "golden_file": golden_file,
                        "k": run.k,
                        "project": project,
                        "summary": json.dumps(
                            {"overall": asdict(run.overall), "by_tag": {t: asdict(f) for t, f in run.by_tag.items()}}
                        ),
                        "cases": json.dumps([asdict(c) for c in run.cases]),
                    },
                ).fetchone()
        except pgerr.UniqueViolation:
            raise InputError(f"a run of yours named {name!r} exists already; pick another name") from None
        except pgerr.CheckViolation:
            raise InputError(f"run name {name!r}: letters, digits and . _ : @ + - only") from None
        conn.commit()
    return row["id"]


@dataclass
class SavedRun:
    name: str
    author: str | None
    created_at: datetime
    git_commit: str | None
    embedder: str | None
    vault_files: int | None
    k: int
    overall: Figures
    cases: list[CaseResult]


def load_run(conn: psycopg.Connection, name: str) -> SavedRun:
    """A saved run by NAME (yours first, else the one run of that name) or AUTHOR/NAME.

    Names are unique per author (migration 0008), so a name another agent chose never
    hides or replaces yours; a run that is not what a run should be is refused by name."""
    author, _, plain = name.rpartition("/")
    with translated(conn):
        rows = conn.execute(sql("evaluation.get_run"), {"name": plain, "author": author or None}).fetchall()
    if not rows:
        raise NotFound(f"no saved run named {name!r}; see `cli-org eval history`")
    if len(rows) > 1:
        names = ", ".join(_label(r) for r in rows)
        raise InputError(f"several agents saved a run named {name!r}: {names}; name one as AUTHOR/NAME")
    row = rows[0]
    try:
        return SavedRun(
            _label(row),
            row["author"],
            row["created_at"],
            row["git_commit"],
            row["embedder"],
            row["vault_files"],
            row["k"],
            Figures(**row["summary"]["overall"]),
            [CaseResult(**c) for c in row["cases"]],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"saved run {_label(row)!r} is malformed ({type(exc).__name__}: {exc})") from None


def _label(row: dict) -> str:
    return f"{row['author']}/{row['name']}" if row["author"] else row["name"]


@dataclass
class HistoryRow:
    name: str  # AUTHOR/NAME when an agent saved it
    author: str | None
    created_at: datetime
    git_commit: str | None
    embedder: str | None
    vault_files: int | None
    golden_file: str
    k: int
    overall: Figures | None  # None when the saved run is malformed
    problem: str | None = None


def history(conn: psycopg.Connection) -> list[HistoryRow]:
    """Every saved run, oldest first; a malformed one is listed with what is wrong."""
    with translated(conn):
        rows = conn.execute(sql("evaluation.runs")).fetchall()
    out = []
    for r in rows:
        overall, problem = None, None
        try:
            overall = Figures(**r["summary"]["overall"])
            float(overall.hit_rate), float(overall.chars_median)
        except (KeyError, TypeError, ValueError) as exc:
            overall, problem = None, f"malformed ({type(exc).__name__}: {exc})"
        out.append(
            HistoryRow(
                _label(r),
                r["author"],
                r["created_at"],
                r["git_commit"],
                r["embedder"],
                r["vault_files"],
                r["golden_file"],
                r["k"],
                overall,
                problem,
            )
        )
    return out


@dataclass
class Comparison:
    a: SavedRun
    b: SavedRun
    rows: list[dict]  # metric, a, b, delta, better
    now_hit: list[str]  # miss in A, hit in B
    now_miss: list[str]  # hit in A, miss in B
    verdict: str


def compare(a: SavedRun, b: SavedRun) -> Comparison:
    metrics = [
        ("hit@k", "hit_rate", True),
        ("MRR", "mrr", True),
        ("chars median", "chars_median", False),
        ("chars p95", "chars_p95", False),
        ("ms median", "ms_median", False),
        ("ms p95", "ms_p95", False),
    ]
    rows = []
    for label, attr, higher_is_better in metrics:
        va, vb = getattr(a.overall, attr), getattr(b.overall, attr)
        delta = vb - va
        better = "same" if abs(delta) < 1e-9 else ("better" if (delta > 0) == higher_is_better else "worse")
        rows.append({"metric": label, "a": va, "b": vb, "delta": delta, "change": better})
    before = {c.question: c for c in a.cases}
    now_hit = [c.question for c in b.cases if c.position and c.question in before and not before[c.question].position]
    now_miss = [c.question for c in b.cases if not c.position and c.question in before and before[c.question].position]
    hit, chars = rows[0]["change"], rows[2]["change"]
    if hit == "better" and chars in ("better", "same") or hit == "same" and chars == "better":
        verdict = (
            "a clear win: hit@k held or rose and answers got no longer"
            if hit == "same"
            else "a clear win: hit@k rose and answers got no longer"
        )
    elif hit == "worse":
        verdict = "a regression: hit@k fell"
    elif chars == "worse":
        verdict = "hit@k held, but answers got longer"
    else:
        verdict = "no change in hit@k or median characters"
    return Comparison(a, b, rows, now_hit, now_miss, verdict)


@dataclass
class NoiseResult:
    query: str
    hits: int
    chars: int
    arms: list[str]


def run_noise(conn, queries: list[str], *, settings: Settings, limit: int = 8, embedder=None) -> list[NoiseResult]:
    out = []
    for query in queries:
        answer = recall(conn, query, settings=settings, limit=limit, embedder=embedder, log=False)
        out.append(NoiseResult(query, len(answer.hits), answer.chars, answer.arms))
    return out


def parse_queries(text: str, source: str = "the noise file") -> list[str]:
    """One query a line, comments (#) and blank lines aside; a line that cannot be a query
    refuses the whole file, naming it."""
    queries, problems = [], []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        problem = line_problem(line)
        if problem:
            problems.append(f"line {number}: {problem}")
        queries.append(line)
    if problems:
        raise InputError(f"{source}: " + "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""))
    if not queries:
        raise InputError(f"{source} holds no queries")
    return queries


def load_queries(path: Path) -> list[str]:
    return parse_queries(read_text(path), str(path))


# --- what memory costs the context ------------------------------------------------------

_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build"}
STANDING = {"AGENTS.md", "CLAUDE.md", "AGENTS.local.md", "CLAUDE.local.md"}
LONG_LINE = 200


@dataclass
class CostRow:
    kind: str
    files: int
    chars: int
    long_lines: int
    paths: list[str]

    @property
    def tokens_estimate(self) -> int:
        return round(self.chars / CHARS_PER_TOKEN)


def _walk_files(root: Path):
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        if any(p in _SKIP_DIRS for p in rel[:-1]) or not path.is_file():
            continue
        yield path


def context_cost(root: Path) -> list[CostRow]:
    if not root.is_dir():
        raise InputError(f"{root} is not a folder")
    groups: dict[str, list[Path]] = {"standing instructions": [], "harness memory index": [], "bot memory files": []}
    memory_dir = root / MEMORY_DIR
    for path in _walk_files(root):
        if path.name in STANDING:
            groups["standing instructions"].append(path)
        elif path.name == "MEMORY.md":
            groups["harness memory index"].append(path)
        elif path.suffix == ".md" and memory_dir in path.parents:
            groups["bot memory files"].append(path)
    rows = []
    for kind, paths in groups.items():
        chars = long_lines = 0
        for path in paths:
            text = path.read_text("utf-8", errors="replace")
            chars += len(text)
            long_lines += sum(1 for line in text.splitlines() if len(line) > LONG_LINE)
        rows.append(CostRow(kind, len(paths), chars, long_lines, [str(p.relative_to(root)) for p in paths]))
    return rows


def typical_recall(conn: psycopg.Connection) -> dict:
    with translated(conn):
        return conn.execute(sql("evaluation.typical_recall")).fetchone()


# --- stale memory ----------------------------------------------------------------------

_BACKTICK = re.compile(r"`([^`\s]{2,200})`")
_PATHLIKE = re.compile(r"^(?:\.{0,2}/)?[\w@.+-]+(?:/[\w@.+-]+)*(?:\.[A-Za-z0-9]{1,8}|/)$")


@dataclass
class StaleItem:
    where: str  # file:line or fact #id
    cited: str
    problem: str


def cited_paths(text: str) -> list[str]:
    return [m for m in _BACKTICK.findall(text) if _PATHLIKE.match(m) and ("/" in m or "." in m.strip("."))]


def _exists(root: Path, cited: str) -> bool:
    clean = cited.split(":", 1)[0].rstrip("/")
    if (root / clean).exists():
        return True
    # A bare file name may live anywhere in the tree.
    return "/" not in clean and any(True for _ in root.rglob(clean))


def stale(conn: psycopg.Connection | None, root: Path) -> list[StaleItem]:
    if not root.is_dir():
        raise InputError(f"{root} is not a folder")
    items = []
    memory_dir = root / MEMORY_DIR
    for path in sorted(memory_dir.rglob("*.md")) if memory_dir.is_dir() else []:
        for number, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            for cited in cited_paths(line):
                if not _exists(root, cited):
                    items.append(StaleItem(f"{path.relative_to(root)}:{number}", cited, "missing"))
    if conn is not None:
        with translated(conn):
            fact_rows = conn.execute(sql("evaluation.facts_for_stale")).fetchall()
        for row in fact_rows:
            where = f"fact #{row['id']}"
            for cited in cited_paths(row["claim"]):
                if not _exists(root, cited):
                    items.append(StaleItem(where, cited, "missing"))
            if source_form(row["source"]) == "path" and not row["source"].startswith(("~", "/")):
                target = root / row["source"].split(":", 1)[0]
                if not target.exists():
                    items.append(StaleItem(where, row["source"], "source missing"))
                elif datetime.fromtimestamp(target.stat().st_mtime, UTC) > row["created_at"]:
                    items.append(StaleItem(where, row["source"], "source changed after the fact was written"))
    return items
