"""The hits-later-quoted verdicts stored at import (archive/verdicts.py, migration 0029): the
same as the rule applied afresh to every session, over several windows; and a member, logged
in with her own password, can read them but not write, change or remove them."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from psycopg import errors as pgerr

from benchmarks.usage_scale import _write as write_generated
from cli_org.archive.importer import import_sessions
from cli_org.archive.quoted import MIN_CONTENT_WORDS, PHRASE_WORDS, SessionMessage, per_arm, quoted_in_session
from cli_org.archive.usage import Quoted, hits_later_quoted, usage_detail
from cli_org.errors import AccessDenied

pytestmark = pytest.mark.slow

NOW = datetime.now(UTC)
WINDOWS = (1, 10, 30, 3650)
ANSWER = "\n".join(
    [
        "[fact #{n}] rollout {n}: Rollouts of service {n} wait for the canary fleet in three zones (a.md; ops; today)",
        "[vault] ops/rollout-{n}.md: The rollout checklist names the owner of every shard",
        "[memory] .agents/org/memory/bot.md:{n} Staging resets every Monday morning before standup",
    ]
)


def _line(session: str, n: int, days_ago: float, role: str, content) -> str:
    stamp = (NOW - timedelta(days=days_ago) + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
    record = {
        "type": role,
        "sessionId": session,
        "uuid": f"{session}-{n}",
        "timestamp": stamp,
        "cwd": "/w/chain",
        "message": {"role": role, "model": "m", "content": content},
    }
    return json.dumps(record) + "\n"


def _chain(root):
    """Continuations started 50, 20 and 5 days ago (and two started together, 5 days ago),
    each repeating its parent's recall calls (same call ids) and adding one: which copy of a
    call is tied depends on the window (rule 1). Each quotes hits of every answer it holds."""
    folder = root / "-w-chain"
    folder.mkdir(parents=True)
    plan = [("c1", 50, ["x1"]), ("c2", 20, ["x1", "x2"]), ("c3", 5, ["x1", "x2", "x3"]), ("c4", 5, ["x2", "x4"])]
    for session, days_ago, calls in plan:
        lines = [_line(session, 0, days_ago, "user", "Carry on with the rollout.")]
        for i, call in enumerate(calls):
            n = int(call[1:])
            use = {
                "type": "tool_use",
                "id": call,
                "name": "Bash",
                "input": {"command": f"cli-org recall 'rollout {n}'"},
            }
            text = [{"type": "text", "text": ANSWER.format(n=n)}]
            result = {"type": "tool_result", "tool_use_id": call, "content": text}
            lines.append(_line(session, 3 * i + 1, days_ago, "assistant", [use]))
            lines.append(_line(session, 3 * i + 2, days_ago, "user", [result]))
            said = f"Per fact #{n}, and ops/rollout-{n}.md says the checklist names the owner of every shard."
            lines.append(_line(session, 3 * i + 3, days_ago, "assistant", [{"type": "text", "text": said}]))
        (folder / f"{session}.jsonl").write_text("".join(lines))


def _reference(conn, days: int) -> tuple[Quoted, dict[int, tuple[int, int, int]], dict]:
    """The rule applied afresh, as the Usage page did before verdicts were stored: every
    session of the window holding a recall call, in the order they started, read whole; a
    call id met in an earlier one is not a recall here (rule 1)."""
    ids = [
        r["id"]
        for r in conn.execute(
            "SELECT s.id FROM archive_sessions s WHERE s.started_at >= now() - %s::interval"
            " AND EXISTS (SELECT 1 FROM archive_messages m WHERE m.session_id = s.id AND m.recall_call)"
            " ORDER BY s.started_at, s.id",
            (f"{days} days",),
        )
    ]
    seen: set[str] = set()
    verdicts, per_session, calls, by_session = [], {}, 0, {}
    for sid in ids:
        rows = conn.execute(
            "SELECT id, kind, text, tool_call_id, recall_call FROM archive_messages WHERE session_id = %s"
            " ORDER BY position, part, id",
            (sid,),
        ).fetchall()
        held = [r["tool_call_id"] for r in rows if r["recall_call"] and r["tool_call_id"]]
        dropped = {i for i in held if i in seen}
        seen.update(held)
        messages = [
            SessionMessage(
                r["kind"], r["text"], r["tool_call_id"], r["recall_call"] and r["tool_call_id"] not in dropped
            )
            for r in rows
        ]
        n, found = quoted_in_session(messages)
        calls += n
        verdicts.extend(found)
        hits = [h for v in found for h in v.hits]
        per_session[sid] = (len(found), len(hits), sum(h.quoted for h in hits))
        by_session[sid] = (
            sorted(dropped),
            n,
            [
                (
                    rows[v.call]["id"],
                    rows[v.result]["id"],
                    [(h.arm, h.key, h.quoted, h.how, h.evidence) for h in v.hits],
                )
                for v in found
            ],
        )
    quoted = Quoted(PHRASE_WORDS, MIN_CONTENT_WORDS, len(ids), calls, len(verdicts), per_arm(verdicts))
    return quoted, per_session, by_session


def _stored(conn, session_id: int, dropped: list[str]):
    judged = conn.execute(
        "SELECT id, calls FROM quoted_sessions WHERE session_id = %s AND dropped = %s::text[]", (session_id, dropped)
    ).fetchone()
    recalls = []
    for r in conn.execute(
        "SELECT call_message, result_message FROM quoted_recalls WHERE judged = %s ORDER BY call_message",
        (judged["id"],),
    ):
        hits = conn.execute(
            "SELECT arm, key, quoted, how, evidence FROM quoted_hits WHERE judged = %s AND call_message = %s"
            " ORDER BY ordinal",
            (judged["id"], r["call_message"]),
        ).fetchall()
        recalls.append((r["call_message"], r["result_message"], [tuple(h.values()) for h in hits]))
    return judged["calls"], recalls


@pytest.fixture
def archive(org, tmp_path, corpora):
    """The real transcripts of all three harnesses, 40 generated sessions that recall (the
    benchmark's), the chain of continuations, and test_quoted's constructed sessions."""
    from tests.helpers import _continuation, _transcript

    generated = tmp_path / "generated"
    write_generated(generated, 40, random.Random(7))
    _chain(tmp_path / "chain")
    _transcript(tmp_path / "built")
    _continuation(tmp_path / "built")
    real = corpora("transcripts")
    with org.admin() as conn:
        import_sessions(conn, {"claude-code": real / "claude-code", "codex": real / "codex", "hermes": real / "hermes"})
        for folder in (generated, tmp_path / "chain", tmp_path / "built"):
            import_sessions(conn, {"claude-code": folder})
    return org


def test_stored_verdicts_are_the_rule_applied_afresh(archive):
    with archive.admin() as conn:
        conn.autocommit = True  # the reference's reads leave no transaction open
        for days in WINDOWS:
            expected, per_session, by_session = _reference(conn, days)
            assert hits_later_quoted(conn, days) == expected, days
            names = {r["id"]: (r["harness"], r["external_id"]) for r in conn.execute("SELECT * FROM archive_sessions")}
            listed = {(s.harness, s.session): (s.tied, s.hits, s.quoted) for s in usage_detail(conn, days).sessions}
            ours = {names[sid]: figures for sid, figures in per_session.items()}
            assert ours == {key: listed[key] for key in ours}, days
            assert all(figures == (0, 0, 0) for key, figures in listed.items() if key not in ours)
            # Every hit's verdict, as stored for the dropped ids this window gives the session.
            for sid, (dropped, calls, recalls) in by_session.items():
                assert _stored(conn, sid, dropped) == (calls, recalls), (days, names[sid])
        wide, _, _ = _reference(conn, 3650)
        sets = conn.execute(
            "SELECT count(*) AS n, count(DISTINCT session_id) AS sessions FROM quoted_sessions"
        ).fetchone()
    assert wide.tied > 40 and sum(a.quoted for a in wide.arms) > 0  # the data exercises the rule
    assert sets["n"] > sets["sessions"]  # and rule 1's windows: a continuation stores more than one set
    with archive.as_agent("bot") as conn:  # members read the same
        assert hits_later_quoted(conn, 3650) == wide


def test_importing_an_earlier_session_later_moves_the_tie(org, tmp_path):
    """Rule 1 by start, not by import order: c3 alone ties x1; once c1 (started earlier) is
    imported, c3's stored verdicts for the wide window no longer tie it."""
    _chain(tmp_path / "all")
    alone = tmp_path / "c3" / "-w-chain"
    alone.mkdir(parents=True)
    (alone / "c3.jsonl").write_text((tmp_path / "all" / "-w-chain" / "c3.jsonl").read_text())
    with org.admin() as conn:
        conn.autocommit = True
        import_sessions(conn, {"claude-code": tmp_path / "c3"})
        assert (hits_later_quoted(conn, 3650).tied, hits_later_quoted(conn, 3650).recall_calls) == (3, 3)
        import_sessions(conn, {"claude-code": tmp_path / "all"})
        expected, _, _ = _reference(conn, 3650)
        assert hits_later_quoted(conn, 3650) == expected
        assert (expected.sessions, expected.tied) == (4, 4)


# --- a member forging verdicts ------------------------------------------------------------

FORGERIES = (
    "INSERT INTO quoted_sessions (session_id, dropped, rule_version, newest, messages, calls)"
    " SELECT id, '{}', 1, 0, 0, 99 FROM archive_sessions LIMIT 1",
    "INSERT INTO quoted_recalls (judged, call_message, result_message)"
    " SELECT q.id, m.id, m.id FROM quoted_sessions q, archive_messages m LIMIT 1",
    "INSERT INTO quoted_hits (judged, call_message, ordinal, arm, key, quoted, how)"
    " SELECT judged, call_message, 99, 'fact', '1', true, 'id' FROM quoted_recalls LIMIT 1",
    "UPDATE quoted_hits SET quoted = true, how = 'id'",
    "UPDATE quoted_sessions SET calls = 99",
    "DELETE FROM quoted_recalls",
    "DELETE FROM quoted_sessions",
    "TRUNCATE quoted_hits",
)


@pytest.mark.attack("sql")
@pytest.mark.parametrize("statement", FORGERIES)
def test_a_member_cannot_write_verdicts(archive, statement):
    """Logged in as an agent with its own password: no write of any kind, for any session."""
    before = _figures(archive)
    with archive.login(f"{archive.name}_bot", "bot-pw") as bot:
        assert bot.execute("SELECT count(*) AS n FROM quoted_hits").fetchone()["n"] > 0  # it may read them
        with pytest.raises(pgerr.InsufficientPrivilege):
            bot.execute(statement)
    assert _figures(archive) == before


@pytest.mark.attack("sql")
def test_a_grant_given_by_mistake_still_writes_nothing(archive):
    """Row-level security is forced with a write policy only the administrator passes: a
    member granted every right on the tables still inserts nothing and changes no row."""
    with archive.admin() as admin:
        member = admin.execute("SELECT org_member_role() AS r").fetchone()["r"]
        admin.execute(f'GRANT INSERT, UPDATE, DELETE ON quoted_sessions, quoted_recalls, quoted_hits TO "{member}"')
        admin.commit()
    before = _figures(archive)
    with archive.login(f"{archive.name}_bot", "bot-pw") as bot:
        with pytest.raises(pgerr.InsufficientPrivilege, match="row-level security"):
            bot.execute(FORGERIES[0])
        bot.rollback()
        for statement in FORGERIES[3:7]:
            assert bot.execute(statement).rowcount == 0, statement
        bot.commit()
    assert _figures(archive) == before


@pytest.mark.attack("sql")
def test_a_member_cannot_have_the_archive_judged(archive):
    """Judging is the administrator's (it rewrites every session's verdicts)."""
    from cli_org.archive.verdicts import judge_stale

    with archive.login(f"{archive.name}_bot", "bot-pw") as bot, pytest.raises(AccessDenied):
        judge_stale(bot, lock_wait=0.5)


def _figures(org):
    with org.admin() as conn:
        return hits_later_quoted(conn, 3650), conn.execute(
            "SELECT count(*) AS n, sum(calls) AS calls FROM quoted_sessions"
        ).fetchone()
