"""remember / forget / facts."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from ...checks.rules import KINDS
from .common import (
    ID,
    OsPath,
    Progress,
    as_option,
    connection,
    emit_json,
    json_option,
    org,
    project_option,
    this_operation,
)


@click.command()
@click.argument("subject")
@click.argument("claim")
@click.option("--source", metavar="SRC", required=True, help="Where it comes from: a path, #message, t_card id or URL.")
@project_option("Project the fact belongs to (default: all projects).")
@click.option("--inferred", is_flag=True, help="Mark as inferred rather than confirmed.")
@click.option("--kind", type=click.Choice(KINDS), default="fact", show_default=True)
@click.option("--supersedes", type=ID, metavar="ID", help="Retire fact ID and link it to this one.")
@click.option("--via", metavar="RUNTIME@HOST", envvar="ORG_VIA", help="Where the writer runs (default: $ORG_VIA).")
@click.option(
    "--allow-duplicate",
    is_flag=True,
    help="Store the claim even when it is a near-duplicate of one of your current facts.",
)
@as_option
@json_option
def remember(
    subject: str,
    claim: str,
    source: str,
    project: str | None,
    inferred: bool,
    kind: str,
    supersedes: int | None,
    via: str | None,
    allow_duplicate: bool,
    agent: str | None,
    as_json: bool,
) -> None:
    """Store one sourced claim as the acting agent; prints the new id.

    A claim that means what one of your current facts says (in its project or org-wide, by
    meaning or by words, with numbers, names and negation agreeing) is refused with that
    fact's id: replace it with --supersedes ID, or keep both with --allow-duplicate. One that
    another agent's fact says already is not stored twice: your confirmation is linked to
    it. One that disagrees with a current fact is stored and linked `contradicts` to it."""
    from ...checks.write import check_fact
    from ...errors import ScanRefused
    from ...store.facts import remember as do_remember
    from ...store.sources import source_hash_at

    # Refuse bad input before starting or touching the database; a text the scan refuses
    # may be one an owner approved, which the library asks the database about.
    with contextlib.suppress(ScanRefused):
        check_fact(subject, claim, source, project, via)
    with org(agent, embed=True) as opened, opened.serving(this_operation()) as conn:
        s = opened.settings
        result = do_remember(
            conn,
            subject,
            claim,
            source=source,
            project=project,
            inferred=inferred,
            kind=kind,
            supersedes=supersedes,
            via=via,
            allow_duplicate=allow_duplicate,
            embedder=opened.embedder,
            source_hash=source_hash_at(source, s.root, s.vault),
        )
    if as_json:
        emit_json(result)
    else:
        from ..render import remembered_line

        click.echo(remembered_line(result))


@click.command()
@click.argument("fact_id", type=ID, metavar="ID")
@click.argument("why")
@as_option
@json_option
def forget(fact_id: int, why: str, agent: str | None, as_json: bool) -> None:
    """Retire a fact (never deleted): its author, their team lead or an owner may."""
    from ...store.facts import forget as do_forget

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        do_forget(conn, fact_id, why, via=opened.settings.via)
    if as_json:
        emit_json({"id": fact_id, "retired": True, "why": why.strip()})
    else:
        click.echo(f"retired {fact_id}")


@click.group(invoke_without_command=True)
@click.option("--all", "include_retired", is_flag=True, help="Include retired and superseded facts.")
@click.option("--subject", metavar="S", help="Only this subject (case-insensitive).")
@project_option("Only this project.")
@click.option("--author", metavar="A", help="Only facts by this agent.")
@click.option("--kind", type=click.Choice(KINDS))
@as_option
@json_option
@click.pass_context
def facts(
    ctx: click.Context,
    include_retired: bool,
    subject: str | None,
    project: str | None,
    author: str | None,
    kind: str | None,
    agent: str | None,
    as_json: bool,
) -> None:
    """List current facts (with --all, retired ones too, with when, who and why).

    `cli-org facts show ID` shows one fact whole."""
    if ctx.invoked_subcommand:
        return
    from ...store.facts import list_facts

    with connection(agent) as conn:
        found = list_facts(
            conn, include_retired=include_retired, subject=subject, project=project, author=author, kind=kind
        )
    if as_json:
        emit_json(found)
        return
    from ..render import facts_text

    click.echo(facts_text(found))


@facts.command("embed")
@as_option
@json_option
def embed(agent: str | None, as_json: bool) -> None:
    """Store the vectors of current facts that lack their author's, for facts loaded in bulk
    (remember, import and restore store them as they write). As an agent: its own facts. As
    the database admin (no --as/ORG_AGENT): every author's, written as the author. `vault
    embed` does the same after the vault; an interrupted run keeps what it did."""
    from ...errors import ConfigError
    from ...store.vectors import embed_missing
    from ...vault.embed import require_vectors

    progress = Progress("facts embed")
    with org(agent, embed=True) as opened, opened.serving(this_operation()) as conn:
        require_vectors(conn)  # the cause a user can fix first, before the model's
        if opened.embedder is None:
            from ...vault.embedders import missing_reason

            raise ConfigError(missing_reason())
        stored = embed_missing(conn, opened.embedder, progress=progress)
    progress.done()
    if as_json:
        emit_json({"embedded": stored})
    else:
        click.echo(f"embedded {stored} fact{'' if stored == 1 else 's'}")


@facts.command("summary")
@click.option(
    "--root",
    type=OsPath(file_okay=False, path_type=Path),
    help="Count what `eval stale` lists under this folder (default: $ORG_ROOT or the git top).",
)
@click.option("--no-stale", is_flag=True, help="Skip the stale-source count (it reads every fact's source file).")
@as_option
@json_option
def summary(root: Path | None, no_stale: bool, agent: str | None, as_json: bool) -> None:
    """The store's health: current, retired and superseded facts; confirmed against inferred;
    facts per author and kind; the share tagged with a project; claim length; and how many
    near-duplicates wait for `cli-org tidy` and stale sources for `cli-org eval stale`."""
    from ...evaluation.curation import curation_summary
    from ...local.project import project_root
    from ..render import curation_text

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        stale_root = None if no_stale else (root or project_root(opened.settings.root))
        found = curation_summary(conn, stale_root=stale_root)
    if as_json:
        emit_json(found)
        return
    click.echo(curation_text(found))


@facts.command("show")
@click.argument("fact_id", type=ID, metavar="ID")
@as_option
@json_option
def show(fact_id: int, agent: str | None, as_json: bool) -> None:
    """One fact whole: its fields, who wrote, superseded or retired it, when and why, its
    supersession chain both ways, and its live links both ways (`cli-org link`), with who
    confirmed it."""
    from ...store.facts import show_fact
    from ...text import one_line
    from ..render import fact_end, restricted_line, shown_link_line

    with connection(agent) as conn:
        record = show_fact(conn, fact_id)
    if as_json:
        emit_json(record)
        return
    f = record.fact
    click.echo(f"#{f.id} {one_line(f.subject)}: {one_line(f.claim)}")
    if record.erased is not None:
        gone = record.erased
        click.echo(f"  erased by {gone.by} at {gone.at:%Y-%m-%d %H:%M}: {one_line(gone.reason)}")
    click.echo(
        f"  {'current' if f.current else 'not current'}; kind {f.kind}; {f.confidence}; "
        f"project {one_line(f.project) or '(all)'}; source {one_line(f.source)}; via {one_line(f.via) or '-'}"
    )
    if restricted := restricted_line(f.project, record.restricted_to):
        click.echo(restricted)
    if record.confirmed_by:
        click.echo(f"  confirmed by {', '.join(record.confirmed_by)}")
    click.echo("history:")
    for e in record.events:
        when = f"{e.at:%Y-%m-%d %H:%M}"
        if e.what == "written":
            click.echo(f"  {when}  written by {e.who}")
        elif e.what == "superseded":
            click.echo(f"  {when}  superseded by #{e.other}, by {e.who}")
        elif e.what == "restored":
            click.echo(f"  {when}  restored by {e.who}: {one_line(e.detail)}")
        elif e.what == "erased":
            click.echo(f"  {when}  erased by {e.who}: {one_line(e.detail)}")
        else:
            click.echo(f"  {when}  retired by {e.who}: {one_line(e.detail)}")
    if len(record.chain) > 1:
        click.echo("chain (oldest first):")
        for other in (*record.older, f, *record.newer):
            mark = "*" if other.id == f.id else " "
            state = "current" if other.current else fact_end(other)
            click.echo(f" {mark}#{other.id} {one_line(other.claim, 80)}  [{other.author}; {state}]")
    if record.links:
        click.echo("links:")
        for shown in record.links:
            click.echo(f"  {shown_link_line(shown)}")


@facts.command("erase")
@click.argument("fact_id", type=ID, metavar="ID")
@click.option("--reason", metavar="WHY", required=True, help="Why it is erased (kept and shown; not the text itself).")
@click.option(
    "--also",
    metavar="TEXT",
    multiple=True,
    help="A part of the fact's text (8+ characters, e.g. the secret) to remove wherever it is quoted, "
    "not only where the whole claim is. Repeatable.",
)
@as_option
@json_option
def erase(fact_id: int, reason: str, also: tuple[str, ...], agent: str | None, as_json: bool) -> None:
    """Remove a fact's text from every place the database keeps it (owners only).

    Its subject, claim and source become markers, its vectors go, and the claim (and each
    --also string) is replaced by '[erased]' in reasons, notebooks and their versions, todos,
    the recall log and its hits, tidy evidence and the archive. The row keeps its id, author
    and times, is retired for good, and records who erased it, when and why. Backups made
    before, the WAL and replicas still hold the text (docs/security.md)."""
    from ...store.erase import erase_fact

    with org(agent) as opened, opened.serving(this_operation()) as conn:
        done = erase_fact(conn, fact_id, reason, also=also, via=opened.settings.via)
    if as_json:
        emit_json({"id": fact_id, "erased": True, "reason": reason.strip(), **vars(done)})
        return
    from ..render import erased_line

    click.echo(erased_line(f"fact {fact_id}", done))


COMMANDS = [remember, forget, facts]
