"""What a tidy merge keeps (issue 36, item 4): the stronger of each of pin, kind, confidence and
project, shown before it is applied; a merge that would lose something waits for a person; and
merges across authors, applied only by someone who may retire both facts, with a `confirms`
link that says who agreed. Through the library, the command line, the page and real logins."""

from __future__ import annotations

import json
import re

import pytest

from cli_org.checks.rules import CONFIDENCES, KIND_STRENGTH, KINDS, PIN_CAP_ORG
from cli_org.errors import AccessDenied
from cli_org.store import facts, links, pins, tidy
from cli_org.store.agents import add_agent

pytestmark = pytest.mark.slow

CLAIM = "Deploys run from the main branch at night"


def _fact(org, agent, claim=CLAIM, *, kind="fact", inferred=False, project=None, subject="deploys"):
    # remember refuses a near-duplicate; tidy finds those written past the refusal
    return facts.remember(
        org.writer(agent),
        subject,
        claim,
        source="#m1",
        project=project,
        kind=kind,
        inferred=inferred,
        allow_duplicate=True,
    ).id


def _current(org, fact_id):
    with org.admin() as conn:
        return conn.execute("SELECT valid_to IS NULL AS c FROM memory_facts WHERE id = %s", (fact_id,)).fetchone()["c"]


def _pin_of(org, fact_id):
    with org.admin() as conn:
        row = conn.execute(
            "SELECT project FROM memory_pins WHERE fact_id = %s AND unpinned_at IS NULL", (fact_id,)
        ).fetchone()
    return ("pinned", row["project"]) if row else None


def test_the_strength_orders_name_every_kind_and_confidence_once():
    assert sorted(KIND_STRENGTH) == sorted(KINDS) and len(set(KIND_STRENGTH)) == len(KINDS)
    assert KIND_STRENGTH[0] == "rule" and CONFIDENCES == ("confirmed", "inferred")


# --- one attribute at a time, through the library ---------------------------------------


def test_kind_a_rule_is_kept_over_a_newer_plain_fact(org):
    rule = _fact(org, "bot", kind="rule")
    plain = _fact(org, "bot", CLAIM + ".")
    with org.as_agent("bot") as conn:
        (p,) = tidy.tidy(conn, apply=True).proposals
    assert (p.fact_id, p.kept_id, p.needs_person, p.done) == (plain, rule, None, "superseded")
    assert (p.retired.kind, p.kept.kind) == ("fact", "rule")
    assert _current(org, rule) and not _current(org, plain)


def test_pin_moves_to_the_kept_rule_through_the_pin_functions_at_the_cap(org):
    """The issue's case turned round: a pinned org-wide plain fact and an unpinned rule. The rule
    is kept (its kind cannot move) and the pin moves to it, with the org-wide scope full."""
    pinned = _fact(org, "bot")
    rule = _fact(org, "bot", CLAIM + ".", kind="rule")
    with org.as_agent("bot") as conn:
        pins.pin(conn, pinned)
        for n in range(PIN_CAP_ORG - 1):
            pins.pin(conn, _fact(org, "bot", f"Filler claim number {n}", subject=f"f{n}"))
        (p,) = tidy.tidy(conn).proposals
        assert (p.fact_id, p.kept_id, p.moves_pin, p.needs_person) == (pinned, rule, True, None)
        assert (p.retired.pinned, p.retired.pin_project, p.kept.pinned) == (True, None, False)
        (p,) = tidy.tidy(conn, apply=True).proposals
    assert p.done == "superseded" and p.evidence["moved_pin"] == "org-wide"
    assert _pin_of(org, rule) == ("pinned", None) and _pin_of(org, pinned) is None
    with org.admin() as conn:
        live = conn.execute("SELECT count(*) AS n FROM memory_pins WHERE unpinned_at IS NULL").fetchone()["n"]
        (log,) = conn.execute("SELECT evidence FROM memory_tidy_log").fetchall()
    assert live == PIN_CAP_ORG and log["evidence"]["moved_pin"] == "org-wide"


def test_pin_a_pinned_rule_is_never_retired_for_an_unpinned_plain_fact(org):
    """The issue's case as it was found: the rule keeps its pin and its kind."""
    rule = _fact(org, "bot", kind="rule")
    plain = _fact(org, "bot", CLAIM + ".")
    with org.as_agent("bot") as conn:
        pins.pin(conn, rule)
        (p,) = tidy.tidy(conn, apply=True).proposals
    assert (p.fact_id, p.kept_id, p.moves_pin, p.done) == (plain, rule, False, "superseded")
    assert _pin_of(org, rule) == ("pinned", None)


def test_confidence_confirmed_is_kept_over_a_newer_inferred_copy(org):
    confirmed = _fact(org, "bot")
    inferred = _fact(org, "bot", CLAIM + ".", inferred=True)
    with org.as_agent("bot") as conn:
        (p,) = tidy.tidy(conn).proposals
    assert (p.fact_id, p.kept_id, p.needs_person) == (inferred, confirmed, None)
    assert (p.retired.confidence, p.kept.confidence) == ("inferred", "confirmed")


