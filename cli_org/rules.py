"""The definitions that the database's CHECK constraints hold too, written once in Python.

tests/test_one_source.py reads the constraints from pg_constraint and compares them with
these, so the two cannot drift apart. Kept free of heavy imports: the CLI's option choices
read them while `--help` runs.
"""

from __future__ import annotations

import re

# memory_facts.kind (migration 0001)
KINDS = ("fact", "decision", "failure", "workflow", "rule", "preference", "model_note")
# archive_sessions.harness and archive_messages.kind (migration 0003)
HARNESSES = ("claude-code", "hermes", "codex")
MESSAGE_KINDS = ("user", "assistant", "tool", "system")
# org_agents.name (migration 0001); roles are named after it, so it is short and plain
AGENT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# memory_facts.subject and .claim lengths (migration 0001): one fact, stated briefly
MAX_SUBJECT = 200
MAX_CLAIM = 1000
# memory_facts.source (issue 21): a path, #message, t_card id or URL, never a document
MAX_SOURCE = 500
# notebook_entries.store and each store's cap in characters (migration 0013: the CHECK on
# one entry, org_notebook_cap() for the store's total). Small on purpose: a notebook is
# put in front of every session, so it must stay short and keep only what matters.
NOTEBOOK_CAPS = {"memory": 2200, "user": 1375}
NOTEBOOK_STORES = tuple(NOTEBOOK_CAPS)
# Pins (migration 0014, org_pin_caps()): a pinned fact reaches every session, so a scope
# holds few of them: 10 org-wide and 5 per project.
PIN_CAP_ORG = 10
PIN_CAP_PROJECT = 5
# org_todos.text (migration 0014): one item, stated briefly
MAX_TODO = 500
