"""The tidy-up: each rule with a case it proposes and a near miss it leaves alone, applying
with the caller's rights, the log, and restoring what it retired."""

from __future__ import annotations

import json

import pytest
from psycopg import errors as pgerr

from cli_org.errors import AccessDenied
from cli_org.store import facts, tidy
from cli_org.store.tidy import DUPLICATE_OVERLAP, near_duplicate


def _fact(org, agent, claim, subject="build", source="docs/build.md", project=None):
    # remember refuses a near-duplicate; tidy finds those written past the refusal
    # (allow_duplicate, an import, a member's own SQL)
    return facts.remember(org.writer(agent), subject, claim, source=source, project=project, allow_duplicate=True).id


# --- the rule for near duplicates -------------------------------------------------------


def test_a_reworded_copy_is_a_near_duplicate():
    evidence = near_duplicate("The build takes four minutes", "The build takes four minutes.")
    assert evidence and evidence["overlap"] == 1.0
    evidence = near_duplicate(
        "Deploys run from the main branch at night", "Deploys run from the main branch at night only"
    )
    assert evidence and evidence["overlap"] == pytest.approx(8 / 9, abs=0.001) and evidence["only_in_kept"] == ["only"]


def test_one_changed_word_in_a_short_claim_is_not():
    # 4 shared of 6 words: 0.67, below the line; that word is the fact
    assert near_duplicate("The build takes long minutes", "The build takes short minutes") is None
    assert 4 / 6 < DUPLICATE_OVERLAP <= 6 / 8


def test_different_numbers_are_never_duplicates():
    a, b = "Timeout is 30 seconds on the staging servers today", "Timeout is 60 seconds on the staging servers today"
    assert near_duplicate(a, b, threshold=0.5) is None
    assert near_duplicate(a, a.replace("today", "now"), threshold=0.5) is not None  # same numbers: judged


def test_the_same_numbers_in_another_order_are_not_duplicates():
    """Issue 36: numbers compared as a set made these pairs copies of each other (all their
    words in common), and a racing writer lost writes to it."""
    assert near_duplicate("Claim 1-2 from writer 1.", "Claim 2-1 from writer 2.") is None
    assert near_duplicate("Claim 1-2 from writer 1.", "Claim 2-1 from writer 1.") is None
    assert near_duplicate("move server 1 to rack 2", "move server 2 to rack 1") is None
    assert near_duplicate("Claim 1-1 from writer 1.", "Claim 1 from writer 1.") is None  # a number repeated
    # the same numbers in the same order, other words around them: still judged by the words
    evidence = near_duplicate("Move server 1 to rack 2.", "move server 1 to rack 2")
    assert evidence and evidence["overlap"] == 1.0


@pytest.mark.slow
def test_tidy_proposes_merges_within_one_subject_and_project_or_org_wide(org):
    old = _fact(org, "bot", "The build takes four minutes")
    new = _fact(org, "bot", "The build takes four minutes.")
    _fact(org, "bot", "The build takes four minutes.", subject="ci")  # another subject
    alpha = _fact(org, "bot", "The build takes four minutes.", project="alpha")  # copies the org-wide one
    _fact(org, "bot", "The build takes four minutes.", project="beta", subject="b")  # nothing to copy there
    _fact(org, "bot", "The build takes five minutes")  # a changed fact
    with org.as_agent("bot") as conn:
        report = tidy.tidy(conn)
        # the org-wide fact reaches every session: it is kept over alpha's copy, newer as it is
        assert [(p.action, p.fact_id, p.kept_id) for p in report.proposals] == [
            ("merge", old, new),
            ("merge", alpha, new),
        ]
        assert report.proposals[0].evidence["overlap"] == 1.0 and not report.applied
        assert [p.fact_id for p in tidy.tidy(conn, project="alpha").proposals] == [alpha]  # alpha's alone


@pytest.mark.slow
def test_apply_supersedes_logs_and_the_fact_can_be_restored(org):
    old = _fact(org, "bot", "The build takes four minutes")
    new = _fact(org, "bot", "The build takes four minutes.")
    with org.as_agent("bot") as conn:
        (p,) = tidy.tidy(conn, apply=True).proposals
        assert p.done == "superseded" and p.error is None
        assert facts.show_fact(conn, old).fact.superseded_by == new
        assert tidy.tidy(conn).proposals == []  # done once
    with org.admin() as conn:
        (log,) = conn.execute("SELECT * FROM memory_tidy_log").fetchall()
    assert (log["actor"], log["action"], log["fact_id"], log["kept_id"]) == ("bot", "merge", old, new)
    assert log["evidence"]["overlap"] == 1.0
    with org.as_agent("bot") as conn:
        facts.forget(conn, new, "the copy goes")  # a superseded fact: its successor first
        assert facts.restore(conn, old, "tidy merged it").current


@pytest.mark.slow
def test_apply_forgets_when_the_caller_did_not_write_the_kept_fact(org):
    old = _fact(org, "bot", "The build takes four minutes")
    new = _fact(org, "bot", "The build takes four minutes.")
    with org.as_agent("lead") as conn:  # bot's team lead may retire, but did not write #new
        (p,) = tidy.tidy(conn, apply=True).proposals
        assert p.done == "forgotten"
        assert facts.show_fact(conn, old).fact.retired_reason == f"near-duplicate of #{new} (cli-org tidy)"
        assert facts.restore(conn, old, "it was not a copy").current


