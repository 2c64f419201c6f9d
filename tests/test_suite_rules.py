"""The suite's own rules, read from its source (docs/testing.md): no test module imports
another test module or conftest (shared helpers live in tests/helpers.py and the fixture
modules), and the tiers are written in the files, not assigned by a rule at collection."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported(tree: ast.AST) -> set[str]:
    """Every module an import statement names, lazy ones inside functions included; for
    `from tests import x`, also `tests.x`."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ("." * node.level) + (node.module or "")
            out.add(base)
            out |= {f"{base}.{alias.name}" if base else alias.name for alias in node.names}
    return out


def _is_test_module(name: str) -> bool:
    last = name.rstrip(".").split(".")[-1]
    return last.startswith("test_") or last == "conftest"


def test_no_test_module_imports_another_test_module_or_conftest():
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        names = {name for name in _imported(ast.parse(path.read_text("utf-8"))) if _is_test_module(name)}
        if names:
            found[str(path.relative_to(TESTS))] = sorted(names)
    assert found == {}, f"shared helpers belong in tests/helpers.py or a fixture module: {found}"


def test_the_check_sees_each_way_of_importing_a_test_module():
    for source in (
        "from tests.test_mcp import serve",
        "import tests.test_mcp",
        "from tests import test_mcp",
        "from test_web_browser import site",
        "import test_web_agents",
        "from . import conftest",
        "from tests.conftest import drop_database",
        "def f():\n    from tests.test_warm import helper",
    ):
        assert any(_is_test_module(name) for name in _imported(ast.parse(source))), source
    for source in ("from tests.helpers import serve", "from tests import browsing", "import pytest"):
        assert not any(_is_test_module(name) for name in _imported(ast.parse(source))), source


def test_no_marker_is_assigned_by_a_rule_at_collection():
    """`slow` and `clients` are written on the tests (pytestmark or a decorator); conftest
    assigns none (the rule that marked every test on the test server slow kept the database's
    own rules out of the fast tier)."""
    tree = ast.parse((TESTS / "conftest.py").read_text("utf-8"))
    added = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_marker"
    ]
    assert added == []
