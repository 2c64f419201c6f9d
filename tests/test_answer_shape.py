"""The answer an agent gets: one order that --limit only cuts, a stop once the rest is about
something else, facts that answer before generic notes, and no boilerplate snippets."""

import dataclasses

import pytest

from cli_org.db.connect import connect
from cli_org.recall.answer import recall
from cli_org.recall.facts_arm import FactHit
from cli_org.recall.merge import merge
from cli_org.recall.vault_arm import VaultHit
from cli_org.shaping import ANSWER_SHAPING
from cli_org.store import facts
from cli_org.store.facts import Fact
from cli_org.vault.embed import embed_pending
from cli_org.vault.scan import scan
from cli_org.vault.search import NoteHit, boilerplate, snippet
from tests.fakes import HashEmbedder
from tests.helpers import sent, statement_names

FACT = Fact(**{f.name: None for f in dataclasses.fields(Fact)})


def fact(sim, match="semantic", lead=False):
    return FactHit(FACT, match, sim or 0.0, lead=lead, similarity=sim)


def note(path, sim):
    return VaultHit(NoteHit(path, path, "", path, 0.0, semantic_score=sim), "keyword")


def test_a_hit_more_than_the_gap_below_the_best_is_cut():
    best, near, far = note("best.md", 0.70), note("near.md", 0.52), note("far.md", 0.49)
    assert merge([], [], [best, near, far]) == [best, near]  # 0.49 < 0.70 - 0.20
    # Hits without a cosine (a fact found by its words alone) are never cut.
    words = fact(None, match="strict")
    assert merge([words], [], [best, far]) == [words, best]
    wider = dataclasses.replace(ANSWER_SHAPING, cut_gap=1.0)
    assert merge([], [], [best, near, far], wider) == [best, near, far]


def test_a_fact_sharing_one_word_does_not_take_second_place():
    """The fact pass lets in a fact sharing one word at cosine 0.27; it used to come right
    after the vault's best note whatever the other notes were. Now it goes where its cosine
    (plus fact_bonus) puts it among them."""
    top, second, third = note("a.md", 0.55), note("b.md", 0.50), note("c.md", 0.40)
    one_word = fact(0.38)
    assert merge([one_word], [], [top, second, third]) == [top, second, one_word, third]
    # A fact that leads (close and standing out) still comes before the vault's best note.
    leading = fact(0.60, lead=True)
    assert merge([leading], [], [top, second])[0] is leading


def test_boilerplate_is_never_a_snippet():
    for line in (
        "h/t Vidal Ekechukwu",
        "h/t [Shawn](https://twitter.com/x)",
        "via @jack",
        "Thanks to Ann for this",
        "Source: [the post](https://example.com/p)",
        "See also: man git",
        "[source](https://til.example.com/posts/1)",
        "- [one](https://a.example) [two](https://b.example)",
    ):
        assert boilerplate(line), line
    for line in (
        "Via the API you can list every job that is queued right now",
        "Sources of truth live in the database",
        "Read [the docs](https://x.example) for every flag the command takes",
    ):
        assert not boilerplate(line), line
    chunk = "Zoom back with `Cmd 0`.\n\nh/t Jake Worth\n[source](https://til.example.com/p)"
    assert snippet(chunk, "who is on call this week") == "Zoom back with `Cmd 0`."
    assert snippet("h/t Jake Worth", "jake") == ""  # nothing but boilerplate: no snippet
    assert snippet("Use [the docs](https://x.example/long/path) before you run it", "docs") == (
        "Use the docs before you run it"
    )


VAULT = {
    f"notes/{i:02d}.md": f"# Deploy note {i}\n\nDeploy {topic} with care; rollback steps for {topic} are kept here.\n"
    for i, topic in enumerate(
        ["the api", "the web app", "workers", "the queue", "cron jobs", "the database", "search", "the cdn"]
        + ["mobile", "billing", "email", "the gateway", "auth", "images", "logs", "metrics", "alerts", "docs"]
    )
}


@pytest.fixture
def shaped(org, tmp_path):
    root = tmp_path / "root"
    (root / ".agents/org/memory").mkdir(parents=True)
    (root / ".agents/org/memory/ops.md").write_text(
        "\n".join(f"deploy rollback drill {i} went fine" for i in range(10)) + "\n"
    )
    vault = tmp_path / "vault"
    for rel, text in VAULT.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text + "\nh/t Someone Else\n")
    settings = dataclasses.replace(org.settings, root=str(root))
    embedder = HashEmbedder({"revert": "rollback"})
    with connect(settings) as conn:
        scan(conn, vault)
        embed_pending(conn, embedder)
    writer = org.writer("bot")
    for i in range(12):
        facts.remember(
            writer, f"deploy {i}", f"Deploy rollback rule number {i} for service {i}", source="d.md", embedder=embedder
        )
    return settings, embedder


