"""Hits later quoted (issue 15): the rule on a constructed session, pure and through the real
importer into a real database; the Usage page's data; who may read it; the CLI."""

import json
from datetime import timedelta

import psycopg
import pytest

from cli_org.archive.importer import import_sessions
from cli_org.archive.quoted import (
    PHRASE_WORDS,
    Hit,
    SessionMessage,
    parse_hits,
    per_arm,
    phrases,
    quoted_in_session,
)
from cli_org.archive.usage import hits_later_quoted, usage_detail
from cli_org.errors import AccessDenied, InputError
from cli_org.store import facts
from tests.helpers import (  # noqa: F401  # noqa: F401
    FIRST_ANSWER,
    NOW,  # noqa: F401
    QUESTION,
    SECOND_ANSWER,
    _continuation,
    _iso,  # noqa: F401
    _line,
    _transcript,
)


def _session() -> list[SessionMessage]:
    """The constructed session, as the rule reads it."""
    return [
        SessionMessage("user", f"{QUESTION}? Check the org memory first."),
        SessionMessage("assistant", f'cli-org recall "{QUESTION}"', "t1", is_recall=True),
        SessionMessage("tool", FIRST_ANSWER, "t1"),
        # The fact by its id; the runbook by its path, in a tool call.
        SessionMessage("assistant", "Per fact #12 the switch does it; reading the runbook."),
        SessionMessage("assistant", "sed -n 1,40p vault/ops/billing-runbook.md", "t2"),
        SessionMessage("tool", "# Rollback\n...", "t2"),
        # The memory line in other words: not a quote.
        SessionMessage("assistant", "The staging DB gets wiped on Mondays, so not then."),
        # Only what the question already had, of fact #13.
        SessionMessage("assistant", "Remember: the deploy window is Friday night."),
        SessionMessage("assistant", '{"question":"session cache expiry"}', "t3", is_recall=True),
        # The canary note again, only in a recall's own output.
        SessionMessage("tool", SECOND_ANSWER, "t3"),
        SessionMessage("assistant", "Noted: the session cache expires after ninety minutes."),
        SessionMessage("assistant", "cli-org recall 'never answered'", "t4", is_recall=True),
    ]


def _verdicts(messages):
    calls, verdicts = quoted_in_session(messages)
    return calls, {(v.call, h.arm, h.key): (h.quoted, h.how) for v in verdicts for h in v.hits}


def test_the_rule_on_a_constructed_session():
    calls, found = _verdicts(_session())
    assert calls == 3  # t4 has no result: counted, not tied
    assert found == {
        (1, "fact", "12"): (True, "id"),
        (1, "vault", "ops/billing-runbook.md"): (True, "path"),
        (1, "memory", ".agents/org/memory/bot.md:4"): (False, None),  # paraphrased
        (1, "vault", "notes/canary.md"): (False, None),  # only in recall outputs
        (1, "fact", "13"): (False, None),  # only what the question had
        (8, "vault", "notes/canary.md"): (False, None),
        (8, "fact", "15"): (True, "phrase"),
    }


def test_per_arm_shares():
    _, verdicts = quoted_in_session(_session())
    arms = {a.arm: (a.recalls, a.hits, a.quoted, a.by_id, a.by_path, a.by_phrase, a.share) for a in per_arm(verdicts)}
    assert arms == {
        "fact": (2, 3, 2, 1, 0, 1, 0.667),
        "vault": (2, 3, 1, 0, 1, 0, 0.333),
        "memory": (1, 1, 0, 0, 0, 0, 0.0),
    }


def test_a_mark_already_in_the_session_before_the_recall_does_not_count():
    messages = _session()
    messages.insert(0, SessionMessage("assistant", "Yesterday's note: fact #12 is old."))
    _, found = _verdicts(messages)
    assert found[(2, "fact", "12")] == (False, None)


def test_a_quote_between_call_and_result_is_not_later():
    messages = [
        SessionMessage("assistant", "cli-org recall deploy", "a", is_recall=True),
        SessionMessage("assistant", "grep -r 'through the blue green switch at 02:00 UTC' .", "b"),
        SessionMessage("tool", FIRST_ANSWER, "a"),
        SessionMessage("assistant", "So: the blue green switch at 02:00 UTC."),
    ]
    _, found = _verdicts(messages)
    assert found[(0, "fact", "12")] == (False, None)


