"""The session context block: the budget is never passed, the same state prints the same
bytes, what is left out is listed with its reason, --for adds hits, --session delivers each
entry once, and an agent sees only its own notebook and delivery rows."""

from __future__ import annotations

import json

import pytest
from psycopg import errors as pgerr

from cli_org.session.context import DEFAULT_BUDGET, KIND_ORDER, SHORTEST_FACT_ENTRY, build_context, tokens
from cli_org.store import facts, notebook, pins, todos
from tests.filler import filler

pytestmark = pytest.mark.slow


def _build(org, agent="bot", **kw):
    with org.as_agent(agent) as conn:
        return build_context(conn, settings=org.settings, **kw)


def _populate(org, n=30):
    """A notebook, pins, todos, and facts of every kind, some retired, superseded, duplicated."""
    ids = {}
    with org.as_agent("bot") as conn:
        notebook.add(conn, "memory", "Run the linter before every commit")
        notebook.add(conn, "user", "Prefers short answers")
        for i in range(n):
            kind = KIND_ORDER[i % len(KIND_ORDER)]
            ids[i] = facts.remember(conn, f"topic{i}", f"Claim number {i} about the build", source="d.md", kind=kind).id
        pins.pin(conn, ids[3])
        todos.add_todo(conn, "Migrate the auth tests")
        gone = facts.remember(conn, "old", "An old claim", source="d.md").id
        facts.forget(conn, gone, "wrong")
        ids["retired"] = gone
        first = facts.remember(conn, "port", "The port is 80", source="d.md").id
        ids["superseded"] = first
        ids["newer"] = facts.remember(conn, "port", "The port is 8080", source="d.md", supersedes=first).id
    with org.as_agent("other") as conn:  # a copy insisted on (it would be a confirmation: issue 36)
        claim = "Claim number 1 about the build"
        ids["dup"] = facts.remember(conn, "topic1", claim, source="e.md", allow_duplicate=True).id
    return ids


