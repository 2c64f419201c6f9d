"""Row-level security, attacked from the bot's own login (no superuser, no SET ROLE)."""

import pytest
from psycopg import errors as pgerr

from cli_org.errors import AccessDenied, InputError, NotFound
from cli_org.store import facts

INSERT = "INSERT INTO memory_facts (subject, claim, source, author) VALUES ('s', %s, 'a.md', %s) RETURNING id"


@pytest.fixture
def bot(org):
    with org.login(f"{org.name}_bot", "bot-pw") as conn:
        yield conn


def _fact_by(org, agent, claim="The build takes four minutes"):
    return facts.remember(org.writer(agent), "build", claim, source="docs/build.md").id


def test_login_role_is_the_identity(org, bot):
    row = bot.execute("SELECT current_user AS u, org_me() AS me, current_setting('role') AS r").fetchone()
    assert row == {"u": f"{org.name}_bot", "me": "bot", "r": "none"}
    new = bot.execute(INSERT, ("claim one", "bot")).fetchone()["id"]
    bot.commit()
    assert bot.execute("SELECT author FROM memory_facts WHERE id = %s", (new,)).fetchone()["author"] == "bot"


def test_library_remember_over_login(org, bot):
    result = facts.remember(bot, "ci", "Runs on two cores", source="docs/ci.md", kind="rule")
    assert not result.duplicate
    stored = facts.list_facts(bot, subject="CI")
    assert [(f.id, f.author, f.kind) for f in stored] == [(result.id, "bot", "rule")]


def test_insert_as_another_author_fails(bot):
    with pytest.raises(pgerr.InsufficientPrivilege, match="row-level security"):
        bot.execute(INSERT, ("forged", "other"))


def test_update_and_delete_have_no_grant(org, bot):
    fact_id = _fact_by(org, "bot")
    for statement in (
        "UPDATE memory_facts SET claim = 'changed' WHERE id = %s",
        "UPDATE memory_facts SET valid_to = now() WHERE id = %s",
        "DELETE FROM memory_facts WHERE id = %s",
        "TRUNCATE memory_facts",
    ):
        with pytest.raises(pgerr.InsufficientPrivilege):
            bot.execute(statement, (fact_id,) if "%s" in statement else None)
        bot.rollback()
    assert bot.execute("SELECT claim, valid_to FROM memory_facts WHERE id = %s", (fact_id,)).fetchone() == {
        "claim": "The build takes four minutes",
        "valid_to": None,
    }


def test_cannot_forge_retirement_columns_on_insert(bot):
    with pytest.raises(pgerr.InsufficientPrivilege):
        bot.execute(
            "INSERT INTO memory_facts (subject, claim, source, valid_to, retired_by)"
            " VALUES ('s', 'c', 'a.md', now(), 'bot')"
        )


def test_cannot_become_another_agent(org, bot):
    with pytest.raises(pgerr.InsufficientPrivilege):
        bot.execute(f'SET ROLE "{org.name}_other"')
    bot.rollback()
    with pytest.raises(pgerr.InsufficientPrivilege):
        bot.execute("SELECT set_config('role', %s, false)", (f"{org.name}_other",))
    bot.rollback()
    # The group itself is not an agent, so acting as it retires nothing.
    fact_id = _fact_by(org, "bot")
    bot.execute(f'SET ROLE "{org.name}_member"')
    with pytest.raises(pgerr.InsufficientPrivilege, match="not a cli-org agent"):
        bot.execute("SELECT org_forget(%s, 'x')", (fact_id,))


def test_forget_by_stranger_fails_naming_who_may(org):
    fact_id = _fact_by(org, "bot")
    with org.login(f"{org.name}_other", "other-pw") as other, pytest.raises(AccessDenied) as info:
        facts.forget(other, fact_id, "looks wrong")
    msg = str(info.value)
    assert "other may not retire" in msg and "author (bot)" in msg and "lead (lead)" in msg and "owner" in msg
    with org.admin() as admin:
        row = admin.execute("SELECT valid_to FROM memory_facts WHERE id = %s", (fact_id,)).fetchone()
    assert row["valid_to"] is None


@pytest.mark.parametrize("who", ["bot", "lead", "boss"])
def test_forget_by_author_lead_or_owner(org, who):
    fact_id = _fact_by(org, "bot")
    with org.as_agent(who) as conn:
        facts.forget(conn, fact_id, "superseded by the new runner")
        (row,) = [f for f in facts.list_facts(conn, include_retired=True) if f.id == fact_id]
    assert row.retired_by == who and row.retired_reason == "superseded by the new runner"
    assert row.valid_to is not None


def test_forget_over_login_by_author(org, bot):
    fact_id = _fact_by(org, "bot")
    facts.forget(bot, fact_id, "wrong")
    assert facts.list_facts(bot) == []


def test_forget_twice_and_missing(org):
    fact_id = _fact_by(org, "bot")
    with org.as_agent("bot") as conn:
        facts.forget(conn, fact_id, "wrong")
        with pytest.raises(InputError, match=rf"^fact {fact_id} is already retired \(by bot: wrong\)$"):
            facts.forget(conn, fact_id, "again")
    with org.as_agent("bot") as conn, pytest.raises(NotFound, match="no fact with id 999999"):
        facts.forget(conn, 999999, "x")