@pytest.mark.slow
def test_the_hits_of_a_smaller_limit_are_the_first_hits_of_a_larger_one(shaped):
    settings, embedder = shaped
    lengths = []
    with connect(settings, "bot") as conn:
        for question in ("deploy rollback", "revert the deploy of workers", "rollback steps api", "deploy"):
            answers = {
                n: [
                    h.text
                    for h in recall(conn, question, settings=settings, limit=n, embedder=embedder, log=False).hits
                ]
                for n in range(1, ANSWER_SHAPING.pool + 1)
            }
            full = answers[ANSWER_SHAPING.pool]
            lengths.append(len(full))
            for n, hits in answers.items():
                assert hits == full[:n], (question, n)
            assert not any("h/t" in line for line in full)  # the credit line is never the snippet
    # Long answers for the property to mean something, and a decisive one cut short.
    assert max(lengths) >= 8 and min(lengths) <= 2, lengths


# The statements of a warm recall with every arm, beside the transaction's own BEGIN and
# COMMIT, each a round trip to a team server: 22 before fact vectors were written with the
# facts and the per-connection memos (db.remembered), 13 until issue 33 added the count of
# facts without a vector, 14 until issue 36 read the links of the facts shown, 15 until issue
# 38 sent recall's inputs (foreign words, word pieces, that count, the notebook's entries, the
# fact arm's HNSW settings) as one statement, the nearest facts with their background, and the
# nearest chunks with their text and the BM25 of their notes (benchmarks/RESULTS.md, "Round
# trips"). A note whose best chunk is all boilerplate adds one (search.note_chunks).
WARM_RECALL_STATEMENTS = [
    "recall.inputs_counted",  # foreign words, word pieces, facts without a vector, the notebook
    "recall.facts_strict",
    "recall.facts_loose",  # no strict hit
    "fact_vectors.nearest",  # and the question's background over the facts
    "search.bm25",
    "hnsw_scan",  # the vault's: wider than the fact arm's
    "search.dense",  # and the nearest chunks' text, the BM25 of notes only they found
    "links.marks",
    "recall.log",
]


@pytest.mark.slow
def test_a_warm_recall_sends_few_statements(shaped, monkeypatch):
    # Every arm, with the query model, facts found by words and by meaning, notes by both:
    # a team server pays one round trip per statement.
    from cli_org.db import session

    monkeypatch.setattr(session, "CHECKING", False)  # the tests' own check of the session state
    settings, embedder = shaped
    with connect(settings, "bot") as conn:
        recall(conn, "revert the deploy of workers", settings=settings, embedder=embedder)  # warm
        answer = []
        statements = sent(
            conn, lambda: answer.append(recall(conn, "rollback rule api", settings=settings, embedder=embedder))
        )
    assert {"fact", "vault"} <= set(answer[0].arms)  # a fact shown: its links are read
    assert statement_names(statements) == ["BEGIN", *WARM_RECALL_STATEMENTS, "COMMIT"]  # one transaction
    assert len(WARM_RECALL_STATEMENTS) <= 10


@pytest.mark.slow
def test_a_hit_whose_chunk_is_all_boilerplate_shows_the_notes_other_chunk(org, tmp_path):
    from cli_org.vault.search import search

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "throttle.md").write_text(
        "# Throttling a call\n\nWrap the handler so it runs at most once a second.\n\n## Thanks\n\nh/t Jake Worth\n"
    )
    (vault / "credits.md").write_text("# Credits\n\nh/t Jake Worth\n\n[source](https://example.com/x)\n")
    with connect(org.settings) as conn:
        scan(conn, vault)
        hits = {h.path: h for h in search(conn, "jake worth", mode="keyword").hits}
    # The best chunk for "jake worth" is the credit line: the note's first chunk stands in.
    assert hits["throttle.md"].snippet == "Wrap the handler so it runs at most once a second."
    assert hits["credits.md"].snippet == ""  # nothing but boilerplate: search shows no snippet...
    settings = dataclasses.replace(org.settings, root=str(tmp_path))
    with connect(settings, "bot") as conn:
        paths = [h.data["path"] for h in recall(conn, "jake worth", settings=settings, arms=("vault",)).hits]
    assert paths == ["throttle.md"]  # ...and recall leaves such a note out


def _hit(arm, similarity=None, whole=False, z=None):
    from cli_org.recall.answer import RecallHit

    return RecallHit(arm, f"[{arm}] x", "", {"z": z} if arm == "fact" else {}, similarity=similarity, whole=whole)


def test_the_prompt_hooks_bar_passes_only_facts_it_is_sure_of():
    from cli_org.session.hooks import prompt_hits
    from cli_org.shaping import HOOK_SHAPING

    def passed(*hits):
        return [hits.index(h) for h in prompt_hits(list(hits), HOOK_SHAPING)]

    # Close in meaning: passes; everything recall would show beside it does not.
    assert passed(_hit("fact", 0.55, z=3.0), _hit("vault", 0.90), _hit("memory", whole=True)) == [0]
    # Loosely related (the range where instructions and tasks overlap): only standing far out
    # from the prompt's background over the facts, or clearly closer than any note, lets it in.
    assert passed(_hit("fact", 0.42, z=3.0), _hit("vault", 0.40)) == []
    assert passed(_hit("fact", 0.42, z=5.0), _hit("vault", 0.40)) == [0]
    assert passed(_hit("fact", 0.42, z=3.0), _hit("vault", 0.30)) == [0]
    assert passed(_hit("fact", 0.33, z=3.0)) == []  # no note to beat, but below 0.35
    # Without a query model there is no cosine: only a fact holding every word of the prompt.
    assert passed(_hit("fact", whole=True), _hit("fact")) == [0]
