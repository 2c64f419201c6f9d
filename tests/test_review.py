"""The review list (issue 36, item 4): what waits for a person, refreshed on its own.

Through real agents' logins: an owner and a team lead get one line at session start, a member
none; a restricted project's items are hidden from who may not read it, and a member writes no
item through SQL; the session-start hook starts the refresh in a process of its own and returns
while the refresh holds its lock; `cli-org review` lists the items with what settles each."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from psycopg import errors as pgerr

from cli_org.errors import AccessDenied, DatabaseError
from cli_org.evaluation.review import refresh
from cli_org.session.context import build_context
from cli_org.store import facts, links, review
from cli_org.store import projects as projects_lib
from tests.helpers import archived_session, hook, propose

DEPLOY = "Deploys run at 02:00 UTC from the release branch"


def _dups(org, agent="bot", project=None, subject="deploys"):
    """Two near-duplicate facts of one author (kept both on purpose): tidy proposes a merge."""
    w = org.writer(agent)
    a = facts.remember(w, subject, DEPLOY, source="docs/deploy.md", project=project).id
    b = facts.remember(
        w, subject, DEPLOY + " always", source="docs/deploy.md", project=project, allow_duplicate=True
    ).id
    return a, b


def _contradiction(org):
    w = org.writer("bot")
    a = facts.remember(w, "deploy window", "Deploys happen between 10:00 and 15:00", source="#ops-1").id
    b = facts.remember(org.writer("other"), "deploy hour", "Deploys start at 02:00 UTC", source="#ops-2").id
    links.link(w, a, "contradicts", b, reason="another time")
    return a, b


def _refresh(org, agent, **kw):
    with org.as_agent(agent) as conn, org.as_agent(agent) as lock:
        return refresh(conn, lock, **kw)


def _block(org, agent):
    from cli_org.config import Settings

    with org.as_agent(agent) as conn:
        return build_context(conn, settings=Settings()).text


def test_owner_and_lead_get_one_line_and_a_member_none(org):
    _dups(org)
    _contradiction(org)
    propose(org, archived_session(org), "Run make lint before every commit.")
    assert _refresh(org, "boss").near_duplicates == 1
    line = "1 contradiction, 1 near-duplicate and 1 proposal wait for review: cli-org review"
    boss, lead = _block(org, "boss"), _block(org, "lead")
    assert line in boss and line in lead  # bot's facts, bot's proposal: its lead's to settle
    assert "lessons proposed from your sessions" not in lead and "lesson proposed" not in lead  # merged, not repeated
    bot, other = _block(org, "bot"), _block(org, "other")
    assert "wait for review" not in bot and "waits for review" not in bot
    assert "lesson proposed from your sessions waits" in bot  # issue 35's line stays for a member
    assert "review" not in other


def test_nothing_waiting_says_nothing_and_a_settled_item_goes_at_once(org):
    assert "review" not in _block(org, "boss")
    a, b = _dups(org)
    _refresh(org, "boss")
    assert "1 near-duplicate waits for review" in _block(org, "boss")
    facts.forget(org.writer("bot"), a, "the older copy")  # settled: gone without a refresh
    assert "review" not in _block(org, "boss")
    with org.as_agent("boss") as conn:
        assert review.review(conn).counts == dict.fromkeys(review.KINDS, 0)


def test_the_list_holds_what_the_caller_may_settle(org):
    _dups(org, agent="other")  # other has no lead: the owner's and its own
    ca, cb = _contradiction(org)
    _refresh(org, "boss")
    with org.as_agent("boss") as conn:
        seen = review.review(conn)
    assert seen.counts["near-duplicate"] == 1 and seen.counts["contradiction"] == 1
    [c] = [i for i in seen.items if i.kind == "contradiction"]
    assert c.ids == [ca, cb] and f"cli-org unlink {c.link_id}" in c.settle
    [d] = [i for i in seen.items if i.kind == "near-duplicate"]
    assert "cli-org tidy --apply" in d.settle
    with org.as_agent("lead") as conn:  # the contradiction touches bot's fact; the copies are other's
        lead = review.review(conn)
    assert lead.counts["contradiction"] == 1 and lead.counts["near-duplicate"] == 0
    with org.as_agent("other") as conn:
        mine = review.review(conn)
    assert mine.counts["near-duplicate"] == 1 and not mine.reviewer


def test_a_member_may_not_refresh_nor_write_items_through_sql(org):
    a, b = _dups(org)
    with pytest.raises(AccessDenied, match="owner or a team lead"):
        _refresh(org, "bot")
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        with pytest.raises(pgerr.InsufficientPrivilege):
            bot.execute(
                "INSERT INTO memory_review_items (kind, fact_id, other_id, detail)"
                " VALUES ('near-duplicate', %s, %s, 'x')",
                (a, b),
            )
        bot.rollback()
        # Nor another agent's refresh record.
        with pytest.raises(pgerr.InsufficientPrivilege):
            bot.execute("INSERT INTO memory_review_runs (agent) VALUES ('boss')")
        bot.rollback()
    _refresh(org, "boss")
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        assert bot.execute("DELETE FROM memory_review_items").rowcount == 0  # reads them, deletes none
        assert bot.execute("SELECT count(*) AS n FROM memory_review_runs").fetchone()["n"] == 0  # boss's is not its
        bot.rollback()


def test_a_restricted_projects_items_are_hidden_and_outlive_a_blind_refresh(org):
    with org.admin() as conn:
        projects_lib.restrict(conn, "acme", ["other"])  # other has no lead: lead may not read acme
    _dups(org, agent="other", project="acme")
    _refresh(org, "boss")  # an owner reads every project
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_review_items").fetchone()["n"] == 1
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        assert bot.execute("SELECT count(*) AS n FROM memory_review_items").fetchone()["n"] == 0
    _refresh(org, "lead")  # it sees no acme fact, so it leaves acme's item as it was
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_review_items").fetchone()["n"] == 1
    with org.as_agent("boss") as conn:
        assert review.review(conn).counts["near-duplicate"] == 1
    with org.as_agent("other") as conn:  # its own facts, in its own project
        assert review.review(conn).counts["near-duplicate"] == 1


def test_stale_sources_of_the_sessions_project_only(org, tmp_path):
    root = tmp_path / "web"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "there.md").write_text("here\n")
    w = org.writer("bot")
    gone = facts.remember(w, "docs", "The guide lives in the docs folder", source="docs/gone.md", project="web").id
    facts.remember(w, "docs", "The other guide is kept", source="docs/there.md", project="web")
    facts.remember(w, "api", "The api guide is elsewhere", source="docs/api.md", project="api")  # another checkout
    done = _refresh(org, "lead", project="web", root=root)
    assert done.stale_sources == 1
    with org.as_agent("lead") as conn:
        [item] = [i for i in review.review(conn).items if i.kind == "stale-source"]
    assert item.ids == [gone] and "missing" in item.what


def test_a_refresh_running_refuses_a_second_and_a_due_one_is_skipped(org):
    with org.as_agent("boss") as conn:
        assert review.claim_refresh(conn)  # the first session start claims it
        assert not review.claim_refresh(conn)  # a second, at once: nothing to start
    with org.as_agent("boss") as holder:
        holder.execute("SELECT 1 FROM memory_review_runs WHERE agent = 'boss' FOR UPDATE")  # a refresh running
        with pytest.raises(DatabaseError, match="is running now"):
            _refresh(org, "boss")
        holder.rollback()
    first = _refresh(org, "boss")
    again = _refresh(org, "boss", force=False)
    assert first.ran and not again.ran and again.refreshed_at == first.refreshed_at
    with org.as_agent("boss") as conn:
        assert not review.claim_refresh(conn)
        assert review.claim_refresh(conn, after=timedelta(0))  # a day later


def _wait(check, seconds=60.0):
    """Poll `check` until it holds (a guard against a hang, not a measured time)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_the_hook_starts_the_refresh_and_returns_while_it_holds_its_lock(org, tmp_path):
    project = tmp_path / "web"
    (project / ".git").mkdir(parents=True)
    _dups(org)
    start = json.dumps(
        {"hook_event_name": "SessionStart", "session_id": "s-1", "cwd": str(project), "source": "startup"}
    )

    def refreshed() -> bool:
        with org.as_agent("boss") as conn:
            row = conn.execute("SELECT refreshed_at FROM memory_review_runs").fetchone()
        return row is not None and row["refreshed_at"] is not None

    def locked() -> bool:
        with org.as_agent("boss") as conn:
            try:
                conn.execute("SELECT 1 FROM memory_review_runs FOR UPDATE NOWAIT")
                return False
            except pgerr.LockNotAvailable:
                return True

    with org.admin() as admin:
        # The refresh cannot write its items while this transaction holds the table.
        admin.execute("LOCK TABLE memory_review_items IN EXCLUSIVE MODE")
        done = hook(org, "session-start", start, agent="boss")
        assert "Deploys run at 02:00 UTC" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        # Watched without taking a lock: a probe that takes the run row's lock as the refresh
        # starts can make it give up ("a refresh ... is running now"), the likely cause of one
        # CI failure in issue 37. Its write waiting for this table means it holds its lock
        # (review.hold comes first).
        waiting = "SELECT 1 FROM pg_locks WHERE relation = to_regclass('memory_review_items') AND NOT granted"
        assert _wait(lambda: admin.execute(waiting).fetchone() is not None), "the refresh never reached its write"
        assert locked(), "the refresh does not hold its lock"
        assert not refreshed()  # the hook returned; the refresh is still running
        admin.rollback()
    assert _wait(refreshed), "the refresh never finished"
    with org.as_agent("boss") as conn:
        assert review.review(conn).counts["near-duplicate"] == 1
    # The next session start, within the day: nothing started, and the line is there.
    again = hook(org, "session-start", start.replace("s-1", "s-2"), agent="boss")
    assert "1 near-duplicate waits for review: cli-org review" in again.stdout
    assert not locked()
    # A member's session start claims nothing.
    hook(org, "session-start", start.replace("s-1", "s-3"), agent="bot")
    with org.admin() as conn:
        assert [r["agent"] for r in conn.execute("SELECT agent FROM memory_review_runs")] == ["boss"]


