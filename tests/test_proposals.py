"""Proposals (issue 35) in the database: who reads and decides them, what accepting makes, and
the write checks on what they carry, against the real database and members' own logins."""

from __future__ import annotations

import json

import pytest
from psycopg import errors as pgerr

from cli_org.errors import AccessDenied, InputError, NotFound, ScanRefused
from cli_org.store import facts, proposals
from tests.helpers import SECRET, archived_session, propose


def _session(org, external="s-1", project=None, harness="claude-code") -> int:
    return archived_session(org, external, project, harness)


def _propose(org, session_id, claim, **kw):
    return propose(org, session_id, claim, **kw)


def test_the_agent_accepts_its_own_and_the_fact_names_the_session(org):
    sid = _session(org, "sess-abc", project="web")
    pid = _propose(org, sid, "In this repo use pnpm, never npm.", project="web", key="line-7")
    with org.as_agent("bot") as conn:
        waiting = proposals.list_proposals(conn)
        assert [p.id for p in waiting] == [pid] and proposals.count_pending(conn) == 1
        done = proposals.accept(conn, pid)
        assert done.state == "accepted" and done.decided_by == "bot" and done.fact_id
        fact = facts.show_fact(conn, done.fact_id).fact
        want = ("bot", "In this repo use pnpm, never npm.", "web", "rule")
        assert (fact.author, fact.claim, fact.project, fact.kind) == want
        assert fact.source == "sessions/claude-code/sess-abc/line-7"
        assert proposals.count_pending(conn) == 0 and proposals.list_proposals(conn) == []
        with pytest.raises(InputError, match=rf"already accepted as fact #{done.fact_id}"):
            proposals.accept(conn, pid)


def test_another_agent_neither_sees_nor_decides_it(org):
    pid = _propose(org, _session(org), "Run make lint before every commit.")
    with org.as_agent("other") as conn:
        assert proposals.list_proposals(conn) == [] and proposals.count_pending(conn) == 0
        with pytest.raises(AccessDenied, match=f"agent other may not decide proposal {pid}"):
            proposals.accept(conn, pid)
        with pytest.raises(AccessDenied, match="may not decide"):
            proposals.reject(conn, pid)
        with pytest.raises(NotFound, match="no proposal with id 999999"):
            proposals.accept(conn, 999999)
    with org.as_agent("bot") as conn:
        assert proposals.list_proposals(conn)[0].state == "pending"  # nothing changed


def test_the_lead_accepts_for_its_bot_and_the_fact_is_the_bots(org):
    pid = _propose(org, _session(org), "The test database listens on 5433, not 5432.")
    with org.as_agent("lead") as conn:
        assert [p.id for p in proposals.list_proposals(conn, agent="bot")] == [pid]
        done = proposals.accept(conn, pid)
        assert done.decided_by == "lead"
        assert facts.show_fact(conn, done.fact_id).fact.author == "bot"


def test_one_with_no_agent_is_an_owners_to_assign(org):
    pid = _propose(org, _session(org), "Keep the v1 routes until March.", agent=None)
    with org.as_agent("lead") as conn:  # a lead leads nobody's session here
        assert proposals.list_proposals(conn) == []
        with pytest.raises(AccessDenied):
            proposals.accept(conn, pid, agent="lead")
    with org.as_agent("boss") as conn:
        with pytest.raises(InputError, match="belongs to no agent yet"):
            proposals.accept(conn, pid)
        with pytest.raises(NotFound, match="no agent named nobody"):
            proposals.accept(conn, pid, agent="nobody")
        done = proposals.accept(conn, pid, agent="other")
        assert facts.show_fact(conn, done.fact_id).fact.author == "other" and done.decided_by == "boss"


def test_a_proposal_of_one_agent_cannot_become_anothers_fact(org):
    pid = _propose(org, _session(org), "Deploys run from the release branch only.")
    with org.as_agent("boss") as conn, pytest.raises(InputError, match="is bot's"):
        proposals.accept(conn, pid, agent="other")


def test_edit_and_accept_stores_the_edit_and_the_edit_is_scanned(org):
    pid = _propose(org, _session(org), "use pnpm not npm")
    with org.as_agent("bot") as conn:
        with pytest.raises(ScanRefused):
            proposals.accept(conn, pid, claim=f"Use pnpm; the registry token is {SECRET}")
        assert proposals.list_proposals(conn)[0].state == "pending"  # nothing half-written
        done = proposals.accept(conn, pid, claim="In this repo use pnpm, never npm.", subject="pnpm")
        fact = facts.show_fact(conn, done.fact_id).fact
        assert (fact.subject, fact.claim) == ("pnpm", "In this repo use pnpm, never npm.")


