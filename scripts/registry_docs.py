"""docs/registry.md: every operation of cli_org/org/registry.py, with its effect, who may run
it, where it reads and its name in each face (run by scripts/generate.py)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PATH = ROOT / "docs" / "registry.md"


def render() -> str:
    from cli_org.org.registry import OPERATIONS

    def names(values: tuple[str, ...], quote: str = "`") -> str:
        return ", ".join(f"{quote}{v}{quote}" for v in values) or "-"

    lines = [
        "# Operations",
        "",
        "Generated from `cli_org/org/registry.py` by `python scripts/generate.py`; do not edit.",
        "Each operation is registered once: what it does to the store (the MCP hints and the",
        "Codex approvals follow it), who may run it (enforced by the database: docs/security.md),",
        "where it runs (`replica`: a read that may be a moment stale, on CLI_ORG_READ_URL where one",
        "is set; `primary`; `long`: the primary with no statement timeout; `none`: no database), and",
        "its name in each face that offers it.",
        "",
        "| operation | effect | who may | runs on | CLI | MCP | web |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for op in OPERATIONS:
        cli = names(tuple(f"cli-org {c}" for c in op.cli))
        lines.append(
            f"| `{op.name}` | {op.effect.kind} | {op.rights} | {op.route.value} | {cli} | {names(op.mcp)} "
            f"| {names(op.web)} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PATH.write_text(render(), encoding="utf-8")
