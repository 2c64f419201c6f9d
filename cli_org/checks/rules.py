"""The definitions that the database's CHECK constraints hold too, written once in Python.

scripts/rule_checks_sql.py writes those constraints from these (migrations/repeatable/
rule_checks.sql; `python scripts/generate.py`), and tests/test_one_source.py reads them back
from pg_constraint, so the two cannot drift apart. Kept free of heavy imports: the CLI's option choices
read them while `--help` runs.
"""

from __future__ import annotations

import re

# memory_facts.kind
KINDS = ("fact", "decision", "failure", "workflow", "rule", "preference", "model_note")
# The same kinds by how much they bind a reader, strongest first: where two facts say the same
# thing, `tidy` keeps the stronger (store/tidy.py), because a fact is never edited and its kind
# cannot move to the other. A rule is an instruction to follow; a decision is settled and not
# to be reopened; a failure warns of a known harm; a workflow prescribes steps; a preference is
# a person's wish; a fact states what is; a model note describes one model's habits.
# tests/test_tidy.py checks it orders KINDS exactly.
KIND_STRENGTH = ("rule", "decision", "failure", "workflow", "preference", "fact", "model_note")
# memory_facts.confidence (migration 0001's CHECK), strongest first: confirmed (the writer saw
# it) before inferred (the writer concluded it).
CONFIDENCES = ("confirmed", "inferred")
# archive_sessions.harness and archive_messages.kind
HARNESSES = ("claude-code", "hermes", "codex")
MESSAGE_KINDS = ("user", "assistant", "tool", "system")
# org_agents.name; roles are named after it, so it is short and plain
AGENT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# memory_facts.subject and .claim lengths: one fact, stated briefly
MAX_SUBJECT = 200
MAX_CLAIM = 1000
# notebook_entries.store and each store's cap in characters (the CHECK on one entry,
# org_notebook_cap() for the store's total). Small on purpose: a notebook is put in front of
# every session, so it must stay short and keep only what matters.
NOTEBOOK_CAPS = {"memory": 2200, "user": 1375}
NOTEBOOK_STORES = tuple(NOTEBOOK_CAPS)
# Pins (org_pin_caps(), in migrations/repeatable/write_checks.sql): a pinned fact reaches
# every session, so a scope holds few of them: 10 org-wide and 5 per project.
PIN_CAP_ORG = 10
PIN_CAP_PROJECT = 5
# org_todos.text: one item, stated briefly
MAX_TODO = 500
# memory_proposals (issue 35): what a lesson found in an archived session may become, a claim
# short enough to read in a list of them (the 300 characters), and where it stands.
PROPOSAL_KINDS = ("rule", "decision", "failure", "workflow", "preference", "fact")
MAX_PROPOSAL_CLAIM = 300
PROPOSAL_STATES = ("pending", "accepted", "rejected")
# The short fields members write (org_field_rules(), in migrations/repeatable/write_checks.sql;
# tests/test_hostile_21.py compares): field -> (shape, longest length). A project is an
# identifier, `via` is RUNTIME@HOST, and nothing free-form is long: a source is a pointer, not
# a document (a 100 KB source reached every agent that recalled its fact); a reason, a query
# or a case is a sentence; evidence (the whole JSON document, and each string in it) and a
# run's cases (a golden set of some hundred cases) are bounded JSON documents.
FIELD_RULES: dict[str, tuple[str | None, int]] = {
    "project": (r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", 64),
    "via": (r"^[A-Za-z0-9_.-]{1,64}@[A-Za-z0-9_.-]{1,128}$", 193),
    "source": (None, 500),
    "reason": (None, 500),
    "query": (None, 1000),
    "evidence": (None, 8000),
    "cases": (None, 400000),
    "git_commit": (r"^[0-9a-f]{7,64}$", 64),
    "embedder": (None, 200),
    "golden_file": (None, 500),
    "case": (None, 1000),
}

# Every id (facts, todos, pins, runs) is a PostgreSQL bigint identity, so 1 .. 2**63-1; issue
# 21: a larger number reached the database and came back as a raw SQL error. The CLI's ID
# type, the MCP tools' schemas and the web's paths take their bounds from here.
MAX_ID = 2**63 - 1


def check_agent_name(name: str | None, label: str = "agent") -> None:
    """A filter naming an agent: None, or a name an agent could have (AGENT_NAME), so that
    no other text (a NUL, a page of it) reaches the database as a name."""
    from ..errors import InputError

    if name is not None and not AGENT_NAME.fullmatch(name):
        raise InputError(f"{label} {name[:80]!r} is no agent's name (lowercase letters, digits, '_' or '-')")


def check_id(value: int, what: str = "fact") -> int:
    """`value` as an id, or an InputError naming the bound (for the library's own callers)."""
    from ..errors import InputError

    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise InputError(f"no {what} with id {str(value)[:40]}: ids are whole numbers from 1 to {MAX_ID}")
    return value


# Typed links between facts (issue 36, migration 0041's CHECK says the same): FROM depends-on TO
# (recall brings TO along), explains, confirms (another agent saw it too), contradicts (a
# person chooses). Supersession is not a link: it retires a fact (memory_facts.supersedes).
LINK_KINDS = ("depends-on", "explains", "confirms", "contradicts")
