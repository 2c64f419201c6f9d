"""Named SQL: each file under sql/ holds queries headed by a `-- name: <name>` line.

A query may include a fragment of another by writing its name in braces, `{facts.columns}`:
a list written once (the fact columns, say) is then read the same way everywhere.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_INCLUDE = re.compile(r"\{(\w+\.\w+)\}")


@cache
def _load(group: str) -> dict[str, str]:
    text = resources.files("cli_org").joinpath("sql", f"{group}.sql").read_text("utf-8")
    parts = _HEADER.split(text)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def _body(name: str) -> str:
    group, _, query = name.partition(".")
    try:
        return _load(group)[query]
    except KeyError:
        raise KeyError(f"no query named {name!r}") from None


@cache
def sql(name: str) -> str:
    """The query `group.name`, e.g. `facts.insert` from sql/facts.sql, fragments included."""
    return _INCLUDE.sub(lambda m: _strip_comments(sql(m[1])), _body(name))


def _strip_comments(fragment: str) -> str:
    return "\n".join(line for line in fragment.splitlines() if not line.lstrip().startswith("--")).strip()