def test_a_merge_that_would_lose_something_waits_for_a_person(org):
    """An inferred rule and a confirmed plain fact: either way a kind or a confidence is lost,
    and neither can move. Skipped on apply; applied when forced."""
    rule = _fact(org, "bot", kind="rule", inferred=True)
    plain = _fact(org, "bot", CLAIM + ".")
    with org.as_agent("bot") as conn:
        (p,) = tidy.tidy(conn, apply=True).proposals
        assert (p.fact_id, p.kept_id, p.skipped, p.done, p.error) == (plain, rule, True, None, None)
        assert p.needs_person == f"#{plain} is confirmed and #{rule} inferred"
        assert _current(org, plain)
        (p,) = tidy.tidy(conn, apply=True, force={plain}).proposals
    assert p.done == "superseded" and not _current(org, plain)


def test_project_an_org_wide_fact_is_kept_and_a_projects_pin_moves_to_it(org):
    org_wide = _fact(org, "bot")
    alpha = _fact(org, "bot", CLAIM + ".", project="alpha")
    with org.as_agent("bot") as conn:
        pins.pin(conn, alpha)  # pinned in its project
        (p,) = tidy.tidy(conn, project="alpha", apply=True).proposals
    assert (p.fact_id, p.kept_id, p.moves_pin, p.done) == (alpha, org_wide, True, "superseded")
    assert (p.retired.project, p.kept.project) == ("alpha", None)
    assert _pin_of(org, org_wide) == ("pinned", "alpha")  # same scope: alpha's sessions still get it


def test_project_a_projects_rule_and_an_org_wide_fact_wait_for_a_person(org):
    org_wide = _fact(org, "bot")
    alpha_rule = _fact(org, "bot", CLAIM + ".", project="alpha", kind="rule")
    with org.as_agent("bot") as conn:
        (p,) = tidy.tidy(conn).proposals
    assert (p.fact_id, p.kept_id) == (org_wide, alpha_rule)  # the rule's kind weighs first
    assert p.needs_person == f"#{org_wide} is org-wide and #{alpha_rule} only in project alpha"
    with org.as_agent("bot") as conn:
        assert tidy.tidy(conn, project="alpha").proposals == []  # it would retire an org-wide fact


# --- across authors -----------------------------------------------------------------------


def test_three_agents_writing_one_claim_have_something_to_tidy(org):
    with org.admin() as conn:
        add_agent(conn, "scout", lead="lead")
        conn.commit()
    a, b, c = (_fact(org, who) for who in ("bot", "other", "scout"))
    with org.as_agent("boss") as conn:  # an owner may retire anyone's
        report = tidy.tidy(conn, apply=True)
        assert [(p.fact_id, p.kept_id, p.done) for p in report.proposals] == [(a, c, "forgotten"), (b, c, "forgotten")]
        found = [x for x in links.links_of(conn, [c])[c] if x.author == "boss"]  # remember linked its own
        assert {(x.from_id, x.kind, x.author) for x in found} == {(a, "confirms", "boss"), (b, "confirms", "boss")}
        assert facts.show_fact(conn, c).confirmed_by == ["bot", "other"]
    with org.admin() as conn:
        log = conn.execute("SELECT actor, fact_id, kept_id, evidence FROM memory_tidy_log ORDER BY id").fetchall()
    assert [(r["actor"], r["fact_id"], r["kept_id"]) for r in log] == [("boss", a, c), ("boss", b, c)]
    assert all(r["evidence"]["confirms_link"] for r in log)


def test_a_lead_merges_across_its_own_agents_only(org):
    with org.admin() as conn:
        add_agent(conn, "scout", lead="lead")
        conn.commit()
    mine = _fact(org, "bot")
    scouts = _fact(org, "scout")
    others = _fact(org, "other", subject="other")
    _fact(org, "bot", subject="other")
    with org.as_agent("lead") as conn:
        report = tidy.tidy(conn, apply=True)
    by_fact = {p.fact_id: p for p in report.proposals}
    assert by_fact[mine].done == "forgotten" and by_fact[mine].kept_id == scouts
    refused = [p for p in report.proposals if p.fact_id != mine]
    assert len(refused) == 1 and refused[0].done is None
    assert "needs someone who may retire both, their team lead or an owner; lead may not" in refused[0].error
    assert _current(org, others)


@pytest.mark.attack("claims")
def test_a_member_never_retires_a_claim_for_another_agents_through_its_own_login(org):
    """Claim squatting (migration 0008): bot's own tidy, over its own password, neither retires
    other's claim nor its own in favour of other's; one line, nothing changed."""
    mine = _fact(org, "bot")
    theirs = _fact(org, "other")
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        with pytest.raises(AccessDenied, match=r"^tidy: bot may not make these changes: a merge across authors"):
            tidy.tidy(bot, apply=True)
        with pytest.raises(Exception, match="may not retire"):  # and straight through SQL
            bot.execute("SELECT org_forget(%s, 'squat')", (theirs,))
        bot.rollback()
    assert _current(org, mine) and _current(org, theirs)
    with org.admin() as conn:
        # remember linked other's copy as confirming bot's (issue 36); tidy linked nothing as bot
        assert conn.execute("SELECT count(*) AS n FROM memory_links WHERE author = 'bot'").fetchone()["n"] == 0
        assert conn.execute("SELECT count(*) AS n FROM memory_tidy_log").fetchone()["n"] == 0


