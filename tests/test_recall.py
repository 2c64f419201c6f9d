"""recall: every matching rule with a case that must match and a near miss that must not."""

import dataclasses
import json
from pathlib import Path

import pytest
from psycopg import errors as pgerr

from cli_org.db.connect import connect
from cli_org.errors import InputError
from cli_org.recall.answer import NOTHING, parse_arms, recall
from cli_org.recall.terms import needed, terms
from cli_org.recall.vault_arm import has_keyword_support, idf_coverage, shape
from cli_org.shaping import ANSWER_SHAPING, SHAPING, VaultShaping
from cli_org.store import facts
from cli_org.vault.embed import embed_pending
from cli_org.vault.scan import scan
from cli_org.vault.search import NoteHit
from tests.fakes import HashEmbedder


def remember(org, agent, subject, claim, **kw):
    return facts.remember(org.writer(agent), subject, claim, source=kw.pop("source", "docs/x.md"), **kw).id


@pytest.fixture
def env(org, tmp_path):
    """A memory folder and an empty vault; returns a function running recall as `bot`."""
    root = tmp_path / "root"
    (root / ".agents/org/memory").mkdir(parents=True)
    settings = dataclasses.replace(org.settings, root=str(root))

    def run(query, **kw):
        with connect(settings, kw.pop("agent", "bot")) as conn:
            return recall(conn, query, settings=settings, embedder=kw.pop("embedder", None), **kw)

    run.root, run.settings = root, settings
    return run


def memory(env, name, text):
    (env.root / ".agents/org/memory" / name).write_text(text)


def arm_hits(result, arm):
    return [h for h in result.hits if h.arm == arm]


# --- terms -----------------------------------------------------------------------------


SHAPING_03 = VaultShaping(min_similarity=0.3, keyword_similarity=0.3)


def test_terms_drop_question_words_and_short_words():
    assert terms("How does the render job work, and why?") == ["render", "job", "work"]
    assert terms("is it ok") == []
    assert [needed(n) for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 3]


# --- [fact] ----------------------------------------------------------------------------


def test_fact_strict_ands_every_word(org, env):
    both = remember(org, "bot", "deploy", "The deploy runs nightly at 02:00")
    remember(org, "bot", "deploy", "Deploys are manual on Fridays")
    result = env("deploy nightly", arms=("fact",))
    assert [h.data["id"] for h in result.hits] == [both]
    assert result.hits[0].data["match"] == "strict"


def test_fact_substring(org, env):
    fid = remember(org, "bot", "auth", "cli-board returns 401 when the token expired")
    hit = env("cli-boa", arms=("fact",)).hits[0]  # not a whole word: only the substring rule finds it
    assert hit.data["id"] == fid and hit.data["match"] == "strict"


def test_fact_loose_prefix_only_when_strict_finds_nothing(org, env):
    fid = remember(org, "bot", "auth", "cli-board returns 401s when the token expired")
    # "401" is a prefix of "401s"; "why" is a question word; 2 of 3 terms match the word starts.
    result = env("why does cli-board return 401", arms=("fact",))
    assert [h.data["id"] for h in result.hits] == [fid] and result.hits[0].data["match"] == "loose"
    strict = remember(org, "bot", "auth", "Why cli-board return 401: the proxy strips headers")
    result = env("why does cli-board return 401", arms=("fact",))
    assert [h.data["id"] for h in result.hits] == [strict]  # the loose pass never ran


def test_fact_loose_needs_half_the_terms(org, env):
    remember(org, "bot", "cache", "Redis evicts keys under memory pressure")
    assert env("redis evict policy", arms=("fact",)).hits  # 2 of 3: "evict" starts "evicts"
    assert not env("redis eviction policy", arms=("fact",)).hits  # "eviction" is no prefix of "evicts"
    assert not env("redis cluster failover", arms=("fact",)).hits  # 1 of 3
    assert env("redis cluster", arms=("fact",)).hits  # 1 of 2
    assert not env("memcached cluster failover latency", arms=("fact",)).hits  # 0 of 4
    assert env("redis memory failover latency", arms=("fact",)).hits  # 2 of 4


def test_fact_prefix_is_at_word_start(org, env):
    remember(org, "bot", "ui", "The page renders slowly")
    assert env("render speed", arms=("fact",)).hits
    assert not env("ender speed", arms=("fact",)).hits


