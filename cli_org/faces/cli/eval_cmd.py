"""eval golden / compare / history / noise / hook / cost / stale."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ...text import one_line
from .common import (
    Finite,
    OsPath,
    Progress,
    as_option,
    connection,
    emit_json,
    json_option,
    org,
    project_option,
    settings,
    this_operation,
)

if TYPE_CHECKING:
    from ...evaluation.golden import Figures
    from ...evaluation.hook import HookResult

_FILE = OsPath(exists=True, dir_okay=False, path_type=Path)


@click.group("eval")
def eval_group() -> None:
    """Measure recall: golden sets, saved runs, noise, the prompt hook, context cost and stale memory."""


def _fmt(figures: Figures, k: int) -> str:
    return (
        f"hit@{k} {figures.hit_rate:.3f}  MRR {figures.mrr:.3f}  chars median {figures.chars_median:,.0f} "
        f"p95 {figures.chars_p95:,.0f}  ms median {figures.ms_median:.0f} p95 {figures.ms_p95:.0f}  "
        f"(n={figures.n})"
    )


@eval_group.command()
@click.argument("file", type=_FILE)
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 50), help="k: hits per answer.")
@project_option("Recall within this project.")
@click.option("--save", "save_as", metavar="NAME", help="Store the run in eval_runs under NAME.")
@click.option("--min-hit", type=Finite(0, 1), metavar="RATE", help="Exit 1 if hit@k falls below RATE.")
@as_option
@json_option
def golden(
    file: Path,
    limit: int,
    project: str | None,
    save_as: str | None,
    min_hit: float | None,
    agent: str | None,
    as_json: bool,
) -> None:
    """Run every `question|expected substring[|tag]` case of FILE through recall.

    Reports where the expected text first appears (or MISS), characters and milliseconds
    per case, then hit@k, MRR, median and p95 characters and milliseconds, per tag too.
    """
    from ...evaluation import load_golden, require_hit_rate, run_golden, save_run

    cases = load_golden(file)  # a malformed file is refused before anything runs
    progress = Progress("golden")
    with org(agent, embed=True) as opened, opened.serving(this_operation()) as conn:
        run = run_golden(
            conn,
            cases,
            settings=opened.settings,
            limit=limit,
            project=project,
            embedder=opened.embedder,
            progress=progress,
        )
        progress.done()
        if save_as:
            save_run(conn, save_as, run, golden_file=str(file), project=project)
    if as_json:
        emit_json(run)
    else:
        click.echo(f"{'#':>3} {'pos':>4} {'chars':>6} {'ms':>8}  {'tag':<18} question")
        for i, c in enumerate(run.cases, 1):
            pos = str(c.position) if c.position else "MISS"
            click.echo(f"{i:3d} {pos:>4} {c.chars:6d} {c.ms:6.0f}ms  {one_line(c.tag):<18} {one_line(c.question)}")
        click.echo(_fmt(run.overall, limit))
        for tag, figures in run.by_tag.items():
            click.echo(f"  {one_line(tag):<18} {_fmt(figures, limit)}")
        if save_as:
            click.echo(f"saved as {save_as}")
    if min_hit is not None:
        require_hit_rate(run, min_hit)


@eval_group.command()
@click.argument("a")
@click.argument("b", required=False)
@as_option
@json_option
def compare(a: str, b: str | None, agent: str | None, as_json: bool) -> None:
    """Two saved runs side by side, with deltas and the cases that flipped.

    A and B are run names (your own first) or AUTHOR/NAME. With A alone: A against the run
    of the same golden file and k saved just before it."""
    from ...errors import InputError
    from ...evaluation import compare as run_compare
    from ...evaluation import compare_with_previous, load_run
    from ...evaluation.compare import format_delta, format_value

    with connection(agent) as conn:
        if b is not None:
            result = run_compare(load_run(conn, a), load_run(conn, b))
        else:
            versus = compare_with_previous(conn, a)
            if versus.comparison is None:
                raise InputError(
                    f"{versus.run} is the first saved run of {versus.golden_file} at k={versus.k}: "
                    "nothing before it to compare with"
                )
            result = versus.comparison
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        emit_json(result)
        return
    # Each run's column is as wide as its name and two spaces, so the headers never run together.
    name_a, name_b = one_line(result.a), one_line(result.b)
    wa, wb = max(14, len(name_a) + 2), max(14, len(name_b) + 2)
    click.echo(f"{'':14}{name_a:>{wa}}{name_b:>{wb}}{'delta':>12}")
    for row in result.rows:
        click.echo(
            f"{row.metric:<14}{format_value(row.unit, row.a):>{wa}}{format_value(row.unit, row.b):>{wb}}"
            f"{format_delta(row.unit, row.delta):>12}  {row.change}"
        )
    for label, flipped in (("miss -> hit", result.now_hit), ("hit -> miss", result.now_miss)):
        for question in flipped:
            click.echo(f"{label}: {one_line(question)}")
    click.echo(result.verdict)


@eval_group.command()
@click.option("--png", type=OsPath(dir_okay=False, path_type=Path), help="Also draw the chart to a PNG file.")
@as_option
@json_option
def history(png: Path | None, agent: str | None, as_json: bool) -> None:
    """Saved runs over time, with a chart of hit@k and characters per run."""
    from ...evaluation import run_history as load_history
    from ...local.files import check_target

    if png:
        check_target(png)  # before any work; checked again as it is written
    with connection(agent) as conn:
        runs = load_history(conn)
    good = [r for r in runs if r.overall]
    if png:
        _plot(good, png)
    if as_json:
        emit_json(runs)
        if png:
            click.echo(f"chart written to {png}", err=True)
        return
    if not runs:
        click.echo("no saved runs; use `cli-org eval golden FILE --save NAME`")
        return
    widest = max((r.overall.chars_median for r in good if r.overall), default=1) or 1
    for r in runs:
        when = f"{r.created_at:%Y-%m-%d %H:%M} {one_line(r.name):<16}"
        if r.overall is None:
            click.echo(f"{when} {r.problem}")
            continue
        o = r.overall
        hit_bar = "#" * round(o.hit_rate * 20)
        chars_bar = "=" * round(o.chars_median / widest * 20)
        click.echo(
            f"{when} hit@{r.k} {o.hit_rate:.3f} "
            f"{hit_bar:<20} chars {o.chars_median:>6,.0f} {chars_bar:<20} {one_line(r.git_commit)}"
            f"  {one_line(r.golden_file)}"
        )
    if png:
        click.echo(f"chart written to {png}")


def _plot(runs: list[Any], png: Path) -> None:
    import io

    from ...errors import ConfigError
    from ...local.files import write_private

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("--png needs matplotlib: pip install matplotlib") from None
    names = [r.name for r in runs]
    fig, left = plt.subplots(figsize=(max(6, len(runs) * 0.9), 4))
    left.plot(names, [r.overall.hit_rate for r in runs], "o-", color="tab:blue")
    left.set_ylabel("hit@k", color="tab:blue")
    left.set_ylim(0, 1.05)
    right = left.twinx()
    right.plot(names, [r.overall.chars_median for r in runs], "s--", color="tab:orange")
    right.set_ylabel("median characters", color="tab:orange")
    fig.autofmt_xdate()
    fig.tight_layout()
    drawn = io.BytesIO()
    fig.savefig(drawn, format="png", dpi=100)
    plt.close(fig)
    write_private(png, drawn.getvalue())  # the one rule for a file cli-org writes (local/files.py)


@eval_group.command()
@click.argument("file", type=_FILE)
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 50))
@as_option
@json_option
def noise(file: Path, limit: int, agent: str | None, as_json: bool) -> None:
    """Queries that must find nothing: each one's hits and characters; exit 1 if any finds something."""
    from ...evaluation import load_queries, require_quiet, run_noise

    queries = load_queries(file)
    with org(agent, embed=True) as opened, opened.serving(this_operation()) as conn:
        run = run_noise(conn, queries, settings=opened.settings, limit=limit, embedder=opened.embedder)
    if as_json:
        emit_json(run)
    else:
        for r in run.queries:
            click.echo(
                f"{'FAIL' if r.hits else 'ok':>4} {r.hits:2d} hits {r.chars:5d} chars  {one_line(r.query)}"
                + (f"  ({', '.join(r.arms)})" if r.arms else "")
            )
        click.echo(f"{run.passed} of {len(run.queries)} queries found nothing")
    require_quiet(run)