@pytest.mark.slow
def test_apply_without_the_rights_changes_nothing_and_says_why(org):
    old = _fact(org, "bot", "The build takes four minutes")
    _fact(org, "bot", "The build takes four minutes.")
    with org.as_agent("other") as conn:
        with pytest.raises(AccessDenied, match=r"^tidy: other may not make these changes: .*may not retire"):
            tidy.tidy(conn, apply=True)
        assert facts.show_fact(conn, old).fact.current


# --- the rule for missing sources ------------------------------------------------------


@pytest.mark.slow
def test_a_project_fact_whose_file_is_gone_is_proposed(org, tmp_path):
    root, vault = tmp_path / "root", tmp_path / "vault"
    (root / "src").mkdir(parents=True)
    (root / "src/here.py").write_text("x\n")
    (vault / "notes").mkdir(parents=True)
    (vault / "notes/kept.md").write_text("x\n")
    gone = _fact(org, "bot", "The helper lives in gone", subject="helper", source="src/gone.py:12", project="alpha")
    _fact(org, "bot", "The helper lives in here", subject="h2", source="src/here.py:3-9", project="alpha")
    _fact(org, "bot", "Notes are kept", subject="notes", source="notes/kept.md", project="alpha")  # in the vault
    _fact(org, "bot", "Org-wide file claim", subject="ow", source="src/gone.py")  # org-wide: never by a file
    _fact(org, "bot", "A web claim", subject="web", source="https://example.com/x.md", project="alpha")
    _fact(org, "bot", "An absolute claim", subject="abs", source="/nowhere/at/all.md", project="alpha")
    with org.as_agent("bot") as conn:
        report = tidy.tidy(conn, project="alpha", roots=[root, vault])
        assert [(p.action, p.fact_id) for p in report.proposals] == [("missing_source", gone)]
        evidence = report.proposals[0].evidence
        assert evidence["looked_in"] == [str(root / "src/gone.py"), str(vault / "src/gone.py")]
        assert tidy.tidy(conn, project="alpha", roots=[]).proposals == []  # no root: nothing judged
        (p,) = tidy.tidy(conn, project="alpha", roots=[root, vault], apply=True).proposals
        assert p.done == "forgotten"
        assert facts.restore(conn, gone, "the file moved back").current


@pytest.mark.slow
def test_a_member_cannot_forge_the_tidy_log(org):
    theirs = _fact(org, "other", "Other's claim")
    mine = _fact(org, "bot", "My claim", subject="mine")
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        for fact_id in (theirs, mine):  # neither retired by bot in this transaction
            with pytest.raises(pgerr.InsufficientPrivilege, match="row-level security"):
                bot.execute(
                    "INSERT INTO memory_tidy_log (action, fact_id, evidence) VALUES ('merge', %s, '{}')", (fact_id,)
                )
            bot.rollback()
        for statement in ("UPDATE memory_tidy_log SET evidence = '{}'", "DELETE FROM memory_tidy_log"):
            with pytest.raises(pgerr.InsufficientPrivilege):
                bot.execute(statement)
            bot.rollback()
        # the near miss: a fact bot retires in this transaction may be logged
        bot.execute("SELECT org_forget(%s, 'gone')", (mine,))
        bot.execute(
            "INSERT INTO memory_tidy_log (action, fact_id, evidence) VALUES ('missing_source', %s, '{}')", (mine,)
        )
        bot.commit()


@pytest.mark.slow
def test_tidy_from_the_command_line(org, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("ORG_ROOT", str(tmp_path))
    monkeypatch.delenv("ORG_VAULT", raising=False)
    old = _fact(org, "bot", "The build takes four minutes")
    new = _fact(org, "bot", "The build takes four minutes.")
    code, out, _ = cli("tidy", agent="bot")
    assert code == 0 and out.startswith(f"#{old} build: ") and f"near-duplicate of #{new}" in out
    assert out.endswith("1 proposal(s); run with --apply to make them\n")
    code, out, _ = cli("tidy", "--apply", "--json", agent="bot")
    data = json.loads(out)
    assert code == 0 and data["applied"] and data["proposals"][0]["done"] == "superseded"
    assert cli("tidy", agent="bot")[1] == "nothing to tidy\n"


@pytest.mark.slow
@pytest.mark.attack("files")
def test_a_source_outside_the_checkout_or_through_a_symlink_is_never_judged(org, tmp_path):
    """An untrusted checkout ships a symlink out of itself and a FIFO; a claim names `..`:
    tidy looks at nothing outside the root, so none of these is proposed for retirement
    (before, a source through the symlink or up `..` that was not there outside was)."""
    import os

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "real.md").write_text("x\n")
    (root / "link").symlink_to(outside)
    (root / "file.md").symlink_to(outside / "real.md")
    os.mkfifo(root / "pipe.md")
    for n, source in enumerate(["link/real.md", "link/gone.md", "file.md", "../outside/gone.md", "pipe.md"]):
        _fact(org, "bot", f"Claim {n} about a file", subject=f"s{n}", source=source, project="alpha")
    with org.as_agent("bot") as conn:
        assert tidy.tidy(conn, project="alpha", roots=[root]).proposals == []