def test_fact_project_scoping_and_retired_hidden(org, env):
    web = remember(org, "bot", "ci", "CI uses four runners", project="web")
    api = remember(org, "bot", "ci", "CI uses two runners", project="api")
    every = remember(org, "bot", "ci", "CI runners reboot nightly")
    ids = {h.data["id"] for h in env("CI runners", arms=("fact",), project="web").hits}
    assert ids == {web, every}
    assert {h.data["id"] for h in env("CI runners", arms=("fact",)).hits} == {web, api, every}
    with org.as_agent("bot") as conn:
        facts.forget(conn, every, "wrong")
    assert {h.data["id"] for h in env("CI runners", arms=("fact",)).hits} == {web, api}


# --- [memory] --------------------------------------------------------------------------


def test_memory_word_starts_and_question_words(env):
    memory(
        env,
        "alpha.md",
        "# Alpha\n- show the board status\n- video renders take 4 minutes\n"
        "- render farm lives on host b7\n- how to restart the queue\n",
    )
    result = env("how do I render video", arms=("memory",))
    lines = [h.data["line"] for h in result.hits]
    assert lines == [3, 4]  # both terms, then one of two; "how" never matched "show"
    assert result.hits[0].text.startswith("[memory] .agents/org/memory/alpha.md:3 ")
    assert not env("ender ideo", arms=("memory",)).hits


def test_memory_half_of_terms_odd_and_even(env):
    memory(env, "b.md", "alpha beta\nalpha beta gamma\nalpha\n")
    assert [h.data["line"] for h in env("alpha beta gamma", arms=("memory",)).hits] == [2, 1]  # needs 2 of 3
    assert [h.data["line"] for h in env("alpha beta gamma delta", arms=("memory",)).hits] == [2, 1]  # 2 of 4
    assert [h.data["line"] for h in env("alpha zeta", arms=("memory",)).hits] == [1, 2, 3]  # 1 of 2


def test_memory_lines_take_at_most_half_the_limit_and_half_the_pool(env):
    """The primary specification: "at most half of --limit lines are kept" (issue 37: a fixed
    cap of 8 once let `--limit 4` answer with 3 memory lines); one for --limit 1, and never
    more than half the pool. A smaller limit keeps the first of a larger one's lines."""
    memory(env, "many.md", "\n".join(f"deploy note number {i}" for i in range(20)))
    lines = {n: [h.text for h in env("deploy", arms=("memory",), limit=n).hits] for n in (1, 4, 5, 8, 16, 50)}
    assert {n: len(found) for n, found in lines.items()} == {
        1: 1,
        4: 2,
        5: 2,
        8: 4,
        16: 8,
        50: ANSWER_SHAPING.pool // 2,
    }
    for n in (1, 4, 5, 8, 16):
        assert lines[n] == lines[50][: len(lines[n])]


def test_memory_lines_leave_the_other_half_of_the_limit_to_facts(org, env):
    """More memory lines and facts than `--limit 4` holds: the memory lines that hold every
    word come before facts holding one of them, and once took all four places; now two."""
    memory(env, "ci.md", "\n".join(f"the tests of part {i} run nightly" for i in range(6)))
    for i in range(3):
        remember(org, "bot", "tests", f"The tests of service {i} need the staging database")
    hits = env("tests nightly", limit=4).hits
    assert [h.arm for h in hits] == ["memory", "memory", "fact", "fact"]
    assert {h.data["match"] for h in hits[2:]} == {"loose"}
    assert [h.arm for h in env("tests nightly", limit=8).hits] == ["memory"] * 4 + ["fact"] * 3


def test_memory_root_from_git_top_level(tmp_path):
    from cli_org.local.project import project_root

    (tmp_path / "repo/.git").mkdir(parents=True)
    (tmp_path / "repo/src/deep").mkdir(parents=True)
    assert project_root(None, tmp_path / "repo/src/deep") == (tmp_path / "repo").resolve()
    assert project_root(str(tmp_path / "x")) == tmp_path / "x"


# --- [vault] ---------------------------------------------------------------------------

VAULT = {
    "git/squash.md": "# Squash commits\n\nFold commits together with an interactive rebase.\n",
    "git/fixup.md": "# Fixup commits\n\nMark a commit as a fixup of an earlier commit.\n",
    "CURRENT/today.md": "# Today\n\nSquash the release commits.\n",
    "Areas/Finance/budget.md": "# Budget\n\nSquash commits cost nothing.\n",
    "config/prod.env.md": "# Prod env\n\nSquash commits in prod.\n",
    "private/notes.md": "# Private\n\nSquash commits privately.\n",
    "copy/squash.md": "# Squash commits\n\nFold commits together with an interactive rebase.\n",
    "cooking/bread.md": "# Bread\n\nKnead the dough and let it rise overnight.\n",
}


