"""The semantic pass of the [fact] arm (issue 13, migration 0017): facts found by meaning,
with a floor and a second signal, vectors stored when facts are written (recall never
writes one), and a hostile member's forged vectors reaching nobody else."""

import dataclasses

import pytest
from psycopg import errors as pgerr

from cli_org.db.connect import connect
from cli_org.recall.answer import NOTHING, recall
from cli_org.recall.facts_arm import recall_facts
from cli_org.recall.vault_arm import shape
from cli_org.shaping import FACT_SHAPING, SHAPING, FactShaping
from cli_org.store import facts
from cli_org.store.vectors import embed_missing, fact_text
from cli_org.vault.embedders import vector_literal
from cli_org.vault.search import NoteHit
from tests.fakes import HashEmbedder

# The words a paraphrase uses, mapped onto the fact's own: the keyword side cannot see it.
SYNONYMS = {"socket": "port", "server": "api", "open": "listens", "proxy": "sidecar"}

BACKGROUND = [
    ("deploy freeze", "Production is frozen from December 20 to January 3 each year."),
    ("review turnaround", "Pull requests get a first review within one working day."),
    ("disk alert", "The disk alert fires at 85% used on data volumes."),
    ("meeting-free day", "Wednesdays are meeting-free for engineers."),
    ("dns provider", "DNS for all public domains is managed in Cloudflare."),
    ("python version", "Backend services run Python 3.12 until numpy wheels exist."),
    ("sprint length", "Sprints last two weeks and start on Tuesdays."),
    ("email provider", "Transactional email is sent through Postmark."),
    ("coverage floor", "Merges are blocked when coverage of changed files drops below 80 percent."),
]
PORT_FACT = ("backend port", "The api listens on 8081 because the sidecar owns 8080.")
PARAPHRASE = "which socket does the server open behind the proxy"


AUTHORS_MODEL = HashEmbedder(SYNONYMS)


def remember(org, agent, subject, claim, embedder=AUTHORS_MODEL):
    return facts.remember(org.writer(agent), subject, claim, source="docs/team.md", embedder=embedder).id


def vectors(org):
    with org.admin() as conn:
        return conn.execute("SELECT fact_id, computed_by FROM memory_fact_vectors ORDER BY 1").fetchall()


@pytest.fixture
def team(org, tmp_path):
    """Ten facts by `bot` and a recall runner (as `lead` unless told) with the hash embedder."""
    for subject, claim in BACKGROUND:
        remember(org, "bot", subject, claim)
    team.port = remember(org, "bot", *PORT_FACT)
    settings = dataclasses.replace(org.settings, root=str(tmp_path))

    def run(query, agent="lead", embedder=None, **kw):
        with connect(settings, agent) as conn:
            return recall(conn, query, settings=settings, embedder=embedder or HashEmbedder(SYNONYMS), **kw)

    team.run, team.settings = run, settings
    return team


def fact_hits(result):
    return [h for h in result.hits if h.arm == "fact"]


@pytest.mark.slow
def test_a_paraphrase_finds_the_fact_by_meaning_and_says_why(team):
    # The specification's lexical passes find nothing for it...
    with connect(team.settings, "lead") as conn:
        assert recall_facts(conn, PARAPHRASE, project=None, limit=8) == []
    # ...the semantic pass does, labelled with why it qualified.
    hits = fact_hits(team.run(PARAPHRASE, arms=("fact",)))
    assert [h.data["id"] for h in hits] == [team.port]
    assert hits[0].data["match"] == "semantic"
    assert hits[0].why.startswith("vector-only: similarity ") and "sd above the question's background" in hits[0].why
    # Without an embedder, recall is what it was.
    with connect(team.settings, "lead") as conn:
        assert recall(conn, PARAPHRASE, settings=team.settings, arms=("fact",)).text == NOTHING


@pytest.mark.slow
def test_lexical_hits_come_first_and_are_not_repeated(team):
    hits = fact_hits(team.run("backend port sidecar", arms=("fact",)))
    assert hits[0].data["id"] == team.port and hits[0].data["match"] == "strict"
    assert [h.data["id"] for h in hits].count(team.port) == 1


@pytest.mark.slow
def test_noise_finds_no_fact(team):
    for query in ("zzqx vlorp quenk", "chocolate cake recipe", "knitting a purl stitch"):
        assert fact_hits(team.run(query, arms=("fact",))) == [], query