def test_accepting_a_claim_the_agent_already_holds_is_that_fact(org):
    existing = facts.remember(org.writer("bot"), "package manager", "Use pnpm here.", source="README.md").id
    pid = _propose(org, _session(org), "Use pnpm here.")
    with org.as_agent("bot") as conn:
        assert proposals.accept(conn, pid).fact_id == existing


def test_reject_keeps_it_and_the_claim_never_comes_back(org):
    sid = _session(org)
    pid = _propose(org, sid, "Always squash merge feature branches.")
    with org.as_agent("bot") as conn:
        done = proposals.reject(conn, pid, reason="one-off, for that PR")
        assert (done.state, done.reason, done.decided_by) == ("rejected", "one-off, for that PR", "bot")
        assert proposals.list_proposals(conn) == []
        assert [p.id for p in proposals.list_proposals(conn, state="rejected")] == [pid]
        with pytest.raises(InputError, match="already rejected"):
            proposals.accept(conn, pid)
    # The same words again, in any order or case, from another session: not proposed.
    assert _propose(org, _session(org, "s-2"), "always squash-merge feature branches", key="m-9") is None


def test_a_member_cannot_write_proposals_from_its_own_login(org):
    pid = _propose(org, _session(org), "Rotate the staging keys every Monday.")
    with org.as_agent("bot") as conn:
        for statement in (
            "UPDATE memory_proposals SET state = 'accepted' WHERE id = %s",
            "DELETE FROM memory_proposals WHERE id = %s",
        ):
            with pytest.raises(pgerr.InsufficientPrivilege):
                conn.execute(statement, (pid,))
            conn.rollback()
        with pytest.raises(pgerr.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO memory_proposals (session_id, message_key, agent, subject, claim, kind, why, score,"
                " claim_key) SELECT session_id, 'x', 'bot', 's', 'c', 'rule', 'w', 1, 'k'"
                " FROM memory_proposals WHERE id = %s",
                (pid,),
            )


def test_the_database_refuses_a_secret_in_a_proposal(org):
    with pytest.raises(pgerr.CheckViolation):
        _propose(org, _session(org), f"The deploy token is {SECRET} for now.")


def test_known_claim_finds_a_current_fact_by_its_words(org):
    fact = facts.remember(org.writer("bot"), "tests", "The test database is on port 5433.", source="x.md").id
    with org.as_agent("other") as conn:
        assert proposals.known_claim(conn, "tests", "the test database is on port 5433", None) == fact
        assert proposals.known_claim(conn, "tests", "The test database is on port 5432.", None) is None  # a number
        assert proposals.known_claim(conn, "tests", "Lint runs before every commit.", None) is None


def test_bad_input_is_one_clear_error(org):
    with org.as_agent("bot") as conn:
        with pytest.raises(InputError, match="state 'maybe'"):
            proposals.list_proposals(conn, state="maybe")
        with pytest.raises(InputError, match="limit"):
            proposals.list_proposals(conn, limit=0)
        with pytest.raises(InputError):
            proposals.accept(conn, 0)
        with pytest.raises(InputError):
            proposals.list_proposals(conn, agent="Not An Agent")


def test_a_restricted_project_hides_even_an_agents_own_proposal(org):
    """other's own proposal, in a project restricted to bot: other no longer reads or decides it."""
    from cli_org.store import projects

    pid = _propose(org, _session(org, project="acme"), "Acme deploys on Fridays.", agent="other", project="acme")
    with org.as_agent("other") as conn:
        assert [p.id for p in proposals.list_proposals(conn)] == [pid]
    with org.as_agent("boss") as conn:
        projects.restrict(conn, "acme", ["bot"])
    with org.as_agent("other") as conn:
        assert proposals.list_proposals(conn) == [] and proposals.count_pending(conn) == 0
        with pytest.raises(NotFound, match=f"no proposal with id {pid}"):
            proposals.accept(conn, pid)


def test_the_session_start_block_says_how_many_wait_and_the_cli_decides(org, cli):
    sid = _session(org, "sess-9")
    first_id = _propose(org, sid, "In this repo use pnpm, never npm.")
    second = _propose(org, sid, "Run make lint before every commit.", key="m-2")
    code, out, _ = cli("context", "--as", "bot")
    assert code == 0 and "2 lessons proposed from your sessions wait for you" in out
    code, out, _ = cli("context", "--as", "other")
    assert code == 0 and "proposed from your sessions" not in out
    code, out, err = cli("proposals", "--as", "bot")
    assert code == 0 and out.splitlines()[0].startswith(f"#{second} [rule] package manager: Run make lint")
    code, out, err = cli("proposals", "accept", str(first_id), "--as", "other")
    assert code == 1 and err.count("\n") == 1 and f"may not decide proposal {first_id}" in err
    edit = "Use pnpm in this repo, never npm."
    code, out, err = cli("proposals", "accept", str(first_id), "--as", "bot", "--claim", edit)
    assert code == 0 and out.startswith(f"accepted {first_id} as fact #")
    code, out, _ = cli("proposals", "reject", str(second), "--as", "bot", "--reason", "one-off", "--json")
    assert code == 0 and json.loads(out)["state"] == "rejected"
    code, out, _ = cli("context", "--as", "bot")
    assert "proposed from your sessions" not in out and "Use pnpm in this repo, never npm." in out
    code, out, err = cli("proposals", "accept", "abc", "--as", "bot")
    assert code == 2 and "Traceback" not in err


@pytest.mark.slow
def test_an_agent_confirms_its_proposals_through_mcp(org):
    from tests.helpers import serve, text

    sid = _session(org, "sess-mcp")
    keep = _propose(org, sid, "The test database is on 5433, not 5432.", subject="test database")
    drop = _propose(org, sid, "Rename the helper to load_rows.", key="m-2")

    async def as_bot(s):
        listed = await s.call_tool("org_proposals", {})
        accepted = await s.call_tool("org_proposal_accept", {"id": keep})
        rejected = await s.call_tool("org_proposal_reject", {"id": drop, "reason": "plain work"})
        again = await s.call_tool("org_proposal_accept", {"id": keep})
        return listed, accepted, rejected, again

    async def as_other(s):
        return await s.call_tool("org_proposal_accept", {"id": keep})

    listed, accepted, rejected, again = serve(org, as_bot)
    assert text(listed).splitlines()[1].startswith(f"#{keep} [rule] test database: The test database is on 5433")
    assert text(accepted).startswith(f"accepted {keep} as fact #") and not accepted.is_error
    assert text(rejected) == f"rejected {drop}"
    assert again.is_error and "already accepted" in text(again)
    refused = serve(org, as_other, agent="other")
    assert refused.is_error and f"agent other may not decide proposal {keep}" in text(refused)


# --- proposing from the archive (archive/propose.py) ------------------------------------------


def _transcript(path, session: str, turns: list[tuple[str, str]], cwd: str = "/srv/web") -> None:
    """A Claude Code transcript: (role, text) per line, each a record of its own."""
    lines = []
    for n, (role, text) in enumerate(turns):
        record = {
            "type": role,
            "sessionId": session,
            "uuid": f"{session}-{n}",
            "cwd": cwd,
            "timestamp": f"2026-11-01T10:{n:02d}:00Z",
            "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]},
        }
        lines.append(json.dumps(record))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


LESSON = "no, in this repo we always use pnpm, never npm. npm writes a lock file that fights with pnpm's."
PLAIN = [
    ("user", "There's a typo in the checkout banner: 'recieve' should be 'receive'."),
    ("assistant", "Fixed the typo in src/banner.tsx."),
    ("user", "no, the other file too"),
    ("assistant", "Fixed it in the email template as well."),
    ("user", "rename CartDrawer to CartPanel everywhere"),
    ("assistant", "Renamed in 4 files."),
]


@pytest.mark.slow
def test_import_proposes_the_lesson_once_and_never_plain_work(org, cli, tmp_path):
    projects = tmp_path / "projects"
    first = [("user", "Install the deps"), ("assistant", "Ran npm install."), ("user", LESSON), ("assistant", "Done.")]
    _transcript(projects / "-srv-web" / "a.jsonl", "a", first)
    _transcript(projects / "-srv-web" / "b.jsonl", "b", PLAIN)
    code, out, err = cli("archive", "import", "--claude", str(projects))
    assert code == 0, err
    assert "proposals: 1 lesson proposed from 10 new messages of 2 sessions" in out
    code, out, _ = cli("proposals", "--json", agent="boss")
    (p,) = json.loads(out)
    assert "pnpm" in p["claim"] and "npm" in p["claim"] and len(p["claim"]) <= 300
    assert (p["session"], p["harness"], p["agent"], p["state"]) == ("a", "claude-code", None, "pending")
    assert p["message"] == "a-2"  # the person's message it came from
    # The same sessions again, and then every message again: nothing new.
    code, out, _ = cli("archive", "import", "--claude", str(projects))
    assert "proposals: 0 lessons proposed from 0 new messages of 0 sessions" in out
    cli("proposals", "reject", str(p["id"]), "--reason", "we are moving off pnpm", agent="boss")
    code, out, _ = cli("archive", "propose", "--again")
    assert code == 0 and "0 lessons proposed" in out and "1 proposed before" in out
    # Nor is it proposed where a current fact already says it.
    _transcript(projects / "-srv-api" / "c.jsonl", "c", [("user", "from now on run make lint before every commit")],
                cwd="/srv/api")  # fmt: skip
    lint = "Run make lint before every commit."
    code, out, err = cli("remember", "lint", lint, "--source", "docs/lint.md", agent="bot")
    assert code == 0, err
    code, out, _ = cli("archive", "import", "--claude", str(projects))
    assert "0 lessons proposed" in out and "1 already a fact" in out


@pytest.mark.slow
def test_a_secret_in_a_transcript_never_becomes_a_proposal(org, cli, tmp_path):
    projects = tmp_path / "projects"
    said = f"remember that the deploy token is {SECRET}, use it for every release"
    _transcript(projects / "-srv-web" / "s.jsonl", "s", [("user", said)])
    code, out, err = cli("archive", "import", "--claude", str(projects))
    assert code == 0 and "0 lessons proposed" in out and "1 refused by the write checks" in out, out
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_proposals").fetchone()["n"] == 0


def test_propose_is_the_importers_not_an_agents(org):
    from cli_org.archive.propose import propose

    with org.as_agent("bot") as conn, pytest.raises(AccessDenied, match="run it without --as"):
        propose(conn)


def test_import_names_the_agent_of_sessions_setup_did_not_wire_and_refuses_an_unknown_one(org, cli, tmp_path):
    projects = tmp_path / "projects"
    _transcript(projects / "-srv-web" / "d.jsonl", "d", [("user", LESSON)])
    code, out, err = cli("archive", "import", "--claude", str(projects), "--agent", "nobody")
    assert code == 1 and err.strip() == "cli-org: no agent named nobody; `cli-org agents list` shows them"
    with org.admin() as conn:  # nothing was imported
        assert conn.execute("SELECT count(*) AS n FROM archive_sessions").fetchone()["n"] == 0
    code, out, err = cli("archive", "import", "--claude", str(projects), "--agent", "bot")
    assert code == 0, err
    code, out, _ = cli("proposals", "--json", agent="bot")
    assert [p["agent"] for p in json.loads(out)] == ["bot"]


@pytest.mark.vectors
def test_known_claim_finds_a_current_fact_by_its_meaning_with_the_real_model(org):
    """The other half of the rule: other words, the same fact (and the same numbers)."""
    import os
    from pathlib import Path

    from cli_org.vault.embedders import model_file, query_model

    embedder = query_model(model_file(Path(os.environ["CLI_ORG_DATA_DIR"])))  # the session's own model
    assert embedder is not None, "the query model was not built for the session"
    claim = "Every handler of the courier webhook must be idempotent: it retries for 24 hours."
    fact = facts.remember(org.writer("bot"), "courier webhook", claim, source="docs/hooks.md", embedder=embedder).id
    from cli_org.db.session import owns_transaction

    @owns_transaction
    def known(conn, said, model):  # as its callers run it (propose, the stop hook): in their transaction
        return proposals.known_claim(conn, "courier webhook", said, None, model)

    with org.as_agent("other") as conn:
        said = "The courier webhook retries for 24 hours, so its handlers have to be idempotent."
        assert known(conn, said, None) is None  # not by its words alone
        assert known(conn, said, embedder) == fact
        assert known(conn, said.replace("24", "48"), embedder) is None  # another number
        assert known(conn, "Deploys run from the release branch.", embedder) is None
