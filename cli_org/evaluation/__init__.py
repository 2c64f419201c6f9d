"""Measuring recall: golden runs, saved runs and their comparison, noise, context cost and
stale memory. Every function returns dataclasses; the CLI only renders them."""

from .cases import Case, line_problem, load_golden, load_queries, parse_golden, parse_queries, read_text
from .compare import CaseChange, Comparison, MetricRow, changed_cases, compare, verdict
from .cost import CHARS_PER_TOKEN, ContextCost, CostRow, TypicalRecall, context_cost, typical_recall
from .golden import CaseResult, Figures, GoldenRun, figures, first_position, require_hit_rate, run_golden
from .noise import NoiseResult, NoiseRun, require_quiet, run_noise
from .runs import HistoryRow, SavedRun, git_commit, load_run, run_history, save_run
from .stale import StaleItem, StaleReport, cited_paths, stale

__all__ = [
    "CHARS_PER_TOKEN",
    "Case",
    "CaseChange",
    "CaseResult",
    "Comparison",
    "ContextCost",
    "CostRow",
    "Figures",
    "GoldenRun",
    "HistoryRow",
    "MetricRow",
    "NoiseResult",
    "NoiseRun",
    "SavedRun",
    "StaleItem",
    "StaleReport",
    "TypicalRecall",
    "cited_paths",
    "changed_cases",
    "compare",
    "context_cost",
    "figures",
    "first_position",
    "git_commit",
    "run_history",
    "line_problem",
    "load_golden",
    "load_queries",
    "load_run",
    "parse_golden",
    "parse_queries",
    "read_text",
    "require_hit_rate",
    "require_quiet",
    "run_golden",
    "run_noise",
    "save_run",
    "stale",
    "typical_recall",
    "verdict",
]
