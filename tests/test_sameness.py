"""The sameness judge (store/sameness.py, issue 36): the words-only path, given similarities,
bad input, and the held-out pairs with the real query model."""

import os
from pathlib import Path

import pytest

from benchmarks import sameness_eval
from cli_org.errors import InputError
from cli_org.store.sameness import MAX_TEXT, SAME, TOPIC, Judgement, judge
from cli_org.store.vectors import fact_text


def _relation(got: Judgement | None) -> str:
    return got.relation if got else "distinct"


# --- the words alone (no model, no vectors) -------------------------------------------------


def test_a_reworded_copy_is_the_same_by_its_words():
    got = judge(
        fact_text("deploys", "Deploys run at 02:00 UTC."), fact_text("deploys", "deploys run at 02:00 UTC"), None
    )
    assert got and got.relation == "same" and got.evidence["rule"] == "words"
    assert got.evidence["numbers_agree"] == ["2:0"]


def test_the_same_numbers_in_another_order_are_two_facts():
    """Issue 36's examples: all their words in common, their numbers in another order."""
    assert judge("writers: Claim 1-2 from writer 1.", "writers: Claim 2-1 from writer 2.", None) is None
    assert judge("racks: move server 1 to rack 2", "racks: move server 2 to rack 1", None) is None
    got = judge(
        "ports: Grafana is on 3000 and Prometheus on 9090.", "ports: Grafana is on 9090 and Prometheus on 3000.", None
    )
    assert _relation(got) == "contradicts"  # values, not labels, swapped: both cannot hold


def test_another_value_in_the_same_place_contradicts_by_its_words():
    got = judge("postgres: The test db is on port 5433.", "postgres: The test db is on port 5432.", None)
    assert got and got.relation == "contradicts" and got.evidence["differs"] == ["number"]
    assert got.evidence["numbers"] == {"new": ["5433"], "old": ["5432"]}
    got = judge("ci: Migrations run on deploy.", "ci: Migrations do not run on deploy.", None)
    assert got and got.evidence["differs"] == ["negation"] and got.evidence["negations"] == {"new": 0, "old": 1}
    got = judge("linting: The backend is linted with ruff.", "linting: The backend is linted with pylint.", None)
    assert (
        got and got.evidence["differs"] == ["name"] and got.evidence["replaced"] == {"new": ["ruff"], "old": ["pylint"]}
    )


def test_a_number_or_name_at_the_head_of_a_claim_names_another_thing():
    assert (
        judge("services: Worker 1 consumes the billing queue.", "services: Worker 2 consumes the billing queue.", None)
        is None
    )
    assert judge("incidents: INC-201 was a DNS outage.", "incidents: INC-202 was a DNS outage.", None) is None
    assert judge("shard 1: holds customers A to M", "shard 2: holds customers A to M", None) is None  # in the subject


def test_unrelated_or_compatible_claims_are_neither_by_their_words():
    assert (
        judge("deploys: Deploys run at 02:00 UTC.", "frontend: The design system lives in packages/ui.", None) is None
    )
    assert judge("queues: Failed jobs are retried 3 times.", "queues: Jobs go to the dead letter queue.", None) is None


# --- with a similarity (the cosine of the two vectors) --------------------------------------


def test_the_issues_contradictions_given_their_similarity():
    pairs = [
        ("deploys: Deploys run at 02:00 UTC.", "release window: Deploys run between 10:00 and 15:00.", "time"),
        ("package manager: The web repo uses pnpm, never npm.", "web repo: The web repo uses npm.", "negation"),
        ("postgres: The test db is on 5433.", "local dev: The test db is on 5432.", "number"),
    ]
    for new, old, kind in pairs:
        got = judge(new, old, TOPIC + 0.05)
        assert got and got.relation == "contradicts" and kind in got.evidence["differs"], (new, got)
        assert got.evidence["similarity"] == round(TOPIC + 0.05, 3) and got.evidence["topic_at"] == TOPIC


