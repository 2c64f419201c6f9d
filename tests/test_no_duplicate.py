"""remember refuses a near-duplicate of one of the agent's current facts, by the tidy-up's
rule (store/duplicates.py: same author, subject and project; most words shared, the same
numbers), naming the fact and the ways on; --allow-duplicate and --supersedes go on."""

from __future__ import annotations

import json

import pytest

from cli_org.errors import NearDuplicate
from cli_org.store import facts, tidy
from cli_org.store.duplicates import near_duplicate
from tests.helpers import serve, text

pytestmark = pytest.mark.slow

FIRST = "Deploys run from the main branch at night"
COPY = "Deploys run from the main branch at night only"  # 8 of 9 words: tidy would merge them


def _remember(org, claim, agent="bot", subject="deploy", **kw):
    return facts.remember(org.writer(agent), subject, claim, source="docs/deploy.md", **kw)


def _claims(org) -> list[tuple[str, str, str, str | None]]:
    with org.admin() as conn:
        rows = conn.execute(
            "SELECT author, subject, claim, project FROM memory_facts WHERE valid_to IS NULL ORDER BY id"
        )
        return [(r["author"], r["subject"], r["claim"], r["project"]) for r in rows]


def test_a_near_duplicate_is_refused_with_the_fact_it_repeats(org):
    assert near_duplicate(FIRST, COPY) is not None  # the rule's own verdict, not a copy of it
    first = _remember(org, FIRST).id
    with pytest.raises(NearDuplicate) as refused:
        _remember(org, COPY)
    message = str(refused.value)
    assert f"#{first}" in message and repr(FIRST) in message
    assert f"--supersedes {first}" in message and "--allow-duplicate" in message
    assert refused.value.fields == {
        "existing_id": first,
        "existing_claim": FIRST,
        "overlap": pytest.approx(8 / 9, abs=0.001),
    }
    assert _claims(org) == [("bot", "deploy", FIRST, None)]  # nothing written
    assert org.writer("bot").info.transaction_status.name == "IDLE"


def test_the_quoted_claim_is_short(org):
    long_claim = "The nightly deploy " + " ".join(f"step{n}" for n in range(60)) + " runs from main"
    first = _remember(org, long_claim).id
    with pytest.raises(NearDuplicate) as refused:
        _remember(org, long_claim + " again")
    assert refused.value.existing_id == first and refused.value.existing_claim == long_claim
    assert len(str(refused.value)) < len(long_claim)


def test_allow_duplicate_stores_it_and_tidy_still_sees_the_pair(org):
    first = _remember(org, FIRST).id
    second = _remember(org, COPY, allow_duplicate=True).id
    assert second != first and len(_claims(org)) == 2
    with org.as_agent("bot") as conn:
        assert [(p.fact_id, p.kept_id) for p in tidy.tidy(conn).proposals] == [(first, second)]


def test_supersedes_replaces_by_design_and_is_not_checked(org):
    first = _remember(org, FIRST).id
    result = _remember(org, COPY, supersedes=first)
    assert result.superseded == first and _claims(org) == [("bot", "deploy", COPY, None)]


def test_another_author_is_stored_confirming_and_ones_own_under_another_subject_or_project_is_refused(org):
    first = _remember(org, FIRST).id
    # each agent's assertion is its own row, linked as confirming the first (issue 36)
    assert _remember(org, COPY, agent="other").confirms == first
    # the writer's own, under another subject or in a project (an org-wide fact covers it)
    for where in ({"subject": "release"}, {"project": "web"}):
        with pytest.raises(NearDuplicate):
            _remember(org, COPY, **where)
    assert len(_claims(org)) == 2


def test_a_retired_fact_is_not_compared(org):
    first = _remember(org, FIRST).id
    with org.as_agent("bot") as conn:
        facts.forget(conn, first, "moved to mornings")
    assert _remember(org, COPY).id != first


def test_an_exact_duplicate_returns_the_fact_and_a_case_variant_subject_is_refused(org):
    first = _remember(org, FIRST).id
    again = _remember(org, FIRST)
    assert (again.id, again.duplicate) == (first, True)  # as before: the same id, nothing new
    # tidy's scope compares subjects without case or outer space: the same claim is a near-duplicate
    with pytest.raises(NearDuplicate) as refused:
        _remember(org, FIRST, subject="Deploy")
    assert refused.value.existing_id == first and refused.value.overlap == 1.0
    with pytest.raises(NearDuplicate):
        _remember(org, FIRST.lower() + ".")
    assert len(_claims(org)) == 1


def test_a_claim_that_differs_by_a_number_is_not_a_near_duplicate(org):
    four = "The staging build takes 4 minutes on the shared runners"
    five = four.replace("4", "5")
    assert near_duplicate(four, five) is None  # different numbers: tidy never merges them
    _remember(org, four)
    _remember(org, five)
    # and one changed word of a short claim stays below tidy's line
    assert near_duplicate("The build takes long minutes", "The build takes short minutes") is None
    _remember(org, "The build takes long minutes")
    _remember(org, "The build takes short minutes")
    assert len(_claims(org)) == 4


# --- the faces ---------------------------------------------------------------------------


def test_cli_refuses_in_one_line_and_allow_duplicate_goes_on(cli):
    code, out, _ = cli("remember", "deploy", FIRST, "--source", "docs/deploy.md", agent="bot")
    assert code == 0
    first = int(out)
    code, out, err = cli("remember", "deploy", COPY, "--source", "docs/deploy.md", agent="bot")
    assert (code, out) == (1, "")
    assert err.startswith(f"cli-org: says what your current fact #{first} says (") and err.count("\n") == 1
    assert "--allow-duplicate" in err and f"--supersedes {first}" in err
    code, out, err = cli("remember", "deploy", COPY, "--source", "docs/deploy.md", "--allow-duplicate", agent="bot")
    assert code == 0 and int(out) > first, err


def test_cli_json_error_carries_the_existing_id(cli):
    code, out, _ = cli("remember", "deploy", FIRST, "--source", "docs/deploy.md", "--json", agent="bot")
    first = json.loads(out)["id"]
    code, out, err = cli("remember", "deploy", COPY, "--source", "docs/deploy.md", "--json", agent="bot")
    assert (code, out) == (1, "") and err.count("\n") == 1
    error = json.loads(err)
    assert error["existing_id"] == first and error["existing_claim"] == FIRST
    # judged by meaning (the CLI has the query model): `overlap` is the similarity then
    assert 0.9 <= error["overlap"] <= 1 and f"#{first}" in error["error"]


def test_mcp_refuses_in_tool_terms_and_allow_duplicate_goes_on(org):
    async def script(s):
        args = {"subject": "deploy", "source": "docs/deploy.md"}
        first = await s.call_tool("org_remember", {**args, "claim": FIRST})
        copy = await s.call_tool("org_remember", {**args, "claim": COPY})
        allowed = await s.call_tool("org_remember", {**args, "claim": COPY, "allow_duplicate": True})
        return first, copy, allowed

    first, copy, allowed = serve(org, script)
    first_id = int(text(first))
    assert copy.is_error and f"#{first_id}" in text(copy)
    assert "'allow_duplicate'" in text(copy) and f"'supersedes' {first_id}" in text(copy)
    assert not allowed.is_error and int(text(allowed)) > first_id
