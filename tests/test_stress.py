"""Small versions of the load and fault scripts of stress/ (issue 14, part 3); the full runs
and their figures are in benchmarks/RESULTS.md ("Load and faults")."""

from __future__ import annotations

import pytest

from cli_org.errors import InputError
from cli_org.recall.answer import recall
from cli_org.store import facts, notebook
from cli_org.vault.search import search
from stress import fuzz, isolation, races
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.slow


def _login(org):
    passwords = {"bot": "bot-pw", "other": "other-pw"}
    return lambda agent: org.login(f"{org.name}_{agent}", passwords[agent])


# --- fuzz: found two bugs, each fixed in db/errors.translated -------------------------------


@pytest.mark.parametrize("text", ["deploy \udc80 freeze", "\ud800", "a\udfffb"])
def test_a_lone_surrogate_is_one_clean_input_error_everywhere(org, text):
    """Before: UnicodeEncodeError from the driver (MCP and library callers get lone
    surrogates from JSON escapes; the CLI refuses them earlier, at argv)."""
    with org.as_agent("bot") as conn:
        for call in (
            lambda: recall(conn, text, settings=org.settings),
            lambda: search(conn, text, mode="keyword"),
            lambda: facts.remember(conn, "subject", f"claim {text}", source="docs/a.md"),
            lambda: notebook.add(conn, "memory", f"entry {text}"),
            lambda: facts.list_facts(conn, subject=text),
        ):
            with pytest.raises(InputError, match="lone surrogate that is not valid Unicode"):
                call()
            assert conn.info.transaction_status == 0  # idle: the connection is still usable
        assert facts.remember(conn, "subject", "a clean claim after", source="docs/a.md").id


def test_a_nul_in_a_query_is_an_input_error_not_a_database_error(org):
    with org.as_agent("bot") as conn:
        with pytest.raises(InputError, match="NUL character"):
            recall(conn, "deploy\x00freeze", settings=org.settings)
        with pytest.raises(InputError, match="NUL character"):
            search(conn, "\x00", mode="keyword")


def test_fuzzed_queries_answer_or_raise_a_clean_error(org, tmp_path):
    embedder = HashEmbedder()
    with org.admin() as admin, org.as_agent("bot") as conn:
        fuzz.seed_data(admin, conn, tmp_path / "vault")
        from cli_org.vault.embed import embed_pending

        embed_pending(admin, embedder)
        out = fuzz.fuzz(conn, org.settings, 150, seed=7, embedder=embedder)
    assert out.unexpected == [], out.unexpected[:3]
    assert out.answered > 50 and out.refused["InputError"] > 5  # both kinds were exercised


def test_the_generator_is_seeded_and_reaches_every_kind_of_hostile_input():
    import random

    first = [fuzz.query(random.Random(3)) for _ in range(1)]
    assert first == [fuzz.query(random.Random(3))]
    rng = random.Random(5)
    sample = [fuzz.query(rng) for _ in range(3000)]
    joined = "".join(q[:2000] for q in sample)
    assert "\x00" in joined and any(0xD800 <= ord(c) < 0xE000 for c in joined)
    assert all(op in joined for op in ("<->", ":*", "&", "|", "!", "'", '"'))
    assert any(len(q) > 1000 for q in sample) and any(len(q.split()) > 64 for q in sample)


# --- races ----------------------------------------------------------------------------------


def test_racing_remember_loses_and_duplicates_nothing(org):
    out = races.remember_race(_login(org), org.admin, ["bot", "other"], threads=3, claims=15)
    assert out["calls"] == 90 and out["errors"] == []
    assert (out["lost"], out["duplicated"], out["ids_disagree"]) == (0, 0, 0)


def test_racing_writers_keep_claims_that_share_their_numbers_in_another_order(org):
    """Issue 36: "Claim 1-2 from writer 1." was refused as a near-duplicate of "Claim 2-1 from
    writer 2." (the numbers compared as a set), and the race lost writes. Each agent writes
    every claim "Claim a-b from writer w." for a, b in 1..3 and w in 1..2: 18 claims, most of
    them the same words and the same set of numbers as another."""
    combos = [(a, b, w) for a in (1, 2, 3) for b in (1, 2, 3) for w in (1, 2)]

    def text(agent: str, i: int) -> str:
        a, b, w = combos[i]
        return f"Claim {a}-{b} from writer {w}."

    out = races.remember_race(_login(org), org.admin, ["bot", "other"], threads=3, claims=len(combos), text=text)
    assert out["calls"] == 108 and out["errors"] == []
    assert (out["lost"], out["duplicated"], out["ids_disagree"]) == (0, 0, 0)


def test_racing_notebook_writes_never_pass_the_cap(org):
    out = races.notebook_race(_login(org), org.admin, "bot", threads=3, writes=15)
    assert out["errors"] == []
    assert out["outcomes"].get("full", 0) > 0  # the cap was reached, again and again
    assert out["max_seen"] <= out["cap"] and out["final"] <= out["cap"]
    assert (out["lost"], out["ghosts"]) == (0, 0)


def test_racing_pins_never_pass_the_caps(org):
    out = races.pins_race(_login(org), org.admin, ["bot", "other"], threads=4, moves=25)
    assert out["errors"] == [] and out["exceeded"] == []
    assert out["outcomes"].get("full", 0) > 0  # the caps were reached


# --- isolation ------------------------------------------------------------------------------