@eval_group.command()
@click.argument("files", nargs=-1, required=True, type=_FILE, metavar="FILE...")
@click.option("--min-quiet", type=Finite(0, 1), metavar="RATE", help="Exit 1 if the quiet rate falls below RATE.")
@click.option(
    "--min-needed", type=Finite(0, 1), metavar="RATE", help="Exit 1 if the needed-fact rate falls below RATE."
)
@as_option
@json_option
def hook(
    files: tuple[Path, ...], min_quiet: float | None, min_needed: float | None, agent: str | None, as_json: bool
) -> None:
    """Run every `prompt[|expected phrase[|tag]]` line of FILE... through the prompt hook.

    A line without a phrase must get no injection (the quiet rate); a line with one must get
    an injection that holds it (the needed-fact rate). Reports what each prompt got, both
    rates and the median characters per injection.
    """
    from ...evaluation import load_hook_cases, require_hook_rates, run_hook

    cases = [c for f in files for c in load_hook_cases(f)]  # a malformed file is refused before anything runs
    progress = Progress("hook")
    with org(agent, embed=True) as opened, opened.serving(this_operation()) as conn:
        run = run_hook(conn, cases, settings=opened.settings, embedder=opened.embedder, progress=progress)
        progress.done()
    if as_json:
        emit_json(run)
    else:
        click.echo(f"{'#':>3} {'result':<6} {'chars':>6} {'ms':>8}  {'tag':<12} prompt")
        for i, r in enumerate(run.cases, 1):
            mark = _hook_mark(r)
            click.echo(
                f"{i:3d} {mark:<6} {len(r.injected):6d} {r.ms:6.0f}ms  {one_line(r.tag):<12} {one_line(r.prompt)}"
            )
            for line in r.injected.splitlines() if r.expected is None else []:
                if line.strip():  # what a quiet prompt got
                    click.echo(f"{'':>10}{one_line(line)}")
        o = run.overall
        parts = []
        if o.quiet_rate is not None:
            parts.append(f"quiet {o.quiet_rate:.3f} (n={o.quiet_n})")
        if o.needed_rate is not None:
            parts.append(f"needed {o.needed_rate:.3f} (n={o.needed_n})")
        median = f"{o.chars_median:,.0f}" if o.chars_median is not None else "-"
        parts.append(f"injections {o.injections}, chars median {median}")
        click.echo("  ".join(parts))
        for tag, rate in run.by_tag.items():
            click.echo(f"  {one_line(tag):<12} needed {rate:.3f}")
    require_hook_rates(run, min_quiet, min_needed)