@pytest.mark.slow
def test_remember_stores_the_authors_vector_and_recall_writes_none(org, team):
    stored = vectors(org)
    assert len(stored) == len(BACKGROUND) + 1 and {r["computed_by"] for r in stored} == {"bot"}
    embedder = HashEmbedder(SYNONYMS)
    assert fact_hits(team.run(PARAPHRASE, embedder=embedder, arms=("fact",)))
    assert embedder.calls == 1  # only the question: lead trusts bot's vectors of bot's facts
    assert vectors(org) == stored  # the recall wrote nothing
    # a fact written without the model has no vector, and recall does not make one
    plain = remember(org, "bot", "standup", "Standup is at 9:30 in the small room.", embedder=None)
    team.run("when is standup", embedder=HashEmbedder(), arms=("fact",))
    assert plain not in {r["fact_id"] for r in vectors(org)}


@pytest.mark.slow
def test_facts_embed_fills_in_an_agents_own_facts(org, team):
    own = remember(org, "lead", "standup", "Standup is at 9:30 in the small room.", embedder=None)
    theirs = remember(org, "bot", "lunch", "Lunch is ordered at 11:45 on Fridays.", embedder=None)
    with connect(team.settings, "lead") as conn:
        assert embed_missing(conn, HashEmbedder()) == 1  # its own fact only
        assert embed_missing(conn, HashEmbedder()) == 0  # done: a rerun finds nothing
    got = {r["fact_id"]: r["computed_by"] for r in vectors(org)}
    assert got[own] == "lead" and theirs not in got


@pytest.mark.slow
def test_a_restore_by_the_author_stores_the_vector_the_fact_never_had(org, team):
    plain = remember(org, "bot", "standup", "Standup is at 9:30 in the small room.", embedder=None)
    facts.forget(org.writer("bot"), plain, "moved")
    facts.restore(org.writer("bot"), plain, "back again", embedder=HashEmbedder())
    assert {r["fact_id"]: r["computed_by"] for r in vectors(org)}[plain] == "bot"


@pytest.mark.slow
def test_the_admin_embeds_every_authors_facts_as_the_author(org, team):
    theirs = remember(org, "bot", "lunch", "Lunch is ordered at 11:45 on Fridays.", embedder=None)
    other = remember(org, "other", "standup", "Standup is at 9:30 in the small room.", embedder=None)
    with connect(team.settings) as conn:  # the admin: no agent
        assert embed_missing(conn, HashEmbedder()) == 2
    got = {r["fact_id"]: r["computed_by"] for r in vectors(org)}
    assert got[theirs] == "bot" and got[other] == "other"
    with org.admin() as conn:  # the gap in row-level security closed with the transaction
        forced = conn.execute("SELECT relforcerowsecurity FROM pg_class WHERE relname = 'memory_fact_vectors'")
        assert forced.fetchone()["relforcerowsecurity"] is True
    # ... and a member who runs it embeds only its own
    with org.login(f"{org.name}_other", "other-pw") as hostile:
        remember(org, "bot", "coffee", "The coffee machine is descaled on Mondays.", embedder=None)
        assert embed_missing(hostile, HashEmbedder()) == 0


@pytest.mark.slow
def test_vector_only_facts_fill_at_most_half_the_limit(org, team):
    # Four more facts all about the same thing, none sharing a word with the question.
    for i in range(4):
        remember(org, "other", f"api port {i}", f"The api listens on 808{i + 2} because the sidecar owns 8080.")
    # (Five near-identical facts flatten the background: the cap is what this test is about.)
    lenient = dataclasses.replace(team.settings, fact_shaping=dataclasses.replace(FACT_SHAPING, min_z=-10.0))
    with connect(lenient, "lead") as conn:
        result = recall(conn, PARAPHRASE, settings=lenient, embedder=HashEmbedder(SYNONYMS), arms=("fact",), limit=4)
    hits = fact_hits(result)
    # Vector-only hits fill at most half of every start of the answer (rounded up): alone,
    # with nothing found by its words beside them, one stands.
    assert len(hits) == 1 and all(h.why.startswith("vector-only") for h in hits)


# --- a hostile member ------------------------------------------------------------------


@pytest.mark.slow
def test_a_forged_vector_reaches_nobody_else(org, team):
    """`other` stores a "magnet" vector for bot's fact: the embedding of a nonsense question.
    Recall trusts only the author's or the caller's own vectors, so lead never sees it."""
    magnet = HashEmbedder().embed(["zzqx vlorp quenk"])[0]
    with org.login(f"{org.name}_other", "other-pw") as hostile:
        hostile.execute(
            "INSERT INTO memory_fact_vectors (fact_id, model, embedding) VALUES (%s, %s, %s::vector)",
            (team.port, HashEmbedder.name, vector_literal(magnet)),
        )
        hostile.commit()
    assert fact_hits(team.run("zzqx vlorp quenk", embedder=HashEmbedder(), arms=("fact",))) == []
    # Not even its forger: the author's own vector, stored when bot wrote the fact, is the
    # one a fact is scored by whenever it exists.
    assert fact_hits(team.run("zzqx vlorp quenk", agent="other", embedder=HashEmbedder(), arms=("fact",))) == []


