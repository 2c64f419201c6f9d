"""Named SQL: each file under sql/ holds queries headed by a `-- name: <name>` line."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


@cache
def _load(group: str) -> dict[str, str]:
    text = resources.files("cli_org").joinpath("sql", f"{group}.sql").read_text("utf-8")
    parts = _HEADER.split(text)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def sql(name: str) -> str:
    """The query `group.name`, e.g. `facts.insert` from sql/facts.sql."""
    group, _, query = name.partition(".")
    try:
        return _load(group)[query]
    except KeyError:
        raise KeyError(f"no query named {name!r}") from None
