"""--supersedes with a claim the agent already holds, and the duplicate-claim race."""

import json
import threading
import time

import psycopg
import pytest

from cli_org.errors import InputError
from cli_org.store import facts


def _current(org, fact_id):
    with org.admin() as conn:
        return conn.execute(
            "SELECT valid_to, superseded_by, supersedes, retired_by FROM memory_facts WHERE id = %s", (fact_id,)
        ).fetchone()


# What `remember` says of the other facts (issue 36) when the claim neither confirms nor contradicts one.
NOTHING_RELATED = {"confirms": None, "confirmed": None, "contradicts": []}


def test_supersedes_with_an_identical_own_claim_retires_the_old_fact(cli, org):
    old = int(cli("remember", "ci", "CI has 2 cores", "--source", "#4711", agent="bot")[1])
    mine = int(cli("remember", "ci", "CI has 4 cores", "--source", "t_c9", agent="bot")[1])
    code, out, err = cli(
        "remember", "ci", "CI has 4 cores", "--source", "t_c9", "--supersedes", str(old), "--json", agent="bot"
    )
    result = json.loads(out)
    assert (code, err) == (0, "")
    assert result == {"id": mine, "duplicate": True, "superseded": old, **NOTHING_RELATED}
    retired = _current(org, old)
    assert retired["valid_to"] is not None and retired["superseded_by"] == mine and retired["retired_by"] == "bot"
    assert _current(org, mine)["supersedes"] == old
    # Recall no longer serves the old fact.
    ids = [f["id"] for f in json.loads(cli("facts", "--json")[1])]
    assert ids == [mine]


def test_supersedes_text_output_says_both(cli):
    old = int(cli("remember", "ci", "CI has 2 cores", "--source", "#4711", agent="bot")[1])
    mine = int(cli("remember", "ci", "CI has 4 cores", "--source", "t_c9", agent="bot")[1])
    code, out, _ = cli("remember", "ci", "CI has 4 cores", "--source", "t_c9", "--supersedes", str(old), agent="bot")
    assert code == 0 and out.strip() == f"{mine} (already known; supersedes {old})"


def test_supersedes_itself_is_refused(cli):
    mine = int(cli("remember", "ci", "CI has 4 cores", "--source", "t_c9", agent="bot")[1])
    code, out, err = cli("remember", "ci", "CI has 4 cores", "--source", "t_c9", "--supersedes", str(mine), agent="bot")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert f"fact {mine} already says this" in err


def test_existing_fact_that_supersedes_another_is_refused(cli, org):
    first = int(cli("remember", "ci", "CI has 1 core", "--source", "#1", agent="bot")[1])
    out = cli("remember", "ci", "CI has 4 cores", "--source", "t_c9", "--supersedes", str(first), agent="bot")[1]
    mine = int(out.split()[0])
    other = int(cli("remember", "ci", "CI has 2 cores", "--source", "#2", agent="bot")[1])
    code, out, err = cli(
        "remember", "ci", "CI has 4 cores", "--source", "t_c9", "--supersedes", str(other), agent="bot"
    )
    assert code == 1 and out == "" and err.count("\n") == 1
    assert f"#{mine} already supersedes #{first}" in err and f"cli-org forget {other}" in err
    assert _current(org, other)["valid_to"] is None