@pytest.mark.slow
def test_a_member_cannot_write_as_another_or_change_a_vector(org, team):
    vector = vector_literal(HashEmbedder().embed([fact_text(*PORT_FACT)])[0])
    team.run(PARAPHRASE, agent="bot", arms=("fact",))  # bot's own vectors now exist
    with org.login(f"{org.name}_other", "other-pw") as hostile:
        with pytest.raises(pgerr.InsufficientPrivilege, match="row-level security"):
            hostile.execute(
                "INSERT INTO memory_fact_vectors (fact_id, model, computed_by, embedding) "
                "VALUES (%s, %s, 'bot', %s::vector)",
                (team.port, HashEmbedder.name, vector),
            )
        hostile.rollback()
        for statement in (
            "UPDATE memory_fact_vectors SET embedding = embedding",
            "DELETE FROM memory_fact_vectors",
        ):
            with pytest.raises(pgerr.InsufficientPrivilege, match="permission denied"):
                hostile.execute(statement)
            hostile.rollback()


# --- the shaping rules -------------------------------------------------------------------


def test_fact_shaping_floor_and_second_signal():
    s = FactShaping(min_similarity=0.34, min_z=2.0, shared_similarity=0.27, unknown_similarity=0.42)
    assert s.qualifies(0.30, None, 1, 0.30, False)  # a shared word and its floor
    assert not s.qualifies(0.26, 9.0, 1, 0.26, False)  # below every floor
    assert s.qualifies(0.35, 2.5, 0, 0.35, False)  # vector-only: floor and standing out
    assert not s.qualifies(0.35, 1.5, 0, 0.35, False)  # a flat profile: no second signal
    assert not s.qualifies(0.50, None, 0, 0.50, False)  # no background to stand out from
    assert not s.qualifies(0.40, 5.0, 1, 0.40, True)  # a word the memory lacks raises the floor
    assert s.qualifies(0.43, 5.0, 0, 0.43, True)


def test_a_word_the_memory_lacks_raises_the_vault_floors():
    def hit(sim, matched=2):
        return NoteHit(
            "n.md", "n", "n", "n", 0.0, keyword_rank=1, matched_terms=matched, query_terms=2, semantic_score=sim
        )

    assert shape([hit(0.35)], limit=8, shaping=SHAPING)[0].support == "keyword"
    assert shape([hit(0.35)], limit=8, shaping=SHAPING, unknown=True) == []
    assert shape([hit(0.45)], limit=8, shaping=SHAPING, unknown=True)[0].support == "keyword"


@pytest.mark.slow
def test_recall_raises_the_floors_only_for_a_word_nobody_holds(org, team):
    # With no vault, the memory's words are the facts' words; this fact makes the
    # paraphrase's words known, except "proxy".
    remember(org, "other", "glossary", "A socket is what a server opens to accept connections.")
    strict = dataclasses.replace(FACT_SHAPING, unknown_similarity=0.99)
    settings = dataclasses.replace(team.settings, fact_shaping=strict)
    with connect(settings, "lead") as conn:
        result = recall(conn, PARAPHRASE, settings=settings, embedder=HashEmbedder(SYNONYMS), arms=("fact",))
        assert team.port not in [h.data["id"] for h in fact_hits(result)]  # the glossary matches by its words
        # Without the unknown word, the same shaping lets it in.
        known = recall(
            conn,
            "which socket does the server open",
            settings=settings,
            embedder=HashEmbedder(SYNONYMS),
            arms=("fact",),
        )
    assert team.port in [h.data["id"] for h in fact_hits(known)]


class _Vocab:
    def __init__(self, words):
        self.words = set(words)

    def token_to_id(self, word):
        return 1 if word in self.words else None


@pytest.mark.slow
def test_a_word_of_the_models_vocabulary_is_no_foreign_subject(team):
    """The unknown-word floors apply to words the memory lacks and the query model does not
    know whole either (product names), not to ordinary words the memory happens to lack."""
    from cli_org.recall.answer import _QueryOnce, foreign_terms
    from cli_org.recall.inputs import read_inputs
    from cli_org.recall.terms import terms

    embedder = HashEmbedder(SYNONYMS)
    embedder.tokenizer = _Vocab({"socket", "open"})
    with connect(team.settings, "lead") as conn:
        # the words the memory lacks, as recall reads them (`recall.inputs`)
        unknown = read_inputs(conn, words=terms("rabbitmq socket open backend"))["unknown"]
        conn.rollback()
        wrapped = _QueryOnce(embedder)
        assert foreign_terms(unknown, wrapped) == ["rabbitmq"]
        # Without the vocabulary rule, every word the memory lacks counts.
        lax = dataclasses.replace(SHAPING, unknown_needs_foreign=False)
        assert foreign_terms(unknown, wrapped, lax) == ["open", "rabbitmq", "socket"]
        stop = read_inputs(conn, words=terms("the and of"))["unknown"]
        conn.rollback()
        assert foreign_terms(stop, wrapped, lax) == []  # stop words name nothing


