"""Options and rendering shared by the commands."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime

import click

from ..config import Settings

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
as_option = click.option(
    "--as", "agent", metavar="NAME", envvar="ORG_AGENT", help="Act as this agent (default: $ORG_AGENT)."
)


def settings() -> Settings:
    return Settings.from_env()


def _default(value):
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return str(value)


def emit_json(data) -> None:
    if dataclasses.is_dataclass(data):
        data = dataclasses.asdict(data)
    elif isinstance(data, list):
        data = [dataclasses.asdict(d) if dataclasses.is_dataclass(d) else d for d in data]
    click.echo(json.dumps(data, default=_default, ensure_ascii=False, indent=2))


def table(rows: list[dict], headers: list[str]) -> str:
    from tabulate import tabulate

    return tabulate([[r.get(h) for h in headers] for r in rows], headers=headers, tablefmt="plain")


def age(moment: datetime | None) -> str:
    if moment is None:
        return ""
    seconds = (datetime.now(moment.tzinfo) - moment).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"