@pytest.fixture
def vault_env(env, tmp_path):
    root = tmp_path / "vault"
    for rel, text in VAULT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with connect(env.settings) as conn:
        scan(conn, root)
    return env


def test_vault_exclusions_and_duplicates(vault_env):
    paths = [h.data["path"] for h in vault_env("squash commits", arms=("vault",)).hits]
    assert paths[0] in ("git/squash.md", "copy/squash.md")
    assert not {"CURRENT/today.md", "Areas/Finance/budget.md", "config/prod.env.md"} & set(paths)
    assert len({"git/squash.md", "copy/squash.md"} & set(paths)) == 1  # same title and snippet: one slot
    assert "private/notes.md" in paths
    settings = dataclasses.replace(vault_env.settings, recall_exclude=["private/"])
    with connect(settings, "bot") as conn:
        result = recall(conn, "squash commits", settings=settings, arms=("vault",))
    assert "private/notes.md" not in [h.data["path"] for h in result.hits]


@pytest.mark.vectors
def test_vault_vector_only_hits_need_keyword_company(vault_env):
    embedder = HashEmbedder({"dough": "commits", "knead": "squash"})
    with connect(vault_env.settings) as conn:
        embed_pending(conn, embedder)
    # Keyword support present: the vector-only note may join, labelled as such (with no
    # cut-off: the bag-of-words cosine puts the note far below the squash notes).
    wide = dataclasses.replace(vault_env.settings, answer_shaping=dataclasses.replace(ANSWER_SHAPING, cut_gap=1.0))
    with connect(wide, "bot") as conn:
        result = recall(conn, "squash commits", settings=wide, arms=("vault",), embedder=embedder)
    supports = {h.data["path"]: h.data["support"] for h in result.hits}
    assert supports["git/squash.md" if "git/squash.md" in supports else "copy/squash.md"] == "keyword"
    assert supports.get("cooking/bread.md") == "vector-only"
    # Shared words and close meaning: supported.
    with connect(wide, "bot") as conn:
        found = recall(conn, "knead dough", settings=wide, arms=("vault",), embedder=embedder).hits
    assert {h.data["path"]: h.data["support"] for h in found}["cooking/bread.md"] == "keyword"
    # Shared words but far in meaning (this embedder reads the words differently): not support.
    far = HashEmbedder({"knead": "xx", "dough": "yy"})
    assert vault_env("knead dough", arms=("vault",), embedder=far).hits == []
    # No keyword support at all: the arm returns nothing, however similar the vectors.
    lonely = vault_env("zzkq wwvx", arms=("vault",), embedder=HashEmbedder({"zzkq": "squash", "wwvx": "commits"}))
    assert lonely.hits == [] and lonely.text == NOTHING


def _hit(path, kw_rank=None, matched=0, terms_=2, sim=None, snippet=None):
    return NoteHit(
        path,
        path,
        path,
        snippet or path,
        0.0,
        keyword_rank=kw_rank,
        matched_terms=matched,
        query_terms=terms_,
        semantic_score=sim,
    )


