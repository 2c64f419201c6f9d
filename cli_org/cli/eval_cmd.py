"""eval golden / compare / history / noise / cost / stale."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..text import one_line
from .common import Progress, as_option, emit_json, json_option, settings

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group("eval")
def eval_group() -> None:
    """Measure recall: golden sets, saved runs, noise, context cost and stale memory."""


def _embedder(cfg):
    from ..vault.embedders import query_embedder

    return query_embedder(cfg)[0]


def _fmt(figures, k: int) -> str:
    return (
        f"hit@{k} {figures.hit_rate:.3f}  MRR {figures.mrr:.3f}  chars median {figures.chars_median:,.0f} "
        f"p95 {figures.chars_p95:,.0f}  ms median {figures.ms_median:.0f} p95 {figures.ms_p95:.0f}  "
        f"(n={figures.n})"
    )


@eval_group.command()
@click.argument("file", type=_FILE)
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 50), help="k: hits per answer.")
@click.option("--project", metavar="P", help="Recall within this project.")
@click.option("--save", "save_as", metavar="NAME", help="Store the run in eval_runs under NAME.")
@click.option("--min-hit", type=click.FloatRange(0, 1), metavar="RATE", help="Exit 1 if hit@k falls below RATE.")
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
    from ..db.connect import connect
    from ..evaluation import run_golden, save_run
    from ..golden import load_golden

    cases = load_golden(file)  # a malformed file is refused before anything runs
    cfg = settings()
    embedder = _embedder(cfg)
    progress = Progress("golden")
    with connect(cfg, agent) as conn:
        run = run_golden(conn, cases, settings=cfg, limit=limit, project=project, embedder=embedder, progress=progress)
        progress.done()
        if save_as:
            save_run(conn, save_as, run, golden_file=str(file), project=project)
    if as_json:
        emit_json(run)
    else:
        for i, c in enumerate(run.cases, 1):
            pos = str(c.position) if c.position else "MISS"
            click.echo(f"{i:3d} {pos:>4} {c.chars:6d} {c.ms:6.0f}ms  {c.tag:<18} {c.question}")
        click.echo(_fmt(run.overall, limit))
        for tag, figures in run.by_tag.items():
            click.echo(f"  {tag:<18} {_fmt(figures, limit)}")
        if save_as:
            click.echo(f"saved as {save_as}")
    if min_hit is not None and run.overall.hit_rate < min_hit:
        click.echo(f"cli-org: hit@{limit} {run.overall.hit_rate:.3f} is below --min-hit {min_hit}", err=True)
        sys.exit(1)


@eval_group.command()
@click.argument("a")
@click.argument("b")
@as_option
@json_option
def compare(a: str, b: str, agent: str | None, as_json: bool) -> None:
    """Two saved runs side by side, with deltas and the cases that flipped.

    A and B are run names (your own first) or AUTHOR/NAME."""
    from ..db.connect import connect
    from ..evaluation import compare as run_compare
    from ..evaluation import load_run

    with connect(settings(), agent) as conn:
        result = run_compare(load_run(conn, a), load_run(conn, b))
    if as_json:
        emit_json(
            {
                "a": a,
                "b": b,
                "rows": result.rows,
                "now_hit": result.now_hit,
                "now_miss": result.now_miss,
                "verdict": result.verdict,
            }
        )
        return
    click.echo(f"{'':14}{a:>14}{b:>14}{'delta':>12}")
    for row in result.rows:
        fmt = "{:>14.3f}" if row["metric"] in ("hit@k", "MRR") else "{:>14,.0f}"
        click.echo(
            f"{row['metric']:<14}"
            + fmt.format(row["a"])
            + fmt.format(row["b"])
            + f"{row['delta']:>+12.3f}  {row['change']}"
        )
    for label, flipped in (("miss -> hit", result.now_hit), ("hit -> miss", result.now_miss)):
        for question in flipped:
            click.echo(f"{label}: {question}")
    click.echo(result.verdict)


@eval_group.command()
@click.option("--png", type=click.Path(dir_okay=False, path_type=Path), help="Also draw the chart to a PNG file.")
@as_option
@json_option
def history(png: Path | None, agent: str | None, as_json: bool) -> None:
    """Saved runs over time, with a chart of hit@k and characters per run."""
    from ..db.connect import connect
    from ..evaluation import history as load_history

    with connect(settings(), agent) as conn:
        runs = load_history(conn)
    if as_json:
        emit_json(runs)
        return
    if not runs:
        click.echo("no saved runs; use `cli-org eval golden FILE --save NAME`")
        return
    good = [r for r in runs if r.overall]
    widest = max((r.overall.chars_median for r in good), default=1) or 1
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
        )
    if png:
        _plot(good, png)
        click.echo(f"chart written to {png}")


def _plot(runs: list[dict], png: Path) -> None:
    from ..errors import ConfigError

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
    fig.savefig(png, dpi=100)


@eval_group.command()
@click.argument("file", type=_FILE)
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 50))
@as_option
@json_option
def noise(file: Path, limit: int, agent: str | None, as_json: bool) -> None:
    """Queries that must find nothing: each one's hits and bytes; exit 1 if any finds something."""
    from ..db.connect import connect
    from ..evaluation import load_queries, run_noise

    queries = load_queries(file)
    cfg = settings()
    with connect(cfg, agent) as conn:
        results = run_noise(conn, queries, settings=cfg, limit=limit, embedder=_embedder(cfg))
    noisy = [r for r in results if r.hits]
    if as_json:
        emit_json({"queries": results, "failed": len(noisy)})
    else:
        for r in results:
            click.echo(
                f"{'FAIL' if r.hits else 'ok':>4} {r.hits:2d} hits {r.chars:5d} bytes  {r.query}"
                + (f"  ({', '.join(r.arms)})" if r.arms else "")
            )
        click.echo(f"{len(results) - len(noisy)} of {len(results)} queries found nothing")
    if noisy:
        sys.exit(1)