def test_concurrent_agents_never_read_each_others_private_lines(org):
    login = _login(org)
    agents = ["bot", "other"]
    isolation.seed(login, agents)
    out = isolation.run(login, org.settings, agents, queries=80, sessions_per_agent=2)
    assert out["errors"] == [] and out["calls"] == 80
    assert out["leaks"] == 0, out["first_leaks"]
    assert out["own_seen"].get("recall", 0) > 0 and out["own_seen"].get("project", 0) > 0  # the control
    assert isolation.logged_as_asked(org.admin, out["recalls_by_agent"])


def test_the_isolation_check_sees_a_leak(org):
    """The checker itself: what an owner may read (a member's notebook, every project) is
    what a member asking must never see."""
    login = _login(org)
    isolation.seed(login, ["bot", "other"])
    with org.as_agent("boss") as conn:
        answer = repr(notebook.show(conn, agent="other")) + repr(facts.list_facts(conn))
    found = isolation.foreign_markers("bot", "alpha", ["bot", "other"], answer)
    assert isolation.note_marker("other") in found and isolation.project_marker("beta") in found
    assert isolation.project_marker("alpha") not in found


# --- faults ---------------------------------------------------------------------------------


def test_a_connection_the_server_ends_is_one_clear_line(org):
    """57P01 from the server (pg_terminate_backend, a shutdown): the 'lost the database' line."""
    from cli_org.db.errors import translated
    from cli_org.errors import DatabaseError

    with org.as_agent("bot") as conn, org.admin() as admin:
        pid = conn.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(DatabaseError, match="lost the database in the middle of the command"), translated(conn):
            conn.execute("SELECT 1")


@pytest.fixture
def private_server(tmp_path, server):
    """A private embedded server that a test may stop (never the suite's own)."""
    if server.data_dir is None:
        pytest.skip("stops an embedded server; the suite runs against CLI_ORG_TEST_DATABASE_URL")
    from cli_org.db import embedded

    data_dir = tmp_path / "private"
    yield data_dir
    embedded.stop(data_dir)


def test_the_server_stopped_mid_scan_is_one_line_and_nothing_half_written(private_server, tmp_path):
    from stress import stopped

    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(1000):  # a scan of several transactions of 200 notes
        (vault / f"note{i}.md").write_text(f"# Note {i}\n\nword{i} and [[note{i + 1}]] #tag{i % 7}\n")
    out = stopped.stopped_during(private_server, ["vault", "scan", str(vault)], after=0.0, rerun=False)
    assert out["running_when_stopped"], out
    assert out["exit_code"] == 1 and out["stderr_lines"] == 1 and not out["traceback"], out["stderr"]
    assert "lost the database in the middle of the command" in out["stderr"][0]
    assert not any(out["orphans"].values()), out["orphans"]
    # whole transactions only: the notes kept are a multiple of the scan's batch
    assert out["rows_before_rerun"].get("vault_files", 0) % 200 == 0


def test_kill_9_during_scan_and_import_then_a_rerun_equals_a_clean_run(blank_db, corpora):
    """The small version of stress/kills.py: the TIL vault's go folder and the transcripts,
    two kills each, every one on a fresh database so that it lands inside the command's run
    (the embed kills run in the script: the model's start-up is too slow here)."""
    import psycopg
    from psycopg import sql as pgsql
    from psycopg.rows import dict_row

    from cli_org.config import Settings
    from cli_org.store.bootstrap import init
    from stress import kills
    from tests.databases import drop_database

    names = {"clean": blank_db.name, "killed": blank_db.name + "_k"}

    def env_for(key):
        env = {**blank_db.env}
        if env.get("CLI_ORG_DATABASE_URL"):
            env["CLI_ORG_DATABASE_URL"] = blank_db.server.url(names[key])
        else:
            env["CLI_ORG_DATABASE"] = names[key]
        return env

    def drop_killed(conn):
        drop_database(conn, names["killed"])
        for (role,) in conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (names["killed"] + "\\_%",)):
            conn.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(role)))

    made = []

    def fresh(key):
        if key == "killed":  # the clean one is the fixture's own, empty database
            with psycopg.connect(blank_db.server.admin_url, autocommit=True) as conn:
                drop_killed(conn)
                conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(names["killed"])))
        init(Settings.from_env(env_for(key)), "boss")
        made.append(key)

    try:
        out = kills.run(
            fresh,
            env_for,
            lambda key: psycopg.connect(blank_db.server.url(names[key]), row_factory=dict_row),
            corpora("til") / "go",
            corpora("transcripts"),
            kills=4,
            seed=3,
            ops=("scan", "import"),
        )
        bad = [r for r in out["runs"] if not r["equal"]]
        assert not bad, bad
        assert out["no_orphans"], [r["orphans"] for r in out["runs"]]
        assert [r["op"] for r in out["runs"]] == ["scan", "scan", "import", "import"]
        assert made == ["clean"] + ["killed"] * sum(1 + r["finished_first"] for r in out["runs"])
        assert out["clean_counts"]["vault_files"] > 0 and out["clean_counts"]["archive_messages"] > 0
        # Every kill landed inside its run, whatever the load (a run that ended first is retried).
        assert out["landed"] == 4, out["runs"]
    finally:
        with psycopg.connect(blank_db.server.admin_url, autocommit=True) as conn:
            drop_killed(conn)


# --- the MCP server under concurrent clients ----------------------------------------------


def test_concurrent_mcp_clients_all_answer_and_every_fact_is_stored_once(org):
    from stress import mcp_load

    agents = ["bot", "other"]
    out = mcp_load.run(org.env, agents, calls=4)
    assert out["errors"] == 0, out["first_errors"]
    assert out["calls"] == 8 and set(out["ms"]) == {"org_recall", "org_remember", "org_notebook", "org_facts"}
    assert mcp_load.stored(org.admin, agents) == out["remembered"] == {"bot": 2, "other": 2}
