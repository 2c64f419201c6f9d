"""The connection rule (cli_org/db/session.py) holds for every public library function."""

import importlib
import inspect
import pkgutil

import pytest

import cli_org
from cli_org.db.session import ConnectionRuleBroken, owns_transaction


def _public_functions_taking_a_connection():
    for info in pkgutil.walk_packages(cli_org.__path__, "cli_org."):
        if info.name.startswith("cli_org.faces.cli") or info.name == "cli_org.__main__":
            continue  # the CLI opens connections; it does not take them
        module = importlib.import_module(info.name)
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            params = list(inspect.signature(inspect.unwrap(fn)).parameters)
            if params and params[0] == "conn":
                yield f"{module.__name__}.{name}", fn


# Helpers that work inside a caller's transaction by design, and say so.
INSIDE_A_CALLERS_TRANSACTION = {
    "cli_org.db.errors.translated",  # a context manager around the caller's statements
    "cli_org.db.locks.held",  # the same
    "cli_org.db.connect.become",  # sets up a new connection's identity, before any call
    "cli_org.store.agents.role_for",  # reads conn.info only
    "cli_org.store.agents.let_the_admin_become",  # a GRANT inside `add_agent`'s or `import`'s transaction
    "cli_org.db.first",  # one statement inside the caller's transaction
    "cli_org.db.connect.mark_replica",  # sets a Python attribute on the connection; no statement
    "cli_org.db.connect.on_replica",  # reads that attribute; no statement
    "cli_org.db.connect.alive",  # checks an idle connection between calls; autocommit restored
    "cli_org.db.connect.detect_pooler",  # sets up a new connection, like become
    "cli_org.db.connect.note_pooler",  # sets attributes on the connection; no statement
    "cli_org.db.connect.pooled",  # reads that attribute; no statement
    "cli_org.db.connect.carries_options",  # the same
    "cli_org.db.remembered",  # one caller's statement, or its memo of one, inside its transaction
    "cli_org.vault.search.hnsw_scan",  # a context manager around the caller's scan
    "cli_org.store.vectors.store_vectors",  # inside remember's, restore's or import's transaction
    "cli_org.store.activity.say_via",  # one set_config(..., true) inside a write's transaction
    "cli_org.store.vectors.store_as_authors",  # inside import's or `facts embed`'s transaction
    "cli_org.store.vectors.store_unembedded",  # inside import's or restore's transaction
    "cli_org.archive.verdicts.judge_sessions",  # inside an archive import's transaction
    "cli_org.archive.verdicts.judge_outdated",  # inside judge_stale's or an import's transaction
    "cli_org.store.agents.check_agent_role",  # reads inside add_agent's or import's transaction
    "cli_org.store.approvals.approved",  # one statement inside remember's transaction (checked_fact)
    "cli_org.store.facts.checked_fact",  # the write checks inside remember's transaction
    "cli_org.store.erase.erasure_of",  # one statement inside show_fact's transaction
    "cli_org.store.proposals.known_claim",  # reads inside propose's or the stop hook's transaction
    "cli_org.store.related.related",  # reads inside remember's or known_claim's transaction
    "cli_org.store.links.add_link",  # inside remember's, link's or tidy's transaction
    "cli_org.store.links.shown_links",  # one statement inside show_fact's transaction
    "cli_org.recall.inputs.read_inputs",  # one statement inside recall's or an arm's transaction
    "cli_org.recall.marks.read_marks",  # one statement inside recall's or the context block's
    "cli_org.store.review.is_reviewer",  # one statement inside the context block's or review's
    "cli_org.store.review.waiting_counts",  # reads inside the context block's transaction
    "cli_org.session.hooks.refresh_review",  # calls claim_refresh, which owns its transaction
    "cli_org.evaluation.review.refresh",  # takes two idle connections and leaves both idle (checked)
}


def test_every_public_function_that_takes_a_connection_owns_its_transaction():
    found = dict(_public_functions_taking_a_connection())
    assert len(found) > 20
    missing = [
        name
        for name, fn in found.items()
        if name not in INSIDE_A_CALLERS_TRANSACTION and not getattr(fn, "owns_transaction", False)
    ]
    assert missing == []


@pytest.mark.slow
def test_a_call_on_a_busy_connection_is_refused(org):
    from cli_org.store.facts import list_facts

    with org.as_agent("bot") as conn:
        conn.execute("SELECT 1")
        with pytest.raises(ConnectionRuleBroken, match="needs an idle connection"):
            list_facts(conn)


@pytest.mark.slow
def test_a_failing_call_rolls_back_and_a_finished_one_commits(org):
    from cli_org.store.facts import list_facts

    @owns_transaction
    def write_then_fail(conn, fail: bool):
        conn.execute("INSERT INTO memory_facts (subject, claim, source) VALUES ('t', 'kept or not', 'a.md')")
        if fail:
            raise ValueError("boom")

    with org.as_agent("bot") as conn:
        with pytest.raises(ValueError):
            write_then_fail(conn, True)
        assert conn.info.transaction_status.name == "IDLE" and list_facts(conn) == []
        write_then_fail(conn, False)
        assert conn.info.transaction_status.name == "IDLE"
    with org.as_agent("other") as conn:
        assert [f.claim for f in list_facts(conn)] == ["kept or not"]


@pytest.mark.slow
def test_a_call_that_changes_the_session_is_caught(org):
    @owns_transaction
    def leaks(conn):
        conn.execute("SET synchronous_commit = off")

    @owns_transaction
    def keeps(conn):
        conn.execute("SELECT set_config('synchronous_commit', 'off', true)")

    with org.as_agent("bot") as conn:
        keeps(conn)
        with pytest.raises(ConnectionRuleBroken, match="synchronous_commit"):
            leaks(conn)