def _root(root: Path | None) -> Path:
    from ..recall.memory_arm import project_root

    return root or project_root(settings().root)


@eval_group.command()
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), help="Default: $ORG_ROOT or the git top.")
@json_option
def cost(root: Path | None, as_json: bool) -> None:
    """What memory costs the context: standing instructions, memory indexes, bot memory,
    long lines, and a typical recall (tokens estimated at 4 characters each)."""
    from ..db.connect import connect
    from ..evaluation import CHARS_PER_TOKEN, context_cost, typical_recall

    base = _root(root)
    rows = context_cost(base)
    try:
        with connect(settings()) as conn:
            recall_size = typical_recall(conn)
    except Exception as exc:  # the files are still worth reporting without a database
        recall_size = {"calls": 0, "median_chars": None, "error": str(exc)}
    if as_json:
        emit_json(
            {
                "root": str(base),
                "rows": [{**r.__dict__, "tokens_estimate": r.tokens_estimate} for r in rows],
                "recall": recall_size,
                "chars_per_token": CHARS_PER_TOKEN,
            }
        )
        return
    click.echo(f"{'':24}{'files':>6}{'chars':>10}{'~tokens':>9}{'lines>200':>11}   (root {base})")
    for r in rows:
        click.echo(f"{r.kind:<24}{r.files:>6}{r.chars:>10,}{r.tokens_estimate:>9,}{r.long_lines:>11}")
    if recall_size.get("median_chars") is not None:
        med = recall_size["median_chars"]
        click.echo(
            f"{'typical recall':<24}{'':>6}{med:>10,.0f}{med / CHARS_PER_TOKEN:>9,.0f}{'':>11}"
            f"   (median of {recall_size['calls']} calls, 30 days)"
        )
    else:
        click.echo("typical recall: no recall logged in 30 days")
    click.echo("tokens are estimates: characters / 4")


@eval_group.command()
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), help="Default: $ORG_ROOT or the git top.")
@json_option
def stale(root: Path | None, as_json: bool) -> None:
    """Paths cited in backticks (memory files, fact claims) that no longer exist, and facts
    whose source file is gone or changed since. Listed for review; nothing is deleted."""
    from ..db.connect import connect
    from ..evaluation import stale as find_stale

    base = _root(root)
    with connect(settings()) as conn:
        items = find_stale(conn, base)
    if as_json:
        emit_json({"root": str(base), "items": items})
        return
    for item in items:
        click.echo(f"{item.where}: `{item.cited}` {item.problem}")
    click.echo(f"{len(items)} item(s) to review under {base}" if items else f"nothing stale under {base}")


COMMANDS = [eval_group]