@pytest.mark.parametrize(
    "text,key",
    [
        ("see #12.", True),
        ("fact 12 says", True),
        ("FACT #12", True),
        ("cli-org forget 12 'wrong'", True),
        ("cli-org remember x y --source a --supersedes 12", True),
        ('{"fact_id": 12}', True),
        ('{"supersedes": "12"}', True),
        ('{"id": 12}', False),  # any API's id, not a fact's
        ("#123 and 112 and issue/#12x", False),
        ("12 files changed", False),
        ("&#12;", False),
    ],
)
def test_fact_id_marks(text, key):
    messages = [
        SessionMessage("assistant", "cli-org recall q", "a", is_recall=True),
        SessionMessage("tool", "[fact #12] s: c (src; bot; today)", "a"),
        SessionMessage("assistant", text),
    ]
    assert _verdicts(messages)[1][(0, "fact", "12")][0] is key


def test_an_id_in_another_tools_json_does_not_quote_a_fact():
    def verdict(output):
        messages = [
            SessionMessage("assistant", "cli-org recall q", "a", is_recall=True),
            SessionMessage("tool", "[fact #3] s: c (src; bot; today)", "a"),
            SessionMessage("assistant", "gh api repos/o/r/issues/3", "b"),
            SessionMessage("tool", output, "b"),
        ]
        return _verdicts(messages)[1][(0, "fact", "3")]

    assert verdict('{"id": 3, "title": "flaky deploy"}') == (False, None)
    assert verdict('{"fact_id": 3, "ok": true}') == (True, "id")


def test_a_call_repeated_in_one_session_is_tied_once():
    """Claude Code may write the same tool use on two lines of one message: one call, tied
    once, to the first."""
    messages = [
        SessionMessage("assistant", "cli-org recall q", "a", is_recall=True),
        SessionMessage("assistant", "cli-org recall q", "a", is_recall=True),
        SessionMessage("tool", "[fact #12] s: c (src; bot; today)", "a"),
        SessionMessage("assistant", "Per fact #12."),
        SessionMessage("assistant", "cli-org recall other", None, is_recall=True),  # no id: its own call
    ]
    calls, verdicts = quoted_in_session(messages)
    assert calls == 2
    assert [(v.call, v.result, [(h.key, h.quoted) for h in v.hits]) for v in verdicts] == [(0, 2, [("12", True)])]


@pytest.mark.parametrize(
    "text,quoted",
    [
        ("cat /home/me/vault/ops/deploy.md", True),
        ("opened deploy.md.", True),
        ("opened DEPLOY.MD", True),
        ("ops/deploy.md.bak", False),
        ("my-deploy.md", False),
    ],
)
def test_vault_path_marks(text, quoted):
    messages = [
        SessionMessage("assistant", "org recall q", "a", is_recall=True),
        SessionMessage("tool", "[vault] ops/deploy.md: x", "a"),
        SessionMessage("assistant", text),
    ]
    assert _verdicts(messages)[1][(0, "vault", "ops/deploy.md")][0] is quoted


def test_a_generic_file_name_needs_its_path():
    def verdict(later):
        messages = [
            SessionMessage("assistant", "org recall q", "a", is_recall=True),
            SessionMessage("tool", "[vault] ops/README.md: x", "a"),
            SessionMessage("assistant", later),
        ]
        return _verdicts(messages)[1][(0, "vault", "ops/README.md")][0]

    assert verdict("cat README.md") is False
    assert verdict("cat ops/README.md") is True


def test_parse_hits_reads_text_json_and_noise():
    noisy = "Process exited with code 0\nOutput:\n" + FIRST_ANSWER + "\nwarm helper: ready\n"
    hits = parse_hits(noisy)
    assert [(h.arm, h.key) for h in hits] == [
        ("fact", "12"),
        ("vault", "ops/billing-runbook.md"),
        ("memory", ".agents/org/memory/bot.md:4"),
        ("vault", "notes/canary.md"),
        ("fact", "13"),
    ]
    # The trailing (source; author; age) is not the hit's text; the heading is.
    assert hits[0].text == "billing deploy: Billing deploys go through the blue green switch at 02:00 UTC"
    assert hits[1].text.startswith("Rollback Rollback needs")
    assert parse_hits(SECOND_ANSWER)[1] == Hit(
        "fact", "15", "cache: The session cache expires after ninety minutes of idle time"
    )
    assert parse_hits("nothing found") == [] and parse_hits(None) == [] and parse_hits("{not json") == []
    wrapped = json.dumps({"output": "Output:\n" + FIRST_ANSWER, "metadata": {"exit_code": 0}})
    assert [h.key for h in parse_hits(wrapped)] == [
        "12",
        "ops/billing-runbook.md",
        ".agents/org/memory/bot.md:4",
        "notes/canary.md",
        "13",
    ]
    # `recall --json` run in a shell whose output has a header first.
    assert [h.key for h in parse_hits("Exit code: 0\nOutput:\n" + SECOND_ANSWER)] == ["notes/canary.md", "15"]