def _hook_mark(result: HookResult) -> str:
    if result.expected is None:
        return "ADDED" if result.injected else "QUIET"
    return "FOUND" if result.found else "MISS"


def _root(root: Path | None) -> Path:
    from ...local.project import project_root

    return root or project_root(settings().root)


@eval_group.command()
@click.option("--root", type=OsPath(file_okay=False, path_type=Path), help="Default: $ORG_ROOT or the git top.")
@json_option
def cost(root: Path | None, as_json: bool) -> None:
    """What memory costs the context: standing instructions, memory indexes, bot memory,
    long lines, and a typical recall (tokens estimated at 4 characters each).

    The memory index Claude Code keeps for this project in the home folder
    (projects/<project>/memory/MEMORY.md) counts too; a symlink there is not followed."""
    from ...errors import OrgError
    from ...evaluation import ContextCost, TypicalRecall, context_cost, typical_recall

    base = _root(root)
    rows = context_cost(base)
    try:
        with connection() as conn:
            recall_size = typical_recall(conn)
    except OrgError as exc:  # the files are still worth reporting without a database
        recall_size = TypicalRecall(0, None, error=str(exc))
    report = ContextCost(str(base), rows, recall_size)
    if as_json:
        emit_json(report)
        return
    click.echo(f"{'':24}{'files':>6}{'chars':>10}{'~tokens':>9}{'lines>200':>11}   (root {one_line(report.root)})")
    for r in report.rows:
        click.echo(f"{r.kind:<24}{r.files:>6}{r.chars:>10,}{r.tokens_estimate:>9,}{r.long_lines:>11}")
    typical = report.recall
    if typical.median_chars is not None:
        click.echo(
            f"{'typical recall':<24}{'':>6}{typical.median_chars:>10,.0f}{typical.tokens_estimate:>9,}{'':>11}"
            f"   (median of {typical.calls} calls, {typical.days} days)"
        )
    elif typical.error:
        click.echo(f"typical recall: unknown ({one_line(typical.error)})")
    else:
        click.echo(f"typical recall: no recall logged in {typical.days} days")
    click.echo(f"tokens are estimates: characters / {report.chars_per_token}")


@eval_group.command()
@click.option("--root", type=OsPath(file_okay=False, path_type=Path), help="Default: $ORG_ROOT or the git top.")
@json_option
def stale(root: Path | None, as_json: bool) -> None:
    """Paths cited in backticks (memory files, fact claims) that no longer exist, and facts
    whose source file is gone or changed since. Listed for review; nothing is deleted.

    A path has an extension, a slash between names (scripts/deploy) or a build file's name
    (Dockerfile, app.Dockerfile); a bare word such as `deploy` is not one."""
    from ...evaluation import stale as find_stale

    base = _root(root)
    with connection() as conn:
        report = find_stale(conn, base)
    if as_json:
        emit_json(report)
        return
    for item in report.items:
        click.echo(f"{one_line(item.where)}: `{one_line(item.cited)}` {item.problem}")
    where = one_line(report.root)
    count = len(report.items)
    click.echo(f"{count} item(s) to review under {where}" if count else f"nothing stale under {where}")


COMMANDS = [eval_group]
