"""tidy."""

from __future__ import annotations

import click

from .common import as_option, emit_json, json_option, org, project_option


@click.command()
@project_option("Only this project's facts (needed to judge missing source files).")
@click.option("--apply", "do_apply", is_flag=True, help="Make the proposed changes with your rights, and log them.")
@click.option(
    "--force-merge",
    is_flag=True,
    help="With --apply, also make the merges that need a person (the retired fact holds something stronger).",
)
@as_option
@json_option
def tidy(project: str | None, do_apply: bool, force_merge: bool, agent: str | None, as_json: bool) -> None:
    """Propose, with evidence, near-duplicate facts to merge (of any author; the stronger fact
    is kept, and both are shown) and facts whose source file is gone; --apply makes the changes
    (each logged, each restorable). Never by age. Facts whose cited file changed since they
    were written are listed for review; --apply leaves them."""
    from ...store.sources import short
    from ...store.tidy import tidy as do_tidy
    from ...store.tidy import tidy_roots
    from ...text import one_line
    from ..render import standing_words

    with org(agent) as opened, opened.serving("facts.tidy" if do_apply else "facts.tidy.propose") as conn:
        s = opened.settings
        roots = tidy_roots(s.root, s.vault)
        report = do_tidy(conn, project=project, roots=roots, apply=do_apply, force=force_merge, via=s.via)
    if as_json:
        emit_json(report)
        return
    if not report.proposals:
        click.echo("nothing to tidy")
        return
    for p in report.proposals:
        if p.action == "merge":
            e = p.evidence
            why = f"near-duplicate of #{p.kept_id} (overlap {e['overlap']:.2f} >= {e['threshold']})"
        elif p.action == "changed_source":
            e = p.evidence
            why = (
                f"source {one_line(e['source'])} changed since it was written (hash {short(e['stored'])} then,"
                f" {short(e['now'])} now): review it; --apply leaves it"
            )
        else:
            why = f"source {one_line(p.evidence['source'])} is in none of: {', '.join(report.roots)}"
        state = f"  -> {p.done}" if p.done else f"  -> not done: {one_line(p.error)}" if p.error else ""
        if p.skipped:
            state = (
                "  -> left as it is, for review"
                if p.action == "changed_source"
                else "  -> skipped: needs a person (--force-merge to apply it)"
            )
        click.echo(f"#{p.fact_id} {one_line(p.subject)}: {one_line(p.claim, 80)}  [{p.author}] {why}{state}")
        if p.retired and p.kept:
            click.echo(f"  retire #{p.retired.id}: {standing_words(p.retired)} [{p.retired.author}]")
            click.echo(f"  keep   #{p.kept.id}: {standing_words(p.kept)} [{p.kept.author}]")
            if p.moves_pin:
                click.echo(f"  its pin moves to #{p.kept.id}")
            if p.needs_person:
                click.echo(f"  needs a person: {one_line(p.needs_person)}")
    if not report.applied:
        review = sum(p.action == "changed_source" for p in report.proposals)
        also = f" ({review} to review by hand: --apply leaves those)" if review else ""
        click.echo(f"{len(report.proposals)} proposal(s){also}; run with --apply to make them")


COMMANDS = [tidy]