def test_cli_review_lists_and_refreshes(cli, org):
    code, out, _ = cli("review", agent="boss")
    assert code == 0 and out.startswith("nothing waits for review") and "never" in out
    a, b = _dups(org)
    _contradiction(org)
    code, out, err = cli("review", "--refresh", agent="boss")
    assert code == 0, err
    assert "1 contradiction and 1 near-duplicate wait for review by boss" in out
    assert "Contradictions (1):" in out and "Near-duplicates (1):" in out and f"#{a}" in out
    assert "settle: cli-org tidy --apply" in out
    code, out, _ = cli("review", "--json", agent="lead")
    data = json.loads(out)
    assert code == 0 and data["counts"]["near-duplicate"] == 1 and data["reviewer"] is True
    assert {i["kind"] for i in data["items"]} == {"contradiction", "near-duplicate"}
    code, _, err = cli("review", "--refresh", agent="bot")
    assert code != 0 and "owner or a team lead" in err


def test_the_facts_page_links_the_review_page(web, org):
    _dups(org)
    _refresh(org, "boss")
    client = web("boss")
    page = client.get("/facts").text
    assert 'href="/facts/review"' in page and "wait for review" in page
    listing = client.get("/facts/review")
    assert listing.status_code == 200 and "Near-duplicates" in listing.text and "cli-org tidy --apply" in listing.text
    data = client.get("/api/facts/review").json()
    assert data["counts"]["near-duplicate"] == 1
    assert "Nothing waits for review" in web("other").get("/facts/review").text


def test_another_agents_block_leaves_the_line_out_and_says_so(org):
    from cli_org.config import Settings

    _dups(org)
    _refresh(org, "boss")
    with org.as_agent("boss") as conn:
        of_lead = build_context(conn, settings=Settings(), agent="lead")
        of_bot = build_context(conn, settings=Settings(), agent="bot")
    assert "wait for review" not in of_lead.text and "waits for review" not in of_lead.text
    assert [h.part for h in of_lead.hidden] == ["review"]
    assert "review" not in [h.part for h in of_bot.hidden]  # a member has no such line to hide
