"""The audited erase (issue 33, item 9; migration 0036): an owner removes a fact's or an
archived message's text from every place the database keeps it, and who, when and why stay.

The proof is a dump of the whole database (pg_dump, data and schema) that holds no trace of
the text. Only the dump is in scope: the WAL, row versions not yet vacuumed, replicas and
backups made before still hold it (docs/security.md says so)."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime

import pytest
from psycopg import errors as pgerr

from cli_org.archive.importer import import_sessions
from cli_org.errors import AccessDenied, InputError
from cli_org.recall.answer import recall
from cli_org.store import facts, notebook
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.slow

# Unique, and nothing the write scan refuses: a bucket's name, as a leaked one would be.
MARKER = "quokka-lantern-7731"
CLAIM = f"The nightly export job reads the storage bucket {MARKER} before it starts"
OTHER = "palisade-ocelot-5520"  # the erased message's own text


def _dump(org) -> str:
    """The whole database as pg_dump writes it: schema and every row (plain format)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from cli_org.db import embedded

    params = conninfo_to_dict(org.server.url(org.name))
    password = params.pop("password", None)
    return subprocess.run(
        [str(embedded.tool_path("pg_dump")), "--enable-row-security", "-d", make_conninfo(**params)],
        env={**os.environ, **({"PGPASSWORD": str(password)} if password else {})},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _session(root, lines: list[tuple[str, str]]) -> None:
    folder = root / "-w-erase"
    folder.mkdir(parents=True)
    out = []
    for n, (role, text) in enumerate(lines):
        record = {
            "type": role,
            "sessionId": "s-erase",
            "uuid": f"s-erase-{n}",
            "timestamp": datetime(2026, 1, 5, 10, 0, n, tzinfo=UTC).isoformat().replace("+00:00", "Z"),
            "cwd": "/w/erase",
            "message": {"role": role, "model": "m", "content": [{"type": "text", "text": text}]},
        }
        out.append(json.dumps(record) + "\n")
    (folder / "s-erase.jsonl").write_text("".join(out))


@pytest.fixture
def seeded(org, tmp_path):
    """A fact of bot's holding MARKER, with its vector, recalled (hits and a query that quote
    it), copied into bot's notebook, quoted in a retirement reason and in an archived session."""
    conn = org.writer("bot")
    fact_id = facts.remember(conn, "exports", CLAIM, source="docs/ops.md", embedder=HashEmbedder()).id
    old = facts.remember(conn, "exports", "The nightly export job used to read the old bucket", source="docs/ops.md")
    facts.forget(conn, old.id, f"moved to bucket {MARKER}")
    notebook.add(conn, "memory", f"Note to self: {CLAIM}")
    for query in ("nightly export storage bucket", f"which job reads {MARKER}"):
        assert f"#{fact_id}" in recall(conn, query, settings=org.settings).text
    _session(
        tmp_path / "claude",
        [
            ("user", f"Check this fact: {CLAIM}."),
            ("assistant", f"Done: the job reads {MARKER} every night."),
            ("user", f"And this one holds {OTHER} alone, a pasted token."),
            ("assistant", "Noted."),
        ],
    )
    with org.admin() as admin:
        admin.autocommit = True
        import_sessions(admin, {"claude-code": tmp_path / "claude"})
    dump = _dump(org)
    assert dump.count(MARKER) >= 6 and OTHER in dump  # the places the erase must reach
    return fact_id


@pytest.mark.vectors
def test_an_owner_erases_a_fact_and_the_dump_holds_no_trace(org, seeded, cli):
    code, out, err = cli(
        "facts", "erase", str(seeded), "--reason", "a leaked bucket name", "--also", MARKER, agent="boss"
    )
    assert (code, err) == (0, "")
    assert out.startswith(f"erased fact {seeded}; rows changed: ")
    assert MARKER not in _dump(org)

    # What stays: the row, its author and times, retired, and who erased it, when and why.
    with org.admin() as conn:
        row = conn.execute("SELECT * FROM memory_facts WHERE id = %s", (seeded,)).fetchone()
        assert (row["author"], row["subject"], row["claim"], row["source"]) == (
            "bot",
            "[erased]",
            "[erased]",
            "#erased",
        )
        assert row["valid_to"] is not None and row["retired_by"] == "boss"
        assert (
            conn.execute("SELECT count(*) AS n FROM memory_fact_vectors WHERE fact_id = %s", (seeded,)).fetchone()["n"]
            == 0
        )
    code, out, _ = cli("facts", "show", str(seeded), agent="bot")
    assert code == 0 and "erased by boss at " in out and ": a leaked bucket name" in out
    code, out, _ = cli("facts", "show", str(seeded), "--json", agent="bot")
    shown = json.loads(out)
    assert shown["erased"]["by"] == "boss" and shown["erased"]["reason"] == "a leaked bucket name"
    assert [e["what"] for e in shown["events"]] == ["written", "retired", "erased"]
    code, out, _ = cli("activity", "--json", agent="bot")
    line = json.loads(out)["events"][0]
    assert (line["kind"], line["who"], line["fact_id"], line["detail"]) == (
        "erased",
        "boss",
        seeded,
        "a leaked bucket name",
    )
    code, out, _ = cli("activity", agent="bot")
    assert f"erased     boss via -  #{seeded} [erased]: a leaked bucket name" in out

    # It never comes back, and it is erased once.
    with pytest.raises(InputError, match="was erased"):
        facts.restore(org.writer("boss"), seeded, "it holds again")
    code, _, err = cli("facts", "erase", str(seeded), "--reason", "again", agent="boss")
    assert code == 1 and "already erased" in err
    code, out, _ = cli("export")
    assert code == 0 and MARKER not in out and "[erased]" in out


def test_the_web_page_says_erased(org, seeded, web):
    facts_conn = org.writer("boss")
    from cli_org.store.erase import erase_fact

    erase_fact(facts_conn, seeded, "a leaked bucket name", also=[MARKER])
    page = web("bot").get(f"/facts/{seeded}")
    assert page.status_code == 200
    assert "Erased</strong> by" in page.text and "a leaked bucket name" in page.text
    assert "/restore" not in page.text and MARKER not in page.text


def test_the_whole_claim_goes_without_also_and_the_other_copies_are_named(org, seeded):
    from cli_org.store.erase import erase_fact

    done = erase_fact(org.writer("boss"), seeded, "a leaked bucket name")
    assert done.places["notebook entries"] == 1 and done.places["recall hits of the fact"] >= 1
    dump = _dump(org)
    assert CLAIM not in dump
    assert MARKER in dump  # the copies that quote the name alone stay: --also reaches them


def test_an_owner_erases_an_archived_message(org, seeded, cli):
    code, out, _ = cli("sessions", "show", "s-erase")
    assert code == 0 and "#3 user" in out and OTHER in out
    code, out, err = cli("archive", "erase", "s-erase", "3", "--reason", "a pasted token", agent="boss")
    assert (code, err) == (0, "")
    assert out.startswith("erased message 3 of session s-erase")
    assert OTHER not in _dump(org)
    code, out, _ = cli("sessions", "show", "s-erase")
    assert "[erased]" in out and MARKER in out  # the other messages are untouched
    code, out, _ = cli("activity", agent="bot")
    assert "erased     boss via -  session s-erase #3: a pasted token" in out
    code, _, err = cli("archive", "erase", "s-erase", "3", "--reason", "again", agent="boss")
    assert code == 1 and "already erased" in err


def test_the_reason_may_not_quote_the_text(org, seeded, cli):
    code, _, err = cli("facts", "erase", str(seeded), "--reason", f"it named {MARKER}", "--also", MARKER, agent="boss")
    assert code == 1 and "the reason quotes the text it erases" in err
    code, _, err = cli("facts", "erase", str(seeded), "--reason", "x", "--also", "not-in-the-fact", agent="boss")
    assert code == 1 and "must be part of fact" in err
    code, _, err = cli("facts", "erase", str(seeded), "--reason", "x", "--also", "short", agent="boss")
    assert code == 1 and "at least 8 characters" in err


# --- a member's attempts --------------------------------------------------------------


@pytest.mark.attack("sql")
@pytest.mark.parametrize("agent", ["bot", "lead"])
def test_a_member_cannot_erase_through_the_cli(org, seeded, cli, agent):
    """Neither the fact's author nor its author's team lead: owners only."""
    code, _, err = cli("facts", "erase", str(seeded), "--reason", "mine", agent=agent)
    assert code == 1 and f"agent {agent} may not erase: only an owner may" in err
    code, _, err = cli("archive", "erase", "s-erase", "3", "--reason", "mine", agent=agent)
    assert code == 1 and "only an owner may" in err
    assert MARKER in _dump(org)


# The ways in that 0036 adds: its functions, and its record of erasures.
MEMBER_SQL = (
    "SELECT org_erase_fact({id}, 'mine')",
    "SELECT org_erase_fact({id}, 'mine', ARRAY['" + MARKER + "'])",
    "SELECT org_erase_message((SELECT id FROM archive_sessions LIMIT 1), 3, 'mine')",
    "SELECT org_erase_scrub(ARRAY['" + MARKER + "'])",
    "SELECT org_erase_vectors({id})",
    "INSERT INTO memory_erasures (fact_id, erased_by, reason) VALUES ({id}, 'boss', 'forged')",
    "UPDATE memory_erasures SET reason = 'forged'",
    "DELETE FROM memory_erasures",
)
# What held before and must still hold beside the policies 0036 adds for the definer: no
# member changes or deletes the rows the erase does (no grant).
STILL_REFUSED = (
    "UPDATE memory_facts SET claim = '[erased]' WHERE id = {id}",
    pytest.param("DELETE FROM memory_fact_vectors WHERE fact_id = {id}", marks=pytest.mark.vectors),
    "UPDATE recall_hits SET text = '[erased]'",
    "UPDATE recall_events SET query = '[erased]'",
    "UPDATE notebook_versions SET body = '[erased]'",
    "UPDATE memory_restores SET why = '[erased]'",
    "UPDATE memory_tidy_log SET evidence = '{{}}'",
    "UPDATE archive_messages SET text = '[erased]'",
)


def _refused(org, fact_id: int, statement: str) -> None:
    """bot, logged in over TCP with its own password, runs `statement`: refused, nothing gone."""
    with org.login(f"{org.name}_bot", "bot-pw") as conn, pytest.raises(pgerr.InsufficientPrivilege):
        conn.execute(statement.format(id=fact_id))
    assert MARKER in _dump(org)


@pytest.mark.attack("sql")
@pytest.mark.parametrize("statement", MEMBER_SQL)
def test_a_member_cannot_erase_through_sql(org, seeded, statement):
    _refused(org, seeded, statement)


@pytest.mark.parametrize("statement", STILL_REFUSED)
def test_a_member_still_cannot_change_what_the_erase_changes(org, seeded, statement):
    _refused(org, seeded, statement)


@pytest.mark.attack("sql")
def test_a_member_cannot_bring_an_erased_fact_back(org, seeded):
    from cli_org.store.erase import erase_fact

    erase_fact(org.writer("boss"), seeded, "a leaked bucket name", also=[MARKER])
    with (
        org.login(f"{org.name}_bot", "bot-pw") as conn,
        pytest.raises(pgerr.ObjectNotInPrerequisiteState, match="erased"),
    ):
        conn.execute("SELECT org_restore(%s, 'it holds again')", (seeded,))
    with pytest.raises((AccessDenied, InputError)):
        facts.restore(org.writer("bot"), seeded, "it holds again")
    new = facts.remember(org.writer("bot"), "exports", "The job reads a new bucket now", source="docs/ops.md")
    with (
        org.login(f"{org.name}_bot", "bot-pw") as conn,
        pytest.raises(pgerr.ObjectNotInPrerequisiteState, match="retired"),
    ):
        conn.execute("SELECT org_supersede(%s, %s)", (seeded, new.id))
