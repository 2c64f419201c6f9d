"""Hook runs: every prompt of a hook set through the prompt hook itself, as the connected
agent, scored on what the hook would add to the session.

Two rates, because a hook runs on every prompt of every session: the quiet rate (prompts
that need nothing get nothing) and the needed-fact rate (prompts that need a fact get it).
No session id is given, so nothing is remembered as delivered and each prompt stands
alone. Unlike the real hook, a run's recalls are not logged in recall_events: an evaluation
is no use of the memory (as with `eval golden`).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..db import Conn
from ..db.session import owns_transaction
from ..errors import InputError, ThresholdNotMet
from ..session.hooks import HookInput, claude_code_hook
from .cases import HookCase

if TYPE_CHECKING:
    from ..config import Settings
    from ..vault.embedders import Embedder


@dataclass
class HookResult:
    prompt: str
    expected: str | None  # None: a quiet case
    tag: str
    injected: str  # the text the hook adds to the session ("" when it adds nothing)
    found: bool | None  # a needed case: the injection holds the expected phrase; quiet: None
    ms: float


@dataclass
class HookFigures:
    quiet_n: int
    quiet_rate: float | None  # share of quiet cases with no injection; None without quiet cases
    needed_n: int
    needed_rate: float | None  # share of needed cases whose injection holds the phrase
    injections: int  # prompts that got any injection, of either kind
    chars_median: float | None  # characters per non-empty injection


@dataclass
class HookRun:
    overall: HookFigures
    by_tag: dict[str, float]  # needed-fact rate per tag, when the needed cases carry several
    cases: list[HookResult] = field(default_factory=list)


def injected_text(output: str) -> str:
    """What the model reads from the hook's stdout: its additionalContext, or nothing."""
    return json.loads(output)["hookSpecificOutput"]["additionalContext"] if output else ""


def hook_figures(results: list[HookResult]) -> HookFigures:
    quiet = [r for r in results if r.expected is None]
    needed = [r for r in results if r.expected is not None]
    chars = [len(r.injected) for r in results if r.injected]
    return HookFigures(
        quiet_n=len(quiet),
        quiet_rate=sum(1 for r in quiet if not r.injected) / len(quiet) if quiet else None,
        needed_n=len(needed),
        needed_rate=sum(1 for r in needed if r.found) / len(needed) if needed else None,
        injections=len(chars),
        chars_median=statistics.median(chars) if chars else None,
    )


@owns_transaction
def run_hook(
    conn: Conn,
    cases: list[HookCase],
    *,
    settings: Settings,
    embedder: Embedder | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> HookRun:
    """Every case through the Claude Code prompt hook's own call, with no session and no
    working folder: what a harness would add to the turn for that prompt."""
    results = []
    for i, case in enumerate(cases):
        started = time.perf_counter()
        hook = HookInput("UserPromptSubmit", None, case.prompt, None)
        text = injected_text(claude_code_hook(conn, "prompt", hook, settings=settings, embedder=embedder, log=False))
        found = None if case.expected is None else case.expected.lower() in text.lower()
        ms = round((time.perf_counter() - started) * 1000, 1)
        results.append(HookResult(case.prompt, case.expected, case.tag, text, found, ms))
        if progress:
            progress(i + 1, len(cases), case.prompt)
    needed = [r for r in results if r.expected is not None]
    tags = sorted({r.tag for r in needed})
    by_tag = {}
    if len(tags) > 1:
        for tag in tags:
            tagged = [r for r in needed if r.tag == tag]
            by_tag[tag] = sum(1 for r in tagged if r.found) / len(tagged)
    return HookRun(hook_figures(results), by_tag, results)


def require_hook_rates(run: HookRun, min_quiet: float | None, min_needed: float | None) -> None:
    """The `--min-quiet` and `--min-needed` checks: a rate below its floor fails the run; a
    floor on a rate the files give no case for is a mistake in the call, not a pass."""
    checks = (
        ("quiet rate", "--min-quiet", run.overall.quiet_rate, min_quiet),
        ("needed-fact rate", "--min-needed", run.overall.needed_rate, min_needed),
    )
    for name, option, rate, floor in checks:
        if floor is not None and rate is None:
            raise InputError(f"{option} given, but no case measures the {name}")
    failed = [
        f"{name} {rate:.3f} is below {option} {floor}"
        for name, option, rate, floor in checks
        if floor is not None and rate is not None and rate < floor
    ]
    if failed:
        raise ThresholdNotMet("; ".join(failed))