def test_duplicate_without_supersedes_still_returns_the_existing_id(org):
    with org.as_agent("bot") as conn:
        first = facts.remember(conn, "ci", "CI has 4 cores", source="t_c9")
        again = facts.remember(conn, "ci", "CI has 4 cores", source="t_c9")
        assert again.duplicate and again.id == first.id and again.superseded is None
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_refusal_leaves_no_transaction_open(org):
    with org.as_agent("bot") as conn:
        mine = facts.remember(conn, "ci", "CI has 4 cores", source="t_c9").id
        with pytest.raises(InputError):
            facts.remember(conn, "ci", "CI has 4 cores", source="t_c9", supersedes=mine)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_duplicate_claim_race_leaves_no_transaction_open(org):
    """A second writer inserts the same claim after our lookup: our insert waits on the
    unique index, fails once that writer commits, and the existing id comes back."""
    claim = "The race is decided by the unique index"
    with org.as_agent("bot") as rival, org.as_agent("bot") as conn:
        rival.execute(
            "INSERT INTO memory_facts (subject, claim, source) VALUES ('race', %s, 'docs/r.md') RETURNING id", (claim,)
        )
        out = {}

        def write():
            try:
                out["result"] = facts.remember(conn, "race", claim, source="docs/r.md")
            except Exception as exc:  # reported below
                out["error"] = exc

        worker = threading.Thread(target=write)
        worker.start()
        with org.admin() as watch:  # wait until our insert is blocked on the rival's row
            for _ in range(200):
                waiting = watch.execute(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = %s",
                    (org.name,),
                ).fetchone()["n"]
                if waiting:
                    break
                time.sleep(0.02)
        rival.commit()
        worker.join(10)
        assert "error" not in out, out.get("error")
        result = out["result"]
        assert result.duplicate
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


# --- facts --all says the chain once; facts show ID -----------------------------------------


def _chain(cli):
    a = int(cli("remember", "ci", "CI has 1 core", "--source", "#1", agent="bot")[1])
    b = int(
        cli("remember", "ci", "CI has 2 cores", "--source", "#2", "--supersedes", str(a), agent="bot")[1].split()[0]
    )
    c = int(
        cli("remember", "ci", "CI has 4 cores", "--source", "#3", "--supersedes", str(b), agent="lead")[1].split()[0]
    )
    return a, b, c


def test_facts_all_says_superseded_once(cli):
    a, b, c = _chain(cli)
    code, out, _ = cli("facts", "--all")
    assert code == 0 and "(-> #" not in out
    assert out.count(f"superseded by #{b}") == 1 and out.count(f"superseded by #{c}") == 1
    lines = out.splitlines()
    assert lines[lines.index(next(line for line in lines if line.startswith(f"#{b} "))) + 2].startswith(
        f"    superseded by #{c} on "
    )


def test_facts_show_history_and_chain_both_ways(cli):
    a, b, c = _chain(cli)
    code, out, err = cli("facts", "show", str(b), "--json")
    assert (code, err) == (0, "")
    record = json.loads(out)
    assert record["fact"]["id"] == b and record["chain"] == [a, b, c]
    assert [f["id"] for f in record["older"]] == [a] and [f["id"] for f in record["newer"]] == [c]
    assert [(e["what"], e["who"]) for e in record["events"]] == [("written", "bot"), ("superseded", "lead")]
    assert record["events"][1]["other"] == c
    code, out, _ = cli("facts", "show", str(b))
    assert code == 0 and out.startswith(f"#{b} ci: CI has 2 cores\n")
    assert "written by bot" in out and f"superseded by #{c}, by lead" in out
    assert f" *#{b} CI has 2 cores" in out and f"  #{a} CI has 1 core" in out and f"  #{c} CI has 4 cores" in out
    code, out, _ = cli("forget", str(c), "wrong count", agent="bot")
    assert code == 1  # bot may not retire lead's fact
    cli("forget", str(c), "wrong count", agent="lead")
    code, out, _ = cli("facts", "show", str(c))
    assert "retired by lead: wrong count" in out


def test_facts_show_unknown_id(cli):
    code, out, err = cli("facts", "show", "4242")
    assert code == 1 and out == "" and err == "cli-org: no fact with id 4242\n"
    code, _, err = cli("facts", "show", "4242", "--json")
    assert code == 1 and json.loads(err) == {"error": "no fact with id 4242"}


def test_show_fact_leaves_the_connection_idle(org):
    with org.as_agent("bot") as conn:
        fact_id = facts.remember(conn, "ci", "CI has 4 cores", source="t_c9").id
        assert facts.show_fact(conn, fact_id).chain == [fact_id]
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
