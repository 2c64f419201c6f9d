"""The pool long-lived callers share: identity, row-level security and the connection rule
hold on every connection, call after call."""

import threading

import pytest

from cli_org.db.pool import open_pool
from cli_org.errors import AccessDenied, NotFound
from cli_org.recall.answer import recall
from cli_org.store import facts

pytestmark = pytest.mark.slow


def test_pool_connections_act_as_the_agent_call_after_call(org):
    with open_pool(org.settings, "bot", max_size=2) as pool:
        ids = []
        for i in range(20):
            with pool.connection() as conn:
                ids.append(facts.remember(conn, "pool", f"Claim number {i} of the pool", source="docs/p.md").id)
        with pool.connection() as conn:
            stored = facts.list_facts(conn, subject="pool")
            assert {f.author for f in stored} == {"bot"} and len(stored) == 20
            assert recall(conn, "claim number pool", settings=org.settings, arms=("fact",)).hits
            # The rule holds for pooled connections too: another's fact cannot be retired.
            theirs = _fact_by_other(org)
            with pytest.raises(AccessDenied):
                facts.forget(conn, theirs, "not mine")
            assert conn.execute("SELECT current_user AS u").fetchone()["u"] == f"{org.name}_bot"
        assert pool.size <= 2


def test_pool_serves_threads_at_once(org):
    errors = []
    with open_pool(org.settings, "bot", max_size=3) as pool:

        def work(n):
            try:
                for i in range(10):
                    with pool.connection() as conn:
                        facts.remember(conn, "threads", f"Thread {n} claim {10 * n + i}", source="docs/t.md")
            except Exception as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with pool.connection() as conn:
            assert len(facts.list_facts(conn, subject="threads")) == 40
    assert errors == []


def test_pool_for_an_unknown_agent_fails_at_once(org):
    with pytest.raises(NotFound, match="unknown agent"):
        open_pool(org.settings, "ghost")


def _fact_by_other(org):
    return facts.remember(org.writer("other"), "other", "Only other may retire this", source="docs/o.md").id