def test_the_budget_is_never_passed(org):
    _populate(org)
    for fmt in ("text", "markdown"):
        for budget in [*range(16, 400, 9), 700, DEFAULT_BUDGET]:
            block = _build(org, budget=budget, fmt=fmt)
            assert tokens(block.text) <= budget, (fmt, budget, block.text)
            assert block.tokens == tokens(block.text) == -(-len(block.text) // 4)
            shown = {e.key for sec in block.sections for e in sec.entries}
            assert bool(block.text) == bool(shown)  # no entry, no block: never a bare header
            assert all(o.key not in shown for o in block.omitted if o.reason == "budget")


def test_the_same_state_prints_the_same_bytes(org, cli):
    _populate(org)
    first = _build(org).text
    assert first == _build(org).text
    code, out1, _ = cli("context", agent="bot")
    code2, out2, _ = cli("context", agent="bot")
    assert code == code2 == 0 and out1.encode() == out2.encode() == first.encode()
    assert "since 20" in first and "d)" not in first  # dates, never "3d"


def test_order_pinned_then_kinds_then_newest(org):
    ids = _populate(org)
    text = _build(org, budget=10_000).text
    titles = [line for line in text.splitlines() if line.endswith(":") or "Notebook" in line]
    wanted = ["Notebook, memory", "Notebook, user", "Pinned:", "Open todos:", "Decisions:", "Rules:", "Failures:"]
    positions = [next(n for n, t in enumerate(titles) if t.startswith(w)) for w in wanted]
    assert positions == sorted(positions)
    assert text.index("Model notes:") < text.index("Facts:")
    # newest first within a kind; a pinned fact is not repeated
    assert text.index(f"#{ids[21]} topic") < text.index(f"#{ids[14]} topic") < text.index(f"#{ids[0]} topic")
    assert text.count(f"#{ids[3]} topic3") == 1
    assert "memory: 1% used, 34/2200 chars" in text


def test_omitted_entries_are_listed_with_their_reason_outside_the_agents_text(org):
    ids = _populate(org)
    block = _build(org, budget=10_000, fmt="json")
    reasons = {o.key: o.reason for o in block.omitted}
    assert reasons[f"fact #{ids[1]}"] == f"duplicate of #{ids['dup']}"  # the newer one is shown
    # Retired and superseded facts are counted, never read one by one.
    assert block.omitted_counts == {"budget": 0, "duplicate": 1, "retired": 1, "superseded": 1}
    assert f"fact #{ids['retired']}" not in reasons and f"fact #{ids['superseded']}" not in reasons
    assert _build(org, budget=10_000).omitted_counts == {}  # counted for the JSON form only
    small = _build(org, budget=200, fmt="json")
    cut = [o for o in small.omitted if o.reason == "budget"]
    assert cut and small.omitted_counts["budget"] >= len(cut)
    # Bookkeeping is for --json and the page, not for the model's context.
    for text in (block.text, small.text):
        assert "Omitted" not in text and "retired" not in text and "budget" not in text


def _bulk_facts(org, n, kind, project=None):
    """n current facts of one kind by `bot`, written in one statement (their claims are
    longer than any gap a block leaves, so none fits where a newer one did not)."""
    with org.as_agent("bot") as conn:
        conn.execute(
            "INSERT INTO memory_facts (subject, claim, source, author, kind, project)"
            " SELECT 'bulk ' || i, 'Bulk claim ' || i || ' ' || repeat('x', 200), 'b.md', 'bot', %s, %s"
            " FROM generate_series(1, %s) i",
            (kind, project, n),
        )
        conn.commit()


def test_the_block_reads_only_what_it_can_show_and_counts_the_rest(org):
    """Facts past what the budget can hold are never read: many more of a kind the
    block has no room for (six times what it could read) change neither the block nor the length of what it lists, only
    the counts, and those are right."""
    _populate(org)
    with org.as_agent("bot") as conn:
        for i in range(40):  # the rules fill a 400-token block
            facts.remember(conn, f"rule{i}", f"Rule number {i} about deploys", source="d.md", kind="rule")
    before = _build(org, budget=400, fmt="json")
    _bulk_facts(org, 300, "model_note")
    _bulk_facts(org, 100, "model_note", project="elsewhere")  # out of scope: not even counted
    after = _build(org, budget=400, fmt="json")
    assert after.text == before.text and "Bulk claim" not in after.text
    with org.as_agent("bot") as conn:
        bulk = {f"fact #{r['id']}" for r in conn.execute("SELECT id FROM memory_facts WHERE kind = 'model_note'")}
        in_scope = conn.execute(
            "SELECT count(*) AS n FROM memory_facts WHERE valid_to IS NULL AND project IS NULL"
        ).fetchone()["n"]
    # No more facts were read (shown, or listed as left out) than the budget could hold, in
    # the block's order: the kinds before the model notes fill it, so no model note is read.
    window = 400 * 4 // SHORTEST_FACT_ENTRY + 1  # and room for the one pinned fact
    shown = {e.key for s in after.sections for e in s.entries if e.key.startswith("fact #")}
    read = shown | {o.key for o in after.omitted if o.key.startswith("fact #")}
    assert len(read) <= window + 1 and not read & bulk  # + the pinned fact, read by its own statement
    counts = after.omitted_counts
    assert counts["budget"] - before.omitted_counts["budget"] == 300
    # The duplicate's kind comes after the rules that fill the window: never read, it is
    # counted with the budget's.
    assert (counts["duplicate"], counts["retired"], counts["superseded"]) == (0, 1, 1)
    assert (
        len(shown)
        + counts["duplicate"]
        + counts["budget"]
        - len([o for o in after.omitted if o.reason == "budget" and not o.key.startswith("fact #")])
        == in_scope
    )  # every current fact in scope, once


def test_a_near_full_notebook_says_so(org):
    with org.as_agent("bot") as conn:
        notebook.add(conn, "user", filler(1200))
    assert "(above 80%" in _build(org, budget=10_000).text


def test_for_adds_the_hits_after_the_stable_part(org, cli):
    ids = _populate(org, n=60)
    with org.as_agent("bot") as conn:
        needle = facts.remember(conn, "kiwi", "The kiwi deploy runs on Fridays", source="d.md").id
        for i in range(20):  # newer facts push the needle out of a small budget
            facts.remember(conn, f"later{i}", f"Later claim {i}", source="d.md", kind="decision")
    plain = _build(org, budget=400)
    assert f"fact #{needle}" not in {e.key for s in plain.sections for e in s.entries}
    block = _build(org, budget=400, for_text="kiwi deploy")
    assert block.sections[-1].name == "hits" and not block.sections[-1].stable
    assert f"[fact #{needle}]" in block.text
    other = _build(org, budget=400, for_text="later claim")
    assert other.text[: other.prefix_chars] == block.text[: block.prefix_chars]  # the cacheable prefix
    assert ids


def test_a_session_delivers_each_entry_once_and_then_nothing(org, cli):
    _populate(org, n=5)
    code, first, _ = cli("context", "--session", "s1", "--for", "build", agent="bot")
    assert code == 0 and "Pinned:" in first
    code, again, err = cli("context", "--session", "s1", "--for", "build", agent="bot")
    assert (code, again, err) == (0, "", "")
    with org.as_agent("bot") as conn:
        new = facts.remember(conn, "fresh", "A fresh claim about the build", source="d.md").id
    code, more, _ = cli("context", "--session", "s1", "--for", "build", agent="bot")
    assert code == 0 and f"#{new}" in more and "Pinned:" not in more
    # another session starts over
    assert "Pinned:" in cli("context", "--session", "s2", agent="bot")[1]


def test_nothing_at_all_prints_nothing(org, cli):
    assert cli("context", agent="bot") == (0, "", "")


def test_another_agents_notebook_never_appears(org):
    with org.as_agent("other") as conn:
        notebook.add(conn, "memory", "Other's secret plan")
    with org.as_agent("bot") as conn:
        notebook.add(conn, "memory", "Bot's own note")
    with org.login(f"{org.name}_bot", "bot-pw") as conn:
        block = build_context(conn, settings=org.settings, budget=10_000, session="s")
    assert "Bot's own note" in block.text and "secret plan" not in block.text


def test_delivery_rows_are_private_to_their_agent(org):
    with org.as_agent("bot") as conn:
        notebook.add(conn, "memory", "Bot's own note")
    with org.login(f"{org.name}_bot", "bot-pw") as conn:
        assert build_context(conn, settings=org.settings, session="s").text
        assert conn.execute("SELECT count(*) AS n FROM context_delivered").fetchone()["n"] == 1
    with org.login(f"{org.name}_other", "other-pw") as conn:
        assert conn.execute("SELECT count(*) AS n FROM context_delivered").fetchone()["n"] == 0
        with pytest.raises(pgerr.InsufficientPrivilege):
            conn.execute("INSERT INTO context_delivered (agent, session, hit_key) VALUES ('bot', 's', 'fact #1')")
        conn.rollback()
        with pytest.raises(pgerr.InsufficientPrivilege):
            conn.execute("DELETE FROM context_delivered")


def test_json_carries_the_block_and_its_parts(org, cli):
    _populate(org, n=5)
    code, out, _ = cli("context", "--format", "json", "--budget", "300", agent="bot")
    data = json.loads(out)
    assert code == 0 and data["tokens"] <= 300 and data["format"] == "json"
    assert data["sections"][0]["name"] == "notebook:memory" and data["text"].startswith("== Org context for bot")
    assert {"key", "reason"} <= set(data["omitted"][0])


def test_a_budget_below_the_minimum_is_a_usage_error(cli):
    code, _, err = cli("context", "--budget", "3", agent="bot")
    assert code == 2 and "--budget" in err