def test_supersede_needs_the_right_to_retire(org):
    old = _fact_by(org, "bot")
    with org.as_agent("other") as conn:
        with pytest.raises(AccessDenied, match="may not retire"):
            facts.remember(conn, "build", "The build takes two minutes", source="docs/build.md", supersedes=old)
        # Nothing was written: the new fact rolled back with the refused supersession.
        assert [f.id for f in facts.list_facts(conn, include_retired=True)] == [old]


def test_supersede_links_both_ways(org):
    old = _fact_by(org, "bot")
    with org.as_agent("lead") as conn:
        new = facts.remember(conn, "build", "The build takes two minutes", source="docs/build.md", supersedes=old)
        rows = {f.id: f for f in facts.list_facts(conn, include_retired=True)}
    assert rows[old].superseded_by == new.id and rows[new.id].supersedes == old
    assert rows[old].valid_to is not None and rows[old].retired_by == "lead"
    assert rows[new.id].current


def test_supersede_function_cannot_be_abused_directly(org, bot):
    mine = _fact_by(org, "bot")
    theirs = _fact_by(org, "other", "Other's claim")
    # A bot may not claim someone else's new fact as its replacement.
    with pytest.raises(pgerr.InvalidParameterValue, match=rf"^fact {theirs} is not a new current fact of bot\n"):
        bot.execute("SELECT org_supersede(%s, %s)", (mine, theirs))


def test_retired_fact_hidden_from_current_list(org):
    fact_id = _fact_by(org, "bot")
    with org.as_agent("bot") as conn:
        facts.forget(conn, fact_id, "wrong")
        assert facts.list_facts(conn) == []
        assert [f.id for f in facts.list_facts(conn, include_retired=True)] == [fact_id]


def test_non_member_gets_a_clear_error_not_an_empty_list(org):
    with org.admin() as admin:
        admin.execute(f"CREATE ROLE \"{org.name}_stranger\" LOGIN PASSWORD 's-pw'")
        admin.commit()
    denied = pytest.raises(AccessDenied, match=f"role {org.name}_stranger is not a cli-org member")
    with org.login(f"{org.name}_stranger", "s-pw") as conn, denied:
        facts.list_facts(conn)


def test_duplicate_returns_existing_id(org):
    first = _fact_by(org, "bot")
    with org.as_agent("bot") as conn:
        again = facts.remember(conn, "build", "The build takes four minutes", source="docs/other.md")
        assert again.duplicate and again.id == first
    with org.as_agent("other") as conn:
        # Another agent's copy of the same claim is its own assertion (claim squatting).
        theirs = facts.remember(conn, "build", "The build takes four minutes", source="docs/other.md")
        assert not theirs.duplicate and theirs.id != first
        # Same claim in another project is a different fact.
        other = facts.remember(conn, "build", "The build takes four minutes", source="docs/build.md", project="web")
        assert not other.duplicate and other.id != first


def test_unknown_agent(org):
    with pytest.raises(NotFound, match="unknown agent 'ghost'"):
        org.as_agent("ghost")


def test_members_read_the_archive_but_never_write_it(org, bot, tmp_path):
    from cli_org.archive import sessions, usage
    from cli_org.archive.importer import import_sessions

    transcript = tmp_path / "p" / "s.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(
        '{"type": "user", "sessionId": "s", "uuid": "u1", "timestamp": "2026-11-01T00:00:00Z",'
        ' "message": {"content": "run cli-org recall before deploying"}}\n'
    )
    with org.admin() as admin:
        import_sessions(admin, {"claude-code": tmp_path / "p"})
    for table in ("archive_sessions", "archive_messages", "archive_sources", "archive_memory_versions"):
        bot.execute(f"SELECT count(*) FROM {table}")
    bot.rollback()
    assert [h.session for h in sessions.search_messages(bot, "deploying")] == ["s"]
    assert usage.usage(bot, 3650).harnesses[0].sessions == 1
    for statement in (
        "INSERT INTO archive_sessions (harness, external_id) VALUES ('codex', 'forged')",
        "UPDATE archive_messages SET text = 'changed'",
        "DELETE FROM archive_memory_versions",
    ):
        with pytest.raises(pgerr.InsufficientPrivilege):
            bot.execute(statement)
        bot.rollback()


def test_member_without_a_grant_is_told_so_not_called_a_stranger(org, tmp_path):
    from cli_org.vault.scan import scan

    (tmp_path / "a.md").write_text("# A\n")
    with org.login(f"{org.name}_bot", "bot-pw") as bot, pytest.raises(AccessDenied) as info:
        scan(bot, tmp_path)  # indexing is the admin's job
    assert "agents may not do this" in str(info.value) and "not a cli-org member" not in str(info.value)


def test_agent_may_save_an_eval_run(org):
    from cli_org.evaluation import CaseResult, GoldenRun, figures, load_run, save_run

    cases = [CaseResult("q", "x", "-", 1, 10, 1.0)]
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        save_run(bot, "by-bot", GoldenRun(8, figures(cases), {}, cases), golden_file="g", project=None)
        assert load_run(bot, "by-bot").overall.hit_rate == 1.0
