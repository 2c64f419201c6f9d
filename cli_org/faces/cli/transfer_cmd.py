"""export / import."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import OsPath, connection, emit_json, json_option, org, this_operation


@click.command("export")
@click.option("--out", "out", metavar="FILE", type=OsPath(dir_okay=False), help="Write here (default: stdout).")
def export_cmd(out: str | None) -> None:
    """Write the whole org memory as JSON lines (run as the database admin)."""
    from ...local.files import check_target, write_private
    from ...store.transfer import export_lines

    if out is not None:
        check_target(Path(out))  # before the export runs; checked again as it is written
    with connection() as conn:
        lines, result = export_lines(conn)
    text = "".join(line + "\n" for line in lines)
    if out is None:
        sys.stdout.write(text)
        return
    write_private(Path(out), text.encode("utf-8"))  # it holds every notebook: 0600, atomic, local/files.py's rule
    summary = ", ".join(f"{n} {kind}" for kind, n in result.records.items())
    click.echo(f"exported {summary} to {out} (format {result.format}, migration {result.migration})", err=True)


@click.command("import")
@click.argument("file", type=OsPath(exists=True, dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Report what would change, change nothing.")
@json_option
def import_cmd(file: str, dry_run: bool, as_json: bool) -> None:
    """Merge an export by id: adds what is missing, reports conflicts (run as the database admin)."""
    from ...errors import InputError
    from ...local.files import read_file
    from ...store.transfer import MAX_IMPORT_BYTES, import_lines

    data = read_file(Path(file), limit=MAX_IMPORT_BYTES).data  # the one safe read: no FIFO, device or /proc file
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"{file} is not UTF-8 ({exc.reason} at byte {exc.start}); nothing was imported") from None
    with org(None, embed=True) as opened, opened.serving(this_operation()) as conn:
        result = import_lines(conn, lines, dry_run=dry_run, embedder=opened.embedder)
    if as_json:
        emit_json(result)
        return
    click.echo(("dry run: nothing changed" if dry_run else "imported") + f" (format {result.format})")
    for c in result.kinds:
        line = f"{c.kind}: {c.added} added, {c.present} already present, {c.conflicting} conflicting"
        if c.conflicts:
            line += f" ({', '.join(c.conflicts[:20])}{' ...' if len(c.conflicts) > 20 else ''}; not overwritten)"
        click.echo(line)


COMMANDS = [export_cmd, import_cmd]
