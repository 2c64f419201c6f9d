"""Small versions of the load and fault scripts of stress/ (issue 14, part 3); the full runs
and their figures are in benchmarks/RESULTS.md ("Load and faults")."""

from __future__ import annotations

import pytest

from cli_org import facts, notebook
from cli_org.errors import InputError
from cli_org.recall.answer import recall
from cli_org.vault.search import search
from stress import fuzz, isolation, races
from tests.fakes import HashEmbedder


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
