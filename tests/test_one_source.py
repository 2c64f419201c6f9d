"""One source for each rule: the database's CHECK constraints agree with cli_org/checks/rules.py,
every named query the code asks for exists, and no benchmark patches a module."""

import ast
import re
from pathlib import Path

import pytest

from cli_org.checks import rules
from cli_org.db.queries import sql

ROOT = Path(__file__).resolve().parents[1]


def _check(org, table: str, column: str) -> str:
    """The text of the CHECK constraint of `table` that mentions `column`."""
    with org.admin() as conn:
        defs = [
            r["def"]
            for r in conn.execute(
                "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = %s::regclass"
                " AND contype = 'c'",
                (table,),
            )
        ]
    found = [d for d in defs if re.search(rf"\b{column}\b", d)]
    assert len(found) == 1, (table, column, defs)
    return found[0]


def _quoted(definition: str) -> tuple[str, ...]:
    return tuple(re.findall(r"'([^']*)'::text", definition))


@pytest.mark.slow
@pytest.mark.parametrize(
    "table,column,values",
    [
        ("memory_facts", "kind", rules.KINDS),
        ("archive_sessions", "harness", rules.HARNESSES),
        ("archive_messages", "kind", rules.MESSAGE_KINDS),
    ],
)
def test_allowed_values_match_the_database(org, table, column, values):
    assert _quoted(_check(org, table, column)) == values


@pytest.mark.slow
def test_agent_name_rule_matches_the_database(org):
    assert _quoted(_check(org, "org_agents", "name")) == (rules.AGENT_NAME.pattern,)


@pytest.mark.slow
@pytest.mark.parametrize("column,limit", [("subject", rules.MAX_SUBJECT), ("claim", rules.MAX_CLAIM)])
def test_length_limits_match_the_database(org, column, limit):
    assert f"length({column}) <= {limit}" in _check(org, "memory_facts", column)


@pytest.mark.slow
def test_notebook_caps_match_the_database(org):
    """Each store's cap: the CHECK on one entry, org_notebook_cap() used by the trigger that
    holds the store's total, and the allowed stores (migration 0013)."""
    with org.admin() as conn:
        for store, cap in rules.NOTEBOOK_CAPS.items():
            assert conn.execute("SELECT org_notebook_cap(%s) AS c", (store,)).fetchone()["c"] == cap
    body = _check(org, "notebook_entries", "body")
    assert re.findall(r"WHEN '(\w+)'::text THEN (\d+)", body) == [(s, str(c)) for s, c in rules.NOTEBOOK_CAPS.items()]
    stores = _check(org, "notebook_entries", "store = ANY")
    assert _quoted(stores) == rules.NOTEBOOK_STORES


def _sql_names_used() -> set[str]:
    names = set()
    for path in (ROOT / "cli_org").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "sql"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
    return names


def test_every_named_query_the_code_uses_exists():
    used = _sql_names_used()
    assert len(used) > 40
    missing = []
    for name in sorted(used):
        try:
            sql(name)
        except KeyError:
            missing.append(name)
    assert missing == []


def test_no_benchmark_patches_a_module():
    """Benchmarks pass tuning objects (SearchTuning, VaultShaping); they never assign to
    another module's attributes or call setattr."""
    offenders = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text())
        modules = {
            alias.asname or alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in modules:
                        offenders.append(f"{path.name}:{node.lineno} assigns {t.value.id}.{t.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                offenders.append(f"{path.name}:{node.lineno} calls setattr")
    assert offenders == []


@pytest.mark.slow
def test_the_fact_column_list_is_the_fact_dataclass(org):
    from dataclasses import fields

    from cli_org.store.facts import Fact

    with org.admin() as conn:
        cur = conn.execute(
            sql("facts.list"),
            {"all": True, "subject": None, "project": None, "author": None, "kind": None}
            | {"text": None, "limit": None, "offset": 0},
        )
        assert [c.name for c in cur.description] == [f.name for f in fields(Fact)]


def test_an_include_of_a_missing_fragment_names_it():
    from cli_org.db import queries

    with pytest.raises(KeyError, match="facts.nothing"):
        queries._body("facts.nothing")


def test_every_export_kind_has_its_query():
    from cli_org.store.transfer import KINDS

    for kind in KINDS:
        assert sql(f"transfer.{kind}").startswith("SELECT"), kind


# --- one home per SQL definition -------------------------------------------------------

MIGRATIONS = ROOT / "cli_org" / "migrations"
DEFINES = {  # in any case, with or without the schema
    "function": r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:public\.)?(\w+)\s*\(",
    "trigger": r"CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+(\w+)\s",
    "policy": r"CREATE\s+POLICY\s+(\w+)\s+ON\s+(?:public\.)?(\w+)\s",
    "view": r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:MATERIALIZED\s+)?VIEW\s+(?:public\.)?(\w+)\s",
}


def _defined(folder: Path, pattern: str) -> list[tuple[str, str]]:
    """(file, name) for each definition in the folder's SQL files (a policy's name is
    `table.policy`)."""
    found = []
    for path in sorted(folder.glob("*.sql")):
        for m in re.finditer(pattern, path.read_text(), re.M | re.I):
            found.append((path.name, ".".join(reversed(m.groups())) if len(m.groups()) > 1 else m[1]))
    return found


def test_every_function_trigger_policy_and_view_has_one_home(org):
    """Every function, trigger, row-level policy and view of a migrated database is defined in
    exactly one repeatable file, and none in a numbered migration (docs/migrations.md)."""
    with org.admin() as conn:
        live = {
            "function": [
                r["name"]
                for r in conn.execute(
                    "SELECT p.proname AS name FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace"
                    " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"
                )
            ],
            "trigger": [
                r["name"] for r in conn.execute("SELECT tgname AS name FROM pg_trigger WHERE NOT tgisinternal")
            ],
            "policy": [
                r["name"]
                for r in conn.execute("SELECT polrelid::regclass::text || '.' || polname AS name FROM pg_policy")
            ],
            "view": [
                r["name"]
                for r in conn.execute(
                    "SELECT relname AS name FROM pg_class WHERE relkind IN ('v', 'm')"
                    " AND relnamespace = 'public'::regnamespace"
                )
            ],
        }
    for kind, pattern in DEFINES.items():
        homes: dict[str, list[str]] = {}
        for file, name in _defined(MIGRATIONS / "repeatable", pattern):
            homes.setdefault(name, []).append(file)
        assert len(live[kind]) == len(set(live[kind])), f"an overloaded {kind}: {sorted(live[kind])}"
        for name in live[kind]:
            assert len(homes.get(name, [])) == 1, f"{kind} {name} is defined in {homes.get(name, [])}"
        waiting = {"vectors.sql"} if not org.server.vectors else set()  # made once pgvector is there
        made = [n for n, files in homes.items() if not set(files) <= waiting]
        assert set(made) <= set(live[kind]), f"a {kind} the files define is not in the database"
        assert _defined(MIGRATIONS, pattern) == [], f"a numbered migration defines a {kind}"
    # Nor by a string it runs (EXECUTE format('CREATE POLICY ...')): a numbered file makes none.
    for path in sorted(MIGRATIONS.glob("*.sql")):
        made = re.search(r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|TRIGGER|POLICY|VIEW)\b", path.read_text(), re.I)
        assert made is None, f"{path.name} makes a definition: {made[0] if made else ''}"