def test_shape_floor_and_vector_only_at_most_half_of_every_start_of_the_answer():
    from cli_org.recall.merge import merge

    hits = [_hit("k1", 1, 2), *[_hit(f"v{i}", sim=0.9 - i / 100) for i in range(8)], _hit("low", sim=0.2)]
    kept = shape(hits, limit=8, shaping=SHAPING_03)
    assert [k.hit.path for k in kept] == [f"v{i}" for i in range(7)] + ["k1"]  # by meaning; "low" below the floor
    # Vector-only hits fill at most half the limit, for every limit at once: no start of the
    # answer is more than half vector-only (rounded up); the rest wait for keyword-supported
    # company and, with none left, are dropped.
    assert [(k.hit.path, k.support) for k in merge([], [], kept)] == [
        ("v0", "vector-only"),
        ("k1", "keyword"),
        ("v1", "vector-only"),
    ]
    more = shape([*hits, _hit("k2", 2, 2, 2, 0.85), _hit("k3", 3, 2, 2, 0.84)], limit=20, shaping=SHAPING_03)
    paths = [k.hit.path for k in merge([], [], more)]
    assert len(paths) == 7 and "low" not in paths
    for n in range(1, len(paths) + 1):
        assert sum(p.startswith("v") for p in paths[:n]) <= (n + 1) // 2
    # One shared word of a three-word query is not keyword support.
    assert shape([_hit("weak", 1, 1, 3, 0.9)], limit=8, shaping=SHAPING_03) == []
    assert shape([_hit("ok", 1, 2, 3)], limit=8, shaping=SHAPING_03)[0].support == "keyword"
    # A long question: three shared words are enough, two are not.
    assert shape([_hit("long", 1, 3, 8, 0.5)], limit=8, shaping=SHAPING_03)
    assert shape([_hit("long", 1, 2, 8, 0.5)], limit=8, shaping=SHAPING_03) == []
    # Shared words with a vector far in meaning are not support; without vectors, words suffice.
    assert shape([_hit("far", 1, 2, 3, 0.1)], limit=8, shaping=SHAPING_03) == []


# Idfs of a five-word question: two rare words, three common ones (issue 13, rarity rule).
IDF = {"leiningen": 8.0, "jvm": 7.0, "memori": 2.0, "give": 1.5, "project": 1.5}
PLAIN = dataclasses.replace(SHAPING, idf_share=0.0, all_words_similarity=None, order_cosine=0.0, order_support=0.0)


def _rare(path, words, sim, idf=IDF, score=0.0, title=None):
    return NoteHit(
        path,
        title or path,
        "",
        path,
        score,
        keyword_rank=1,
        matched_terms=len(words),
        query_terms=len(idf),
        matched_words=tuple(words),
        term_idf=idf,
        semantic_score=sim,
    )


def test_shared_rare_word_close_in_meaning_is_keyword_support():
    rare = _rare("clojure/heap.md", ["leiningen"], 0.6)  # 1 word of 5 (the count needs 3), 40% of the idf
    assert idf_coverage(rare) == pytest.approx(0.4)
    assert has_keyword_support(rare, SHAPING)
    assert not has_keyword_support(rare, PLAIN)  # the word count alone: not support
    # Rarity is weighed with meaning: the same word far from the question is not support.
    assert not has_keyword_support(_rare("clojure/heap.md", ["leiningen"], 0.45), SHAPING)
    # Two shared common words (15% of the idf) are not support, however close the vector.
    assert not has_keyword_support(_rare("misc.md", ["give", "project"], 0.9), SHAPING)
    # Without idfs to weigh or a vector to check (keyword-only search), the count rule alone.
    assert not has_keyword_support(dataclasses.replace(rare, term_idf={}), SHAPING)
    assert not has_keyword_support(dataclasses.replace(rare, semantic_score=None), SHAPING)
    assert [k.hit.path for k in shape([rare], limit=8)] == ["clojure/heap.md"]
    assert shape([rare], limit=8, shaping=PLAIN) == []


def test_note_holding_every_word_of_a_short_query_needs_a_lower_cosine():
    idf = {"vimium": 7.0, "histori": 3.0}
    both = _rare("chrome/vimium-history.md", ["histori", "vimium"], 0.28, idf=idf)
    assert has_keyword_support(both, SHAPING)
    assert not has_keyword_support(both, PLAIN)  # below keyword_similarity 0.30
    assert not has_keyword_support(_rare("x.md", ["histori", "vimium"], 0.2, idf=idf), SHAPING)
    assert not has_keyword_support(_rare("x.md", ["vimium"], 0.28, idf=idf), SHAPING)  # one of two: 0.30 as before
    # A word the memory lacks still raises the floor.
    assert not has_keyword_support(both, SHAPING, unknown=True)


def test_kept_hits_ordered_by_meaning_and_coverage():
    words = ["jvm", "leiningen", "memori"]
    fused_first = _rare("a.md", words, 0.40, score=1.0)
    closer = _rare("b.md", words, 0.60, score=0.9)
    assert [k.hit.path for k in shape([fused_first, closer], limit=8)] == ["b.md", "a.md"]
    assert [k.hit.path for k in shape([fused_first, closer], limit=8, shaping=PLAIN)] == ["a.md", "b.md"]
    # A vector-only hit close in meaning may lead: the order is by meaning, not by support.
    lone = _rare("v.md", [], 0.9, score=5.0)
    assert [(k.hit.path, k.support) for k in shape([fused_first, lone], limit=8)] == [
        ("v.md", "vector-only"),
        ("a.md", "keyword"),
    ]