def test_json_inside_a_text_answer_does_not_hide_its_hits():
    answer = "\n".join(
        [
            '[fact #21] codex output: Codex wraps a command\'s output as {"output": "text"} (notes.md; bot; today)',
            "[vault] ops/codex.md: The wrapper also carries the exit code",
        ]
    )
    assert [(h.arm, h.key) for h in parse_hits(answer)] == [("fact", "21"), ("vault", "ops/codex.md")]
    # And a claim that holds an answer's own shape, hits and all.
    shaped = '[fact #22] json: recall --json prints {"hits": [{"arm": "fact", "id": 9}]} (a.md; bot; today)'
    assert [(h.arm, h.key) for h in parse_hits(shaped)] == [("fact", "22")]


def test_phrases_need_five_words_with_three_content_words():
    assert PHRASE_WORDS == 5
    assert phrases("you don't want to do that") == set()  # two content words at most
    assert phrases("the current state of the") == set()
    assert ("deploys", "run", "at", "02", "00") in phrases("Deploys run at 02:00 UTC")


# --- through the real importer, in a real database ----------------------------------------


@pytest.fixture
def archived(org, tmp_path):
    _transcript(tmp_path / "claude")
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "claude"})
        conn.execute(
            "INSERT INTO recall_events (agent, query, arms, hits, chars, ms, created_at) VALUES"
            " ('bot', 'deploy', '{fact}', 2, 300, 12, now()),"
            " ('bot', 'ci', '{fact,vault}', 1, 100, 9, now() - interval '8 days'),"
            " ('other', 'old', '{fact}', 0, 20, 5, now())"
        )
        conn.commit()
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploy", "Deploys run at 02:00 UTC from main", source="docs/deploy.md")
    return org


def _arms(q):
    return {a.arm: (a.recalls, a.hits, a.quoted, a.share) for a in q.arms}


@pytest.mark.slow
def test_the_rule_over_the_archive(archived):
    with archived.admin() as conn:
        q = hits_later_quoted(conn, 30)
    assert (q.sessions, q.recall_calls, q.tied, q.unjudged) == (1, 3, 2, 0)
    assert _arms(q) == {"fact": (2, 3, 2, 0.667), "vault": (2, 3, 1, 0.333), "memory": (1, 1, 0, 0.0)}
    with archived.admin() as conn:
        conn.autocommit = True
        assert hits_later_quoted(conn, 30) == q


@pytest.mark.slow
def test_a_session_is_judged_again_when_the_import_adds_to_it(archived, tmp_path):
    """The verdicts are stored as the session is imported, and again when an import adds to it."""
    with archived.admin() as conn:
        before = hits_later_quoted(conn, 30)
    folder = tmp_path / "claude" / "-w-billing"
    later = [{"type": "text", "text": "Looked at notes/canary.md again to be sure."}]
    with (folder / "S1.jsonl").open("a") as f:
        f.write(_line(14, "assistant", later))
    with archived.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "claude"})
        after = hits_later_quoted(conn, 30)
    assert (after.sessions, after.recall_calls, after.tied) == (before.sessions, before.recall_calls, before.tied)
    assert sum(a.quoted for a in after.arms) > sum(a.quoted for a in before.arms)


@pytest.mark.slow
def test_verdicts_missing_or_of_an_older_rule_are_said_and_judged_on_demand(archived, tmp_path, cli):
    """An archive imported before verdicts were stored, or judged by an older rule: the usage
    figures count its sessions as not judged, and `archive judge` (or the next import) judges them."""
    from cli_org.archive.quoted import RULE_VERSION
    from cli_org.archive.verdicts import judge_stale

    _continuation(tmp_path / "claude")
    with archived.admin() as conn:
        import_sessions(conn, {"claude-code": tmp_path / "claude"})
        full = hits_later_quoted(conn, 30)
        assert judge_stale(conn).judged == 0  # the import judged everything
        assert (full.sessions, full.recall_calls, full.tied, full.unjudged) == (2, 3, 2, 0)
        conn.execute("DELETE FROM quoted_sessions")
        conn.commit()
        missing = hits_later_quoted(conn, 30)
        assert (missing.sessions, missing.recall_calls, missing.tied, missing.unjudged) == (2, 0, 0, 2)
    assert "2 sessions not judged yet: run `cli-org archive judge`" in cli("usage")[1]
    assert cli("archive", "judge") == (0, "2 sessions that recalled; 2 judged now\n", "")
    with archived.admin() as conn:
        assert hits_later_quoted(conn, 30) == full
        conn.execute("UPDATE quoted_sessions SET rule_version = %s", (RULE_VERSION - 1 or 1000,))
        conn.commit()
        assert hits_later_quoted(conn, 30).unjudged == 2
        import_sessions(conn, {"claude-code": tmp_path / "claude"})  # nothing new, but it judges them
        assert hits_later_quoted(conn, 30) == full
        # Messages the verdicts were not read from (as a restore could leave): judged again.
        conn.execute("UPDATE quoted_sessions SET messages = messages - 1")
        conn.commit()
        assert judge_stale(conn).judged == 2
        assert hits_later_quoted(conn, 30) == full


