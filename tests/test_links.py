"""Typed links (issue 36, migration 0041): the library's rules, and row-level security tried
through each member's own login (a member links only as itself, between facts it may read,
and removes only what forget's rights allow)."""

from __future__ import annotations

import pytest
from psycopg import errors as pgerr

from cli_org.checks.rules import LINK_KINDS
from cli_org.errors import AccessDenied, InputError, NotFound
from cli_org.store import facts, links


def _fact(org, agent, claim, subject="deploys", project=None):
    return facts.remember(org.writer(agent), subject, claim, source="docs/deploy.md", project=project).id


def test_the_kinds_in_the_database_are_the_rules(org):
    with org.admin() as conn:
        check = conn.execute(
            "SELECT pg_get_constraintdef(oid) AS d FROM pg_constraint"
            " WHERE conrelid = 'memory_links'::regclass AND pg_get_constraintdef(oid) LIKE '%%depends-on%%'"
        ).fetchone()["d"]
    assert all(f"'{kind}'" in check for kind in LINK_KINDS)


def test_link_and_unlink_keep_the_row_and_say_who(org):
    a = _fact(org, "bot", "Deploys need the release branch green.")
    b = _fact(org, "bot", "The release branch is cut every Monday.", subject="releases")
    with org.as_agent("bot") as conn:
        made = links.link(conn, a, "depends-on", b, reason="the cut decides when")
        again = links.link(conn, a, "depends-on", b)  # the live link is kept, not doubled
        assert again.id == made.id and made.author == "bot"
        assert [x.id for x in links.links_of(conn, [a])[a]] == [made.id]
        removed = links.unlink(conn, made.id, "no longer true")
        assert (removed.removed_by, removed.removed_reason) == ("bot", "no longer true")
        assert links.links_of(conn, [a, b]) == {}
        with pytest.raises(InputError, match="already removed"):
            links.unlink(conn, made.id, "twice")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1, "supersedes", 2), "not one of"),
        ((1, "depends-on", 1), "itself"),
        ((0, "explains", 2), "ids are whole numbers"),
        ((None, "contradicts", 2), "needs the fact it comes from"),
    ],
)
def test_bad_links_are_refused_in_one_line(org, args, message):
    _fact(org, "bot", "Deploys need the release branch green.")
    _fact(org, "bot", "The release branch is cut every Monday.", subject="releases")
    with org.as_agent("bot") as conn, pytest.raises(InputError, match=message):
        links.link(conn, *args)


def test_links_join_current_facts_only_and_missing_ones_are_not_found(org):
    a = _fact(org, "bot", "Deploys need the release branch green.")
    b = _fact(org, "bot", "The release branch is cut every Monday.", subject="releases")
    facts.forget(org.writer("bot"), b, "wrong")
    with org.as_agent("bot") as conn:
        with pytest.raises(InputError, match="retired"):
            links.link(conn, a, "explains", b)
        with pytest.raises(NotFound, match="no fact with id 999"):
            links.link(conn, a, "explains", 999)


def test_a_stranger_may_not_remove_anothers_link_but_the_lead_and_an_owner_may(org):
    a = _fact(org, "bot", "Deploys need the release branch green.")
    b = _fact(org, "other", "The release branch is cut every Monday.", subject="releases")
    with org.as_agent("bot") as conn:
        first = links.link(conn, a, "contradicts", b).id
        second = links.link(conn, a, "explains", b).id
    with org.as_agent("other") as conn, pytest.raises(AccessDenied, match="may not remove link"):
        links.unlink(conn, first, "I disagree")
    with org.as_agent("lead") as conn:  # bot's team lead
        assert links.unlink(conn, first, "dismissed").removed_by == "lead"
    with org.as_agent("boss") as conn:
        assert links.unlink(conn, second, "dismissed").removed_by == "boss"


def test_a_member_links_only_as_itself_through_sql(org):
    a = _fact(org, "bot", "Deploys need the release branch green.")
    b = _fact(org, "other", "The release branch is cut every Monday.", subject="releases")
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        for statement, error in (
            (
                f"INSERT INTO memory_links (from_id, kind, to_id, author) VALUES ({a}, 'explains', {b}, 'other')",
                pgerr.InsufficientPrivilege,
            ),
            (
                f"INSERT INTO memory_links (from_id, kind, to_id, removed_by) VALUES ({a}, 'explains', {b}, 'bot')",
                pgerr.InsufficientPrivilege,
            ),
            ("UPDATE memory_links SET removed_at = now()", pgerr.InsufficientPrivilege),
            ("DELETE FROM memory_links", pgerr.InsufficientPrivilege),
            (
                f"INSERT INTO memory_links (from_id, kind, to_id) VALUES ({a}, 'confirms', 999999)",
                pgerr.InsufficientPrivilege,
            ),
            (
                f"INSERT INTO memory_links (from_id, kind, to_id, reason) VALUES ({a}, 'explains', {b}, 'ghp_'"
                " || repeat('a', 36))",
                pgerr.CheckViolation,
            ),
        ):
            with pytest.raises(error):
                bot.execute(statement)
            bot.rollback()
        # the near miss: as itself, between facts it reads, it works
        row = bot.execute(
            f"INSERT INTO memory_links (from_id, kind, to_id) VALUES ({a}, 'explains', {b}) RETURNING author"
        ).fetchone()
        assert row["author"] == "bot"
        bot.commit()


def test_a_restricted_projects_facts_hide_their_links(org):
    from cli_org.store import projects

    a = _fact(org, "bot", "Deploys need the release branch green.", project="secret")
    b = _fact(org, "bot", "The release branch is cut every Monday.", subject="releases")
    with org.as_agent("bot") as conn:
        made = links.link(conn, a, "depends-on", b).id
    with org.as_agent("boss") as conn:
        projects.restrict(conn, "secret", ["bot"])
    with org.as_agent("other") as conn:
        assert links.links_of(conn, [b]) == {}
        with pytest.raises(NotFound):
            links.unlink(conn, made, "hidden")
    with org.login(f"{org.name}_other", "other-pw") as other:
        assert other.execute("SELECT count(*) AS n FROM memory_links").fetchone()["n"] == 0
        with pytest.raises(pgerr.InsufficientPrivilege):
            other.execute(f"INSERT INTO memory_links (from_id, kind, to_id) VALUES ({a}, 'explains', {b})")
