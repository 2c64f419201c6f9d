"""vault scan / embed, and search."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .common import OsPath, Progress, as_option, emit_json, json_option, org, query_argument, this_operation

if TYPE_CHECKING:
    from ...config import Settings
    from ...db import Conn
    from ...vault.embed import EmbedSummary


@click.group()
def vault() -> None:
    """The markdown vault index: scan files, embed chunks."""


@vault.command()
@click.argument("path", required=False, type=OsPath(file_okay=False, path_type=Path))
@click.option("--embed", "then_embed", is_flag=True, help="Embed new and changed chunks after the scan.")
@click.option("--replace", is_flag=True, help="Index this folder even though the database holds another vault.")
@click.option(
    "--make-public", is_flag=True, help="Let this scan make notes public that $ORG_RECALL_EXCLUDE kept private before."
)
@json_option
def scan(path: Path | None, then_embed: bool, replace: bool, make_public: bool, as_json: bool) -> None:
    """Index the markdown files under PATH (default: $ORG_VAULT, else the current folder).

    Incremental: unchanged files cost a stat call, changed files are re-chunked, deleted
    files disappear. Skips hidden folders and $ORG_VAULT_IGNORE (comma-separated globs).
    Notes under $ORG_RECALL_EXCLUDE prefixes are private; a scan that would make a note
    public that the last scan's prefixes kept private is refused without --make-public,
    and names such notes when it goes on.
    """
    from ...vault.scan import scan as run_scan

    progress = Progress("scan")
    with org(None) as opened, opened.serving(this_operation()) as conn:
        cfg = opened.settings
        root = path or cfg.vault or Path.cwd()
        summary = run_scan(
            conn,
            root,
            ignore=cfg.vault_ignore,
            private=cfg.recall_exclude,
            replace=replace,
            make_public=make_public,
            progress=progress,
            lock_wait=cfg.lock_wait,
        )
        progress.done()
        embedded = _embed(conn, cfg, reset=False) if then_embed else None
    if as_json:
        emit_json({"scan": summary, "embed": embedded})
        return
    for warning in summary.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"scan {summary.root}: {summary.line()}")
    if summary.made_public:
        click.echo(summary.public_line())
    if embedded:
        click.echo(f"embed: {embedded.line()}")


@vault.command()
@click.option("--reset", is_flag=True, help="Drop every vector and re-embed with the configured model.")
@click.option("--batch", default=64, show_default=True, type=click.IntRange(1, 4096), help="Chunks per batch.")
@json_option
def embed(reset: bool, batch: int, as_json: bool) -> None:
    """Embed new and changed chunks, then facts that lack a vector (resumable).

    Chunks that have no vector or whose text changed, then the current facts that lack
    their author's vector, as `facts embed` does: as the database admin, every author's;
    logged in as an agent, its own."""

    with org(None) as opened, opened.serving(this_operation()) as conn:
        summary = _embed(conn, opened.settings, reset=reset, batch=batch)
    if as_json:
        emit_json(summary)
        return
    if summary.facts_skipped:
        click.echo(f"warning: {summary.facts_skipped}", err=True)
    click.echo(f"embed: {summary.line()}")


def _embed(conn: Conn, cfg: Settings, *, reset: bool, batch: int = 64) -> EmbedSummary:
    from ...errors import InputError
    from ...store.vectors import embed_missing
    from ...vault.embed import embed_pending, require_vectors
    from ...vault.embedders import index_embedder, onnx_path, query_model

    require_vectors(conn)
    with index_embedder(cfg) as embedder:
        progress = Progress("embed")  # after the model is made: the time left counts embedding only
        summary = embed_pending(conn, embedder, batch=batch, reset=reset, progress=progress)
    progress.done()
    # The facts written before the model existed (or loaded in bulk) get their vectors here
    # too: a new team embeds its vault once, and recall then finds those facts by meaning.
    # The query model (float32) embeds them, as it does a remember's claim.
    facts_model = query_model(onnx_path(cfg))
    if facts_model is not None:
        progress = Progress("facts embed")
        try:
            summary.facts = embed_missing(conn, facts_model, progress=progress)
        except InputError as exc:  # a login that is neither an agent nor the admin: no facts of its own
            summary.facts_skipped = f"fact vectors not stored: {exc}"
        progress.done()
    return summary


@click.command()
@query_argument("query")
@click.option("--mode", type=click.Choice(["keyword", "semantic", "hybrid"]), default="hybrid", show_default=True)
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 1000), help="Notes to return.")
@click.option("--private", is_flag=True, help="Include private notes (CURRENT/, Areas/Finance/, ...): owners only.")
@as_option
@json_option
def search(query: str, mode: str, limit: int, private: bool, agent: str | None, as_json: bool) -> None:
    """Search the vault: one hit per note (its best chunk), with per-mode scores.

    Private notes never show unless --private is given by an owner (or the admin)."""
    from ...vault.search import search as run_search
    from ..render import note_hit_lines

    # The model starts loading now, beside the connection.
    with org(agent, embed=mode != "keyword") as opened, opened.serving(this_operation()) as conn:
        result = run_search(conn, query, mode=mode, limit=limit, embedder=opened.embedder, private=private)
    if result.notice:
        click.echo(f"notice: {result.notice}", err=True)
    if as_json:
        emit_json(result)
        return
    if not result.hits:
        click.echo("no matches")
    for hit in result.hits:
        click.echo(note_hit_lines(hit))


COMMANDS = [vault, search]