# --- merge, output, logging --------------------------------------------------------------


def test_merge_order_and_caps(org, vault_env):
    memory(
        vault_env,
        "m.md",
        "squash commits before merging\nsquash commits weekly\nsquash commits daily\n"
        "squash commits hourly\nsquash commits now\n",
    )
    remember(org, "bot", "git", "We squash commits on merge to main")
    result = vault_env("squash commits", limit=8)
    arms = [h.arm for h in result.hits]
    # Every memory line holds both words: they come before the vault's best note (issue 13),
    # four of them, half the limit (issue 37).
    assert arms[:6] == ["fact", "memory", "memory", "memory", "memory", "vault"]
    assert arms.count("memory") == 4 and result.arms == ["fact", "memory", "vault"]
    for line in result.text.splitlines():
        assert line.startswith(("[fact #", "[memory] ", "[vault] "))


def test_nothing_found_is_one_line(vault_env):
    result = vault_env("zzzqx flurbo")
    assert result.hits == [] and result.text == NOTHING


@pytest.fixture
def hostile_env(org, vault_env):
    """One fact, one memory line and the vault, all with vectors (where the server has
    pgvector; elsewhere recall falls back to keyword), for odd questions."""
    remember(org, "bot", "x", "Some claim about things")
    memory(vault_env, "m.md", "a line about things\n")
    if org.server.vectors:
        with connect(vault_env.settings) as conn:
            embed_pending(conn, HashEmbedder())
    return vault_env


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "how what why",
        "!:*&|()",
        "'\"",
        "a & (b | !c):*",
        "x" * 1000,
        " ".join(["word"] * 64),
        "🚀 🔥",
        "zero\u200bwidth\u202e",
        "%_\\",
        "<->",
        "::",
        # "%" and "_" are no wildcards for the fact arm's substring rule: "th%ngs" is not "things".
        "th%ngs",
        "th_ngs",
        "%",
    ],
)
def test_hostile_questions_without_a_stored_word_find_nothing(hostile_env, query):
    if not query.strip():  # refused, as on every face (limits.check_query)
        with pytest.raises(InputError, match="^the question is empty"):
            hostile_env(query, embedder=HashEmbedder())
        return
    result = hostile_env(query, embedder=HashEmbedder())
    assert result.hits == [] and result.text == NOTHING and result.arms == []


@pytest.mark.parametrize("query", ["things!:*&|()", "'things'", "(((things", "🚀 things 🔥", "things %_\\"])
def test_hostile_text_around_a_stored_word_still_finds_it(hostile_env, query):
    result = hostile_env(query, embedder=HashEmbedder())
    assert sorted(h.arm for h in result.hits) == ["fact", "memory"]
    assert {h.text for h in result.hits} == {
        "[memory] .agents/org/memory/m.md:1 a line about things",
        f"[fact #{arm_hits(result, 'fact')[0].data['id']}] x: Some claim about things (docs/x.md; bot; now)",
    }


def test_a_question_of_exclusions_finds_no_fact(hostile_env):
    assert arm_hits(hostile_env("-things -claim", embedder=HashEmbedder()), "fact") == []
    assert arm_hits(hostile_env("things claim", embedder=HashEmbedder()), "fact")


@pytest.mark.parametrize("query", ["-things", "-squash -commits"])
def test_a_question_of_exclusions_finds_nothing_in_any_arm(hostile_env, query):
    assert hostile_env(query, embedder=HashEmbedder()).hits == []


def test_recall_is_logged_as_the_agent(org, vault_env):
    vault_env("squash commits", limit=3)
    vault_env("nothing here zzq", agent="other")
    with org.admin() as conn:
        rows = conn.execute("SELECT agent, query, arms, hits, chars, ms FROM recall_events ORDER BY id").fetchall()
    assert [(r["agent"], r["query"], r["hits"]) for r in rows] == [
        ("bot", "squash commits", 3),
        ("other", "nothing here zzq", 0),
    ]
    assert rows[0]["arms"] == ["vault"] and rows[0]["chars"] > 50 and rows[1]["chars"] == len(NOTHING) + 1
    with (
        org.login(f"{org.name}_bot", "bot-pw") as bot,
        pytest.raises(
            pgerr.InsufficientPrivilege,
            match='^new row violates row-level security policy for table "recall_events"$',
        ),
    ):
        bot.execute(
            "INSERT INTO recall_events (agent, query, arms, hits, chars, ms) VALUES ('other', 'q', '{}', 0, 0, 0)"
        )