@pytest.mark.slow
def test_a_call_repeated_in_a_continuation_is_tied_in_the_session_that_started_first(org, tmp_path):
    """Rule 1 goes by when the sessions started, not by the order they were imported in."""
    root = tmp_path / "claude"
    _continuation(root)
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": root})
        conn.commit()
    _transcript(root)
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": root})
        conn.commit()
        ids = {r["external_id"]: r["id"] for r in conn.execute("SELECT external_id, id FROM archive_sessions")}
    assert ids["S3"] < ids["S1"]  # the continuation was imported first
    with org.admin() as conn:
        d = usage_detail(conn, 30)
    assert {s.session: (s.recall_calls, s.tied, s.quoted) for s in d.sessions} == {"S1": (3, 2, 3), "S3": (1, 0, 0)}


@pytest.mark.slow
def test_the_usage_page_data(archived):
    with archived.admin() as conn:
        d = usage_detail(conn, 30, "day")
    started = (NOW - timedelta(hours=2) + timedelta(minutes=1)).date()  # the first line's time, UTC
    assert [
        (p.period, p.harness, p.sessions, p.sessions_using, p.sessions_recalled, p.sessions_remembered)
        for p in d.over_time
    ] == [(started, "claude-code", 2, 1, 1, 1)]
    (s,) = d.sessions
    figures = (s.session, s.recall_calls, s.remember_calls, s.results, s.tied, s.hits, s.quoted)
    assert figures == ("S1", 3, 1, 2, 2, 7, 3)
    assert s.result_chars_median == min(len(FIRST_ANSWER), len(SECOND_ANSWER))
    assert d.recalls_per_using_session == 3.0
    agents = {a.agent: (a.recalls, a.remembers, a.days_recalling, a.chars_median, a.chars_p95) for a in d.agents}
    assert agents == {"bot": (2, 1, 2, 100, 300), "other": (1, 0, 1, 20, 20)}
    assert {(p.agent, p.recalls, p.remembers) for p in d.agents_over_time} >= {("bot", 1, 1), ("other", 1, 0)}
    with archived.admin() as conn:
        w = usage_detail(conn, 30, "week")
    assert all(p.period.weekday() == 0 for p in w.over_time + w.agents_over_time)
    with archived.admin() as conn, pytest.raises(InputError, match="bucket must be one of day, week"):
        usage_detail(conn, 30, "month")


@pytest.mark.slow
def test_a_member_sees_the_archive_and_the_log_a_stranger_is_refused(archived):
    """The archive's rules: every member reads every archived session and every agent's
    recall log (migrations 0003, 0004), so a bot's figures equal the admin's; a login that
    is not a member gets the clean refusal, not empty figures; a member cannot add to the
    log as another agent."""
    with archived.admin() as conn:
        admin = usage_detail(conn, 30)
    with archived.as_agent("bot") as conn:
        mine = usage_detail(conn, 30)
    assert mine.quoted == admin.quoted and mine.sessions == admin.sessions and mine.agents == admin.agents
    with archived.as_agent("other") as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(
            "INSERT INTO recall_events (agent, query, arms, hits, chars, ms) VALUES ('bot', 'q', '{}', 0, 0, 1)"
        )
    with archived.admin() as conn:
        conn.execute(f"CREATE ROLE \"{archived.name}_stranger\" LOGIN PASSWORD 's-pw'")
        conn.commit()
    with archived.login(f"{archived.name}_stranger", "s-pw") as conn, pytest.raises(AccessDenied):
        usage_detail(conn, 30)


@pytest.mark.slow
def test_cli_usage_shows_the_quoted_shares_and_the_detail(cli, archived):
    code, out, _ = cli("usage")
    assert code == 0
    assert "hits later quoted (1 session, 3 recall calls, 2 tied):" in out
    assert "fact     3 hits, 2 quoted (66.7%)" in out
    code, out, _ = cli("usage", "--detail", "--by", "week")
    print(out)
    assert code == 0 and "per session (3 recall calls per session that recalled):" in out
    assert "S1" in out and "per agent, from cli-org's own log" in out and "per week" in out
    data = json.loads(cli("usage", "--json")[1])
    assert data["quoted"]["tied"] == 2 and data["sessions"][0]["quoted"] == 3
    assert {a["arm"]: a["share"] for a in data["quoted"]["arms"]} == {"fact": 0.667, "memory": 0.0, "vault": 0.333}
    code, _, err = cli("usage", "--by", "month")
    assert code == 2