def test_a_fact_sharing_two_words_is_not_held_to_the_unknown_floor():
    """i13-facts: "where do toggles for gradual rollouts live" names a word the memory lacks,
    yet shares two words with the flag fact (cosine 0.39): before, the unknown floor (0.42)
    dropped it. One shared word still meets the unknown floor."""
    s = dataclasses.replace(FACT_SHAPING, unknown_exempt_shared=2)
    assert s.qualifies(0.39, 3.6, 2, 0.39, True)
    assert not s.qualifies(0.39, 3.6, 1, 0.39, True)
    assert not dataclasses.replace(s, unknown_exempt_shared=0).qualifies(0.39, 3.6, 2, 0.39, True)


def test_a_close_fact_leads_before_the_vaults_best_note_only_when_at_least_as_close():
    """i13-facts: a paraphrased fact found by meaning sat below a vector-only vault note. A
    fact that leads (close, standing out) now comes before the vault's best note, unless that
    note is closer in meaning; a fact that does not lead stays after it."""
    from cli_org.recall.facts_arm import FactHit, settle_leads
    from cli_org.recall.merge import merge
    from cli_org.recall.vault_arm import VaultHit
    from cli_org.store.facts import Fact

    s = FACT_SHAPING
    assert s.leads(0.51, 4.7) and not s.leads(0.51, 1.0) and not s.leads(0.30, 4.0)
    fact = Fact(**{f.name: None for f in dataclasses.fields(Fact)})

    def hit(sim):
        return FactHit(fact, "semantic", sim, lead=s.leads(sim, 4.0), similarity=sim)

    def note(sim):
        return VaultHit(NoteHit("n.md", "n", "n", "n", 0.0, semantic_score=sim), "vector-only")

    close, weak = hit(0.51), hit(0.30)
    best, other = note(0.44), note(0.40)
    settle_leads([close, weak], 0.44, s)
    # After the lead and the best note, a fact that does not lead goes after a closer note
    # (with fact_bonus), and 0.30 is more than the cut-off's gap below the best (0.51): cut.
    assert merge([close, weak], [], [best, other]) == [close, best, other]
    assert merge([close, hit(0.36)], [], [best, other])[2:] == [hit(0.36), other]
    closer = note(0.60)
    settle_leads([close], 0.60, s)
    assert merge([close], [], [closer]) == [closer, close]


def test_facts_found_by_meaning_are_ordered_by_cosine_and_shared_words():
    """i13-facts: "does a change spanning many services need sign-off before work starts"
    found the design-review fact (0.273, sharing change and services) below an on-call fact
    (0.361, sharing nothing). Each shared word now adds FactShaping.shared_bonus to the order."""
    assert FACT_SHAPING.order(0.273, 2) > FACT_SHAPING.order(0.361, 0)
    assert dataclasses.replace(FACT_SHAPING, shared_bonus=0.0).order(0.273, 2) < 0.361


@pytest.mark.slow
@pytest.mark.vectors
def test_the_fact_arm_alone_finds_by_meaning_with_the_real_model(org, cli):
    """`recall --arms fact` loads the query model too (issue 37: the command once loaded it
    for the vault arm only, and a fact found only by meaning was "nothing found"). Which arms
    need the model is the recall library's to say; the command asks it."""
    import os
    from pathlib import Path

    from cli_org.recall import ARMS, needs_embedder
    from cli_org.vault.embedders import model_file, query_model

    model = query_model(model_file(Path(os.environ["CLI_ORG_DATA_DIR"])))  # the session's own
    assert model is not None, "the query model was not built for the session"
    for subject, claim in BACKGROUND:
        remember(org, "bot", subject, claim, embedder=model)
    port = remember(org, "bot", *PORT_FACT, embedder=model)
    question = "which port does the backend bind to, given the proxy already took the usual one"
    with connect(org.settings, "bot") as conn:  # no word of it finds the fact
        assert recall(conn, question, settings=org.settings, arms=("fact",), log=False).text == NOTHING
    code, out, err = cli("recall", question, "--arms", "fact", agent="bot")
    assert code == 0, err
    assert out.startswith(f"[fact #{port}] backend port: The api listens on 8081"), out
    code, every, err = cli("recall", question, agent="bot")
    assert code == 0 and every.startswith(f"[fact #{port}]"), err
    assert needs_embedder(("fact",)) and needs_embedder(("vault",)) and needs_embedder(ARMS)
    assert not needs_embedder(("memory",)) and not needs_embedder(())