# --- the command line and the page --------------------------------------------------------


def test_the_command_line_shows_both_facts_skips_and_forces(org, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("ORG_ROOT", str(tmp_path))
    monkeypatch.delenv("ORG_VAULT", raising=False)
    rule = _fact(org, "bot", kind="rule", inferred=True)
    plain = _fact(org, "bot", CLAIM + ".")
    with org.as_agent("bot") as conn:
        pins.pin(conn, rule)
    code, out, _ = cli("tidy", agent="bot")
    assert code == 0
    assert f"  retire #{plain}: fact, confirmed, org-wide, not pinned [bot]" in out
    assert f"  keep   #{rule}: rule, inferred, org-wide, pinned org-wide [bot]" in out
    assert f"  needs a person: #{plain} is confirmed and #{rule} inferred" in out
    data = json.loads(cli("tidy", "--json", agent="bot")[1])
    (p,) = data["proposals"]
    assert p["retired"]["confidence"] == "confirmed" and p["kept"]["pinned"] and p["needs_person"]
    code, out, _ = cli("tidy", "--apply", agent="bot")
    assert code == 0 and "-> skipped: needs a person (--force-merge to apply it)" in out and _current(org, plain)
    code, out, _ = cli("tidy", "--apply", "--force-merge", agent="bot")
    assert code == 0 and "-> superseded" in out and not _current(org, plain)


def test_the_command_line_refuses_a_member_a_merge_across_authors_in_one_line(org, cli):
    mine, theirs = _fact(org, "bot"), _fact(org, "other")
    code, out, err = cli("tidy", agent="bot")
    assert code == 0 and f"retire #{mine}" in out and f"keep   #{theirs}" in out and "[other]" in out
    code, out, err = cli("tidy", "--apply", agent="bot")
    assert code != 0 and err.count("\n") == 1 and "tidy: bot may not make these changes: a merge across" in err
    assert _current(org, mine) and _current(org, theirs)
    code, out, err = cli("tidy", "--apply", agent="boss")
    assert code == 0 and "-> forgotten" in out and not _current(org, mine)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def test_the_page_shows_both_facts_and_applies_only_what_is_ticked_to_force(org, web):
    rule = _fact(org, "bot", kind="rule")
    plain = _fact(org, "bot", CLAIM + ".")
    pinned_plain = _fact(org, "bot", "The cache is kept for one whole week", subject="cache")
    cache_rule = _fact(org, "bot", "The cache is kept for one whole week.", subject="cache", kind="rule", inferred=True)
    with org.as_agent("bot") as conn:
        pins.pin(conn, rule)
    client = web("lead")  # bot's team lead
    page = client.get("/facts/tidy")
    assert page.status_code == 200
    text = page.text
    assert "rule, confirmed, org-wide, pinned org-wide" in text and "fact, confirmed, org-wide, not pinned" in text
    assert f'name="fact" value="{plain}" checked' in text
    # the one that would lose a confidence: shown with why, not ticked, and under its own name
    assert f"#{pinned_plain} is confirmed and #{cache_rule} inferred" in text
    assert f'name="force" value="{pinned_plain}"' in text and f'name="fact" value="{pinned_plain}"' not in text
    done = client.post("/facts/tidy", data={"csrf": _csrf(text), "fact": [str(plain), str(pinned_plain)]})
    assert done.status_code == 200 and "1 change made" in done.text and "needs a person" in done.text
    assert not _current(org, plain) and _current(org, pinned_plain)
    page = client.get("/facts/tidy")
    done = client.post("/facts/tidy", data={"csrf": _csrf(page.text), "force": str(pinned_plain)})
    assert done.status_code == 200 and "1 change made" in done.text and not _current(org, pinned_plain)


def test_the_page_refuses_a_member_a_merge_across_authors(org, web):
    mine, theirs = _fact(org, "bot"), _fact(org, "other")
    client = web("bot")
    page = client.get("/facts/tidy")
    refused = client.post("/facts/tidy", data={"csrf": _csrf(page.text), "fact": str(mine)})
    assert refused.status_code == 403 and "tidy: bot may not make these changes: a merge across" in refused.text
    api = client.post("/api/facts/tidy", json={"facts": [mine]})
    assert api.status_code == 403 and "\n" not in api.json()["error"]
    assert _current(org, mine) and _current(org, theirs)
    done = web("boss").post("/api/facts/tidy", json={"facts": [mine]})
    assert done.status_code == 200 and done.json()["proposals"][0]["done"] == "forgotten"