def test_a_paraphrase_is_the_same_when_its_numbers_names_and_negations_agree():
    new, old = (
        "on-call: The rotation changes every Monday at 09:00.",
        "team: On Mondays at 09:00 the on-call rotation changes.",
    )
    got = judge(new, old, SAME + 0.01)
    assert got and got.relation == "same" and got.evidence["rule"] == "meaning"
    assert judge(new, old, SAME - 0.2) is None  # too far apart in meaning, and not a copy in words
    assert _relation(judge(new, old.replace("09:00", "10:00"), SAME + 0.01)) == "contradicts"
    assert (
        judge("ci: Builds use Node 20.", "ci: Builds use Node 20 on GitHub.", 0.95).relation == "same"
    )  # a name added
    assert judge("ci: Lint runs on pushes.", "ci: Lint does not run on pushes.", 0.99).relation == "contradicts"


def test_a_closer_pair_never_turns_a_look_alike_into_a_copy():
    for sim in (None, 0.5, SAME, 0.99, 1.0):
        assert (
            _relation(judge("services: Worker 1 consumes the queue.", "services: Worker 2 consumes the queue.", sim))
            != "same"
        )
        assert (
            _relation(
                judge("staging: Staging is open to customers.", "staging: Staging is not open to customers.", sim)
            )
            != "same"
        )


# --- bad input ------------------------------------------------------------------------------


def test_empty_or_wordless_texts_are_never_judged():
    for a, b in (("", ""), ("", "deploys: run at 02:00"), ("   ", "..."), (": ", ": "), ("!!! ???", "!!! ???")):
        assert judge(a, b, None) is None and judge(a, b, 0.99) is None


def test_a_similarity_that_is_no_cosine_is_refused():
    for bad in (float("nan"), float("inf"), 1.5, -2.0):
        with pytest.raises(InputError, match="similarity"):
            judge("a: b c", "a: b c", bad)


def test_huge_and_hostile_texts_are_judged_on_a_bounded_prefix():
    claim = "deploys: Deploys run at 02:00 UTC. " + "padding words go here " * 50_000
    assert len(claim) > 100 * MAX_TEXT
    # what differs lies past the bound: the judge never read it
    got = judge(claim + " 1", claim + " 2", None)
    assert got and got.relation == "same"
    # a NUL, a lone surrogate, a number of thousands of digits (past int()'s limit), a long
    # hyphenated run: a clean answer (no meaningful word here: nothing to judge)
    hostile = "x: \x00 \udc80 " + "9" * 5_000 + " " + "a-" * 3_000
    assert judge(hostile, hostile, 0.9) is None
    got = judge("ports: port " + "9" * 5_000, "ports: port " + "9" * 4_999 + "8", None)
    assert got and got.relation == "same"  # they differ past the bound
    got = judge("x: it listens on port " + "1 " * 5_000, "x: it listens on port " + "2 " * 5_000, 0.9)
    assert got and got.relation == "contradicts"  # many numbers, one word beside them


# --- the held-out pairs, with the real query model ------------------------------------------


@pytest.mark.slow
def test_the_held_out_pairs_meet_the_issues_targets_with_the_real_model():
    """eval/sameness.test.txt, judged with the session's own query model (as `remember` embeds
    a fact): paraphrases caught >= 90 %, look-alikes merged <= 2 %, contradictions linked
    >= 80 %, false links <= 5 %."""
    from cli_org.vault.embedders import model_file

    pairs = sameness_eval.load(sameness_eval.HALVES["test"])
    assert len(pairs) >= 120 and {p.label for p in pairs} == {"same", "contradicts", "distinct"}
    sims = sameness_eval.similarities(pairs, Path(os.environ["CLI_ORG_DATA_DIR"]))
    assert model_file(Path(os.environ["CLI_ORG_DATA_DIR"])).exists()
    out = sameness_eval.measure(pairs, list(sims))
    assert out["paraphrases_caught"]["rate"] >= 0.90, out["wrong"]
    assert out["lookalikes_merged"]["rate"] <= 0.02, out["wrong"]
    assert out["contradictions_linked"]["rate"] >= 0.80, out["wrong"]
    assert out["false_links"]["rate"] <= 0.05, out["wrong"]
    assert all(out["targets_met"].values())
