"""Write the database's CHECK constraints that hold a rule of cli_org/checks/rules.py:

    python scripts/rule_checks_sql.py

writes cli_org/migrations/repeatable/rule_checks.sql, a repeatable file (cli_org/db/migrate.py)
that `cli-org init` runs after the numbered migrations and again whenever its text changes:
the allowed kinds, harnesses, message kinds and notebook stores, the agent-name pattern and
the length limits, each read from rules.py. A constraint already as wanted is left alone (no
scan of its table); a changed one is replaced and checked against the rows. `python
scripts/generate.py --check` fails while the file is not this script's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cli_org.checks import rules  # noqa: E402

PATH = ROOT / "cli_org" / "migrations" / "repeatable" / "rule_checks.sql"


def lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(lit(v) for v in values)})"


def short(column: str, longest: int) -> str:
    return f"btrim({column}) <> '' AND length({column}) <= {longest}"


def constraints() -> list[tuple[str, str, str]]:
    """(table, constraint, condition): each named as PostgreSQL named it when the migrations
    wrote it on the column."""
    caps = " ".join(f"WHEN {lit(store)} THEN {cap}" for store, cap in rules.NOTEBOOK_CAPS.items())
    return [
        ("org_agents", "org_agents_name_check", f"name ~ {lit(rules.AGENT_NAME.pattern)}"),
        ("memory_facts", "memory_facts_subject_check", short("subject", rules.MAX_SUBJECT)),
        ("memory_facts", "memory_facts_claim_check", short("claim", rules.MAX_CLAIM)),
        ("memory_facts", "memory_facts_kind_check", one_of("kind", rules.KINDS)),
        ("archive_sessions", "archive_sessions_harness_check", one_of("harness", rules.HARNESSES)),
        ("archive_messages", "archive_messages_kind_check", one_of("kind", rules.MESSAGE_KINDS)),
        ("notebook_entries", "notebook_entries_store_check", one_of("store", rules.NOTEBOOK_STORES)),
        ("notebook_entries", "notebook_entries_check", f"btrim(body) <> '' AND length(body) <= CASE store {caps} END"),
        ("org_todos", "org_todos_text_check", short("text", rules.MAX_TODO)),
        ("memory_proposals", "memory_proposals_subject_check", short("subject", rules.MAX_SUBJECT)),
        ("memory_proposals", "memory_proposals_claim_check", short("claim", rules.MAX_PROPOSAL_CLAIM)),
        ("memory_proposals", "memory_proposals_kind_check", one_of("kind", rules.PROPOSAL_KINDS)),
        ("memory_proposals", "memory_proposals_state_check", one_of("state", rules.PROPOSAL_STATES)),
    ]


HEADER = """\
-- The CHECK constraints that hold a rule of cli_org/checks/rules.py, generated from it by
-- scripts/rule_checks_sql.py: do not edit; change rules.py and run `python scripts/generate.py`.
-- Each is added NOT VALID under a scratch name and compared with the one in place: the same,
-- and the scratch one goes (no scan of the table); else it takes the old one's place and is
-- checked against every row. A repeatable file (cli_org/db/migrate.py; docs/migrations.md).
"""


def render() -> str:
    rows = ",\n        ".join(f"({lit(t)}, {lit(c)}, $c${cond}$c$)" for t, c, cond in constraints())
    return f"""{HEADER}
DO $$
DECLARE
    c record;
    have text;
    want text;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        {rows}
    ) AS x(tbl, con, cond) LOOP
        EXECUTE format('ALTER TABLE public.%I ADD CONSTRAINT org_rule_wanted CHECK (%s) NOT VALID', c.tbl, c.cond);
        SELECT pg_catalog.max(pg_catalog.pg_get_constraintdef(oid)) FILTER (WHERE conname = c.con),
               pg_catalog.replace(pg_catalog.max(pg_catalog.pg_get_constraintdef(oid))
                                  FILTER (WHERE conname = 'org_rule_wanted'), ' NOT VALID', '')
        INTO have, want
        FROM pg_catalog.pg_constraint WHERE conrelid = pg_catalog.to_regclass('public.' || c.tbl);
        IF have IS NOT DISTINCT FROM want THEN
            EXECUTE format('ALTER TABLE public.%I DROP CONSTRAINT org_rule_wanted', c.tbl);
        ELSE
            EXECUTE format('ALTER TABLE public.%I DROP CONSTRAINT IF EXISTS %I', c.tbl, c.con);
            EXECUTE format('ALTER TABLE public.%I RENAME CONSTRAINT org_rule_wanted TO %I', c.tbl, c.con);
            EXECUTE format('ALTER TABLE public.%I VALIDATE CONSTRAINT %I', c.tbl, c.con);
        END IF;
    END LOOP;
END $$;
"""


if __name__ == "__main__":
    PATH.write_text(render(), encoding="utf-8")
    print(PATH.relative_to(ROOT))
