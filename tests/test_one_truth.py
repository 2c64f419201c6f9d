"""One truth across agents at write (issue 36, items 1 and 2): a paraphrase of the writer's own
fact is refused, another agent's is stored as its own and linked as confirming it (recall shows
the two once: tests/test_recall_marks.py), and a claim
that disagrees with a current fact is stored and linked `contradicts`, through the library,
the CLI and the database's own rows, with each agent's login."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_org.errors import NearDuplicate
from cli_org.store import facts, links


def _model():
    from cli_org.vault.embedders import model_file, query_model

    model = query_model(model_file(Path(os.environ["CLI_ORG_DATA_DIR"])))  # the session's own
    assert model is not None, "the query model was not built for the session"
    return model


def _write(org, agent, subject, claim, project=None, model=None, **kw):
    return facts.remember(
        org.writer(agent), subject, claim, source="docs/deploy.md", project=project, embedder=model, **kw
    )


def _rows(org):
    with org.admin() as conn:
        return conn.execute("SELECT count(*) AS n FROM memory_facts WHERE valid_to IS NULL").fetchone()["n"]


def test_the_same_claim_by_another_agent_under_another_subject_is_its_own_row_confirming_the_first(org):
    first = _write(org, "bot", "deploys", "Deploys run from the release branch only.").id
    again = _write(org, "other", "release process", "Deploys run from the release branch only.")
    assert (again.id != first, again.duplicate, again.confirms, again.confirmed) == (True, False, first, "bot")
    with org.as_agent("other") as conn:
        [link] = links.links_of(conn, [first])[first]
    assert (link.from_id, link.kind, link.to_id, link.author) == (again.id, "confirms", first, "other")
    # each agent's assertion is its own row: the first author's retirement leaves the other's
    facts.forget(org.writer("bot"), first, "retiring my copy")
    with org.as_agent("other") as conn:
        assert [f.id for f in facts.list_facts(conn)] == [again.id]
    # writing it again is the writer's own identical claim: the existing id
    assert _write(org, "other", "release process", "Deploys run from the release branch only.").id == again.id


def test_the_writers_own_claim_under_another_subject_is_refused_naming_it_unless_insisted(org):
    first = _write(org, "bot", "deploys", "Deploys run from the release branch only.").id
    with pytest.raises(NearDuplicate, match=f"your current fact #{first}") as refused:
        _write(org, "bot", "release process", "Deploys run from the release branch only!")
    assert refused.value.existing_id == first
    kept = _write(org, "bot", "release process", "Deploys run from the release branch only!", allow_duplicate=True)
    assert kept.id != first and not kept.duplicate


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Claim 1-2 from writer 1.", "Claim 2-1 from writer 2."),
        ("Move server 1 to rack 2.", "Move server 2 to rack 1."),
    ],
)
def test_the_same_words_with_numbers_in_another_order_are_two_facts(org, a, b):
    first = _write(org, "bot", "moves", a)
    second = _write(org, "bot", "moves", b)
    assert second.id != first.id and not second.duplicate


@pytest.mark.vectors
def test_a_paraphrase_by_another_agent_is_a_confirmation_and_the_writers_own_is_refused(org):
    model = _model()
    first = _write(org, "bot", "deploys", "Production deploys happen only from the release branch.", model=model).id
    said = "Only the release branch is ever deployed to production."
    assert _write(org, "other", "release process", said, model=model).confirms == first
    with pytest.raises(NearDuplicate, match=f"#{first}"):
        _write(org, "bot", "shipping", said, model=model)
    assert _rows(org) == 2


@pytest.mark.vectors
def test_a_contradiction_is_stored_linked_and_said_and_a_look_alike_with_another_number_is_not_merged(org, cli):
    model = _model()
    first = _write(org, "bot", "deploys", "Production deploys run at 02:00 UTC every night.", model=model).id
    code, out, err = cli(
        "remember", "deploys", "Production deploys run at 14:00 UTC every day.", "--source", "docs/deploy.md",
        agent="other",
    )  # fmt: skip
    assert code == 0, err
    new = int(out.split()[0])
    assert f"contradicts #{first} by bot" in out and "say which one you trusted" in out
    with org.as_agent("boss") as conn:
        [link] = links.links_of(conn, [first])[first]
    assert (link.from_id, link.kind, link.to_id, link.author) == (new, "contradicts", first, "other")
    code, out, _ = cli(
        "remember", "deploys", "Staging deploys run at 03:00 UTC every night.", "--source", "docs/deploy.md",
        "--json", agent="other",
    )  # fmt: skip
    result = json.loads(out)
    assert code == 0 and not result["duplicate"] and not result["confirms"]


@pytest.mark.slow
def test_over_mcp_another_agents_copy_is_confirmed_and_a_contradiction_is_said(org):
    from tests.helpers import serve, text

    first = _write(org, "bot", "deploys", "Deploys run from the release branch only.").id
    tests_port = _write(org, "bot", "tests", "The test database listens on port 5433.").id

    async def script(s):
        same = await s.call_tool(
            "org_remember",
            {"subject": "release process", "claim": "Deploys run from the release branch only.", "source": "docs/r.md"},
        )
        other = await s.call_tool(
            "org_remember",
            {"subject": "tests", "claim": "The test database listens on port 5432.", "source": "docs/t.md"},
        )
        return text(same), text(other)

    same, other = serve(org, script, agent="other")
    assert f"confirms #{first} by bot: the same fact in your words" in same
    assert f"contradicts #{tests_port} by bot" in other
    assert _rows(org) == 4


def test_recall_and_the_context_block_show_a_confirmed_fact_once_with_who_confirmed_it(org):
    from cli_org.recall.answer import recall
    from cli_org.session.context import build_context

    first = _write(org, "bot", "deploys", "Deploys run from the release branch only.").id
    again = _write(org, "other", "release process", "Deploys run from the release branch only.").id
    with org.as_agent("boss") as conn:
        result = recall(conn, "release branch deploys", settings=org.settings, arms=("fact",))
        block = build_context(conn, settings=org.settings, fmt="json")
    lines = [h.text for h in result.hits]
    assert len(lines) == 1 and lines[0].startswith(f"[fact #{first}]") and "[confirmed by other]" in lines[0]
    assert result.hits[0].data["seen_by"] == ["bot", "other"]
    assert f"#{again} " not in block.text and "[confirmed by other]" in block.text
    assert any(o.key == f"fact #{again}" and o.reason == f"confirms #{first}" for o in block.omitted)