def test_parse_arms():
    assert parse_arms("fact, vault") == ("fact", "vault")
    with pytest.raises(InputError, match="^--arms takes a comma-separated list of fact, memory, vault; not 'web'$"):
        parse_arms("fact,web")
    with pytest.raises(InputError, match="^--arms takes a comma-separated list of fact, memory, vault; not ' , '$"):
        parse_arms(" , ")


def test_cli_recall_text_json_and_nothing(cli, org, tmp_path, monkeypatch):
    root = tmp_path / "r"
    (root / ".agents/org/memory").mkdir(parents=True)
    (root / ".agents/org/memory/bot.md").write_text("- the staging database restarts at noon\n")
    monkeypatch.setenv("ORG_ROOT", str(root))
    cli("remember", "staging", "Staging database lives on host pg-3", "--source", "#ops-12", agent="bot")
    code, out, _ = cli("recall", "staging database", agent="bot")
    assert code == 0 and out.splitlines()[0].startswith("[fact #") and "[memory] " in out
    code, out, _ = cli("recall", "staging database", "--json", "--arms", "memory", agent="bot")
    data = json.loads(out)
    assert data["arms"] == ["memory"] and data["hits"][0]["why"] == "2 of 2 terms at word starts"
    assert data["chars"] > 0 and "ms" in data
    code, out, err = cli("recall", "qqzx vvwy", agent="bot")
    assert (code, out, err) == (0, NOTHING + "\n", "")
    assert cli("recall", "x", "--limit", "0")[0] == 2
    assert cli("recall", "x", "--arms", "web")[0] == 2  # a usage error (issue 21)


def test_memory_file_missing_folder(tmp_path):
    from cli_org.recall.memory_arm import recall_memory

    assert recall_memory(Path(tmp_path), "anything here", limit=4) == []


def test_a_memory_line_holding_every_word_sits_above_the_best_vault_note():
    """Issue 13: an agent's own exact line came second, below a generic note. A line that
    holds every query word now comes before the vault's best note; a partial line after it."""
    from cli_org.recall.memory_arm import MemoryHit
    from cli_org.recall.merge import merge
    from cli_org.recall.vault_arm import VaultHit

    exact = MemoryHit("ops.md", 3, "the staging database restarts at two", matched=3, terms=3)
    partial = MemoryHit("ops.md", 9, "staging is slow on mondays", matched=2, terms=3)
    best, other = VaultHit(_hit("best.md", 1, 2), "keyword"), VaultHit(_hit("other.md", 2, 2), "keyword")
    assert merge([], [partial, exact], [best, other]) == [exact, best, partial, other]
    # Memory takes at most half the pool, whatever the limit (which only cuts the answer).
    many = [MemoryHit("ops.md", n, "x", matched=1, terms=1) for n in range(12)]
    assert merge([], many, [best, other]) == [*many[: ANSWER_SHAPING.pool // 2], best, other]


def test_the_library_holds_recalls_hit_bounds_too(org):
    """limits.RECALL_HITS: every face's option reads it, and a library caller past it is
    refused in one line (the library checked only `>= 1`, so 10,000 hits went through)."""
    with connect(org.settings) as conn:
        for bad in (0, 51, 10_000):
            with pytest.raises(InputError, match=rf"^--limit must be between 1 and 50, not {bad}$"):
                recall(conn, "deploy", settings=org.settings, limit=bad)
        assert recall(conn, "deploy", settings=org.settings, limit=50).limit == 50


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_the_library_refuses_a_blank_question_or_query(org, blank):
    """Every face refuses a blank question before it runs (limits.check_words); the library
    holds the rule too, so no caller of recall, search or sessions search gets "nothing
    found" for an empty question."""
    from cli_org.archive.sessions import search_messages
    from cli_org.vault.search import search

    with connect(org.settings) as conn:
        with pytest.raises(InputError, match="^the question is empty"):
            recall(conn, blank, settings=org.settings)
        with pytest.raises(InputError, match="^the query is empty"):
            search(conn, blank, mode="keyword")
        with pytest.raises(InputError, match="^the query is empty"):
            search_messages(conn, blank)
