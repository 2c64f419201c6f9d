"""Write every generated file from its source, or check that each is up to date:

    python scripts/generate.py           # rewrite them all
    python scripts/generate.py --check   # exit 1, naming each stale file (CI runs this)

The generated files and what writes each (every script keeps its own `render`, and may still
be run alone):
- cli_org/migrations/repeatable/write_checks.sql and cli_org/checks/needs_table.py, from the
  client's write checks (scripts/write_checks_sql.py);
- cli_org/migrations/repeatable/rule_checks.sql, the CHECK constraints of rules.py
  (scripts/rule_checks_sql.py);
- cli_org/faces/mcp/manifest.py, the MCP server's first replies (scripts/mcp_manifest.py);
- the generated part of docs/commands.md, from the commands' --help (scripts/docs_commands.py);
- docs/registry.md, the operations of cli_org/org/registry.py (scripts/registry_docs.py).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _script(name: str) -> ModuleType:
    """A script of this folder, loaded as a module (the folder is no package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outputs() -> list[tuple[Path, Callable[[str], str]]]:
    """Each generated file, with what it should hold given what it holds now."""
    write_checks = _script("write_checks_sql")
    rule_checks = _script("rule_checks_sql")
    manifest = _script("mcp_manifest")
    docs = _script("docs_commands")
    registry = _script("registry_docs")
    return [
        (write_checks.PATH, lambda _: write_checks.render()),
        (write_checks.NEEDS_PATH, lambda _: write_checks.needs_table()),
        (rule_checks.PATH, lambda _: rule_checks.render()),
        (manifest.PATH, lambda _: manifest.render()),
        (docs.PAGE, lambda current: docs.expected(current, docs.command_group())),
        (registry.PATH, lambda _: registry.render()),
    ]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, wanted in outputs():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        text = wanted(current)
        if text == current:
            continue
        stale.append(path)
        if not check:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        name = path.relative_to(ROOT)
        print(f"{name} is stale: run python scripts/generate.py" if check else f"wrote {name}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
