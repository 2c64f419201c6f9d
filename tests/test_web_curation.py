"""The store's health (evaluation/curation.py) and tidy from the page: the summary's numbers
checked against facts written here, on the Facts page, under /api/facts/summary and by
`cli-org facts summary`; the proposals of `cli-org tidy` listed and applied from the page as
the serving identity, and refused, in one line, for a member without the right."""

from __future__ import annotations

import json
import os
import re

import pytest

from cli_org.evaluation.curation import curation_summary, pending_merges
from cli_org.store.facts import forget, remember

pytestmark = pytest.mark.slow

HOSTILE = "<script>alert('tidy')</script>"


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


@pytest.fixture
def store(org):
    """bot: 4 current (one inferred, one rule, two near-duplicates, three with a project),
    one retired, one superseded; other: 1 current. Claims of 20, 30, 40, 50, 60 characters."""
    with org.as_agent("bot") as conn:
        a = remember(conn, "deploys", "x" * 19 + ".", source="docs/a.md", project="shop").id
        old = remember(conn, "cache", "The cache is kept for one day", source="#c1").id
        remember(conn, "cache", "The cache is kept for one week" + "!" * 0, source="#c2", supersedes=old)
        gone = remember(conn, "gone", "A claim that turned out wrong", source="#g").id
        forget(conn, gone, "wrong")
        rules = remember(conn, "rules", "y" * 39 + ".", source="#r", kind="rule", inferred=True, project="shop").id
        d1 = remember(conn, "twice", "The build cache lives on the shared disk", source="#t1", project="shop").id
        d2 = remember(
            conn,
            "twice",
            "The build cache lives on the shared disk.",
            source="#t2",
            project="shop",
            allow_duplicate=True,
        ).id
    with org.as_agent("other") as conn:
        remember(conn, HOSTILE, "z" * 59 + ".", source="#o")
    return {"a": a, "old": old, "gone": gone, "d1": d1, "d2": d2, "rules": rules}


def test_summary_counts_what_was_written(org, store):
    with org.as_agent("boss") as conn:
        s = curation_summary(conn)
    # current: a, the week cache, rules, d1, d2 (bot) and other's = 6
    assert (s.current, s.retired, s.superseded, s.facts) == (6, 1, 1, 8)
    assert (s.confirmed, s.inferred) == (5, 1)
    assert s.with_project == 4 and s.project_share == pytest.approx(4 / 6, abs=1e-4)
    lengths = sorted([20, len("The cache is kept for one week"), 40, 40, 41, 60])
    assert s.claim_median == (lengths[2] + lengths[3]) / 2 and s.claim_max == 60
    assert [(a.name, a.facts) for a in s.by_author] == [("bot", 5), ("other", 1)] and s.other_authors == 0
    assert {k.name: k.facts for k in s.by_kind} == {"fact": 5, "rule": 1}
    assert (s.near_duplicates, s.near_duplicates_at_least) == (1, False)
    assert s.stale_sources is None


def test_near_duplicate_count_is_a_lower_bound_past_its_cap(org, store):
    with org.as_agent("boss") as conn:
        assert pending_merges(conn) == (1, False)
        assert pending_merges(conn, limit=1) == (0, True)  # d1 alone: no pair to judge, and it says so
        assert pending_merges(conn, newest=2) == (0, False)  # other's fact and d2: d1 is older
        assert pending_merges(conn, newest=3) == (1, False)


def test_summary_on_the_facts_page_and_in_the_api(org, store, web):
    client = web("boss")
    data = client.get("/api/facts/summary").json()
    assert data["current"] == 6 and data["retired"] == 1 and data["superseded"] == 1
    assert data["near_duplicates"] == 1 and data["by_author"][0] == {"name": "bot", "facts": 5}
    html = client.get("/facts").text
    panel = html.split('aria-label="store summary"')[1].split("</section>")[0]
    assert "6</span> current" in panel and "1 retired" in panel and "1 superseded" in panel
    assert "67%</span> with a project" in panel and "1</span> near-duplicates" in panel
    assert 'href="/facts/tidy"' in panel and 'href="/facts?author=bot"' in panel
    assert "<script>alert" not in html  # the hostile subject is in no author or kind name; escaped anyway
    assert "store summary" not in client.get("/facts", params={"page": 2}).text  # the first page only


def test_cli_facts_summary_json_and_text(org, store, cli, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("here\n")
    os.utime(tmp_path / "docs" / "a.md", (0, 0))  # older than the fact: not changed since
    code, out, err = cli("facts", "summary", "--root", str(tmp_path), "--json", agent="boss")
    assert code == 0, err
    data = json.loads(out)
    assert data["current"] == 6 and data["inferred"] == 1 and data["stale_root"] == str(tmp_path)
    assert data["stale_sources"] == 0  # docs/a.md exists and is older than the fact
    (tmp_path / "docs" / "a.md").unlink()
    code, out, err = cli("facts", "summary", "--root", str(tmp_path), agent="boss")
    assert code == 0, err
    assert "facts: 6 current, 1 retired, 1 superseded (8 written)" in out
    assert "near-duplicates waiting for `cli-org tidy`: 1" in out
    assert f"stale items waiting for `cli-org eval stale` under {tmp_path}: 1" in out
    code, out, err = cli("facts", "summary", "--no-stale", "--json", agent="boss")
    assert code == 0 and json.loads(out)["stale_sources"] is None, err


def test_the_lead_applies_tidy_proposals_from_the_page(org, store, web):
    client = web("lead")  # bot's team lead: may retire bot's facts
    page = client.get("/facts/tidy")
    assert page.status_code == 200
    assert f'name="fact" value="{store["d1"]}"' in page.text and f'href="/facts/{store["d2"]}"' in page.text
    done = client.post("/facts/tidy", data={"csrf": _csrf(page.text), "fact": str(store["d1"])})
    assert done.status_code == 200, done.text
    assert "1 change made" in done.text and "forgotten" in done.text
    with org.as_agent("boss") as conn:
        assert pending_merges(conn) == (0, False)
        row = conn.execute(
            "SELECT retired_by, retired_reason, retired_via FROM memory_facts WHERE id = %s", (store["d1"],)
        ).fetchone()
        log = conn.execute("SELECT actor, action, kept_id FROM memory_tidy_log").fetchall()
    assert row["retired_by"] == "lead" and f"#{store['d2']}" in row["retired_reason"]
    assert row["retired_via"].startswith("web@")  # the page's harness, as its other writes (Activity)
    assert [(r["actor"], r["action"], r["kept_id"]) for r in log] == [("lead", "merge", store["d2"])]
    assert "near-duplicate of" not in client.get("/facts/tidy").text  # the merge is done


@pytest.mark.attack("web")
def test_a_member_without_the_right_is_refused_in_one_line(org, store, web):
    client = web("other")  # neither bot's lead nor an owner
    page = client.get("/facts/tidy")
    assert f'value="{store["d1"]}"' in page.text  # every member reads the proposals
    refused = client.post("/facts/tidy", data={"csrf": _csrf(page.text), "fact": str(store["d1"])})
    assert refused.status_code == 403
    assert "tidy: other may not make these changes:" in refused.text
    api = client.post("/api/facts/tidy", json={"facts": [store["d1"]]})
    assert api.status_code == 403 and api.json()["error"].startswith("tidy: other may not make these changes:")
    assert "\n" not in api.json()["error"]
    with org.as_agent("boss") as conn:
        assert (
            conn.execute("SELECT valid_to FROM memory_facts WHERE id = %s", (store["d1"],)).fetchone()["valid_to"]
            is None
        )
        assert conn.execute("SELECT count(*) AS n FROM memory_tidy_log").fetchone()["n"] == 0


@pytest.mark.attack("web")
def test_tidy_refuses_bad_input_and_forms_without_a_token(org, store, web):
    client = web("lead")
    token = _csrf(client.get("/facts/tidy").text)
    assert client.post("/facts/tidy", data={"fact": str(store["d1"])}).status_code == 403  # no CSRF token
    for bad in ({"fact": "x"}, {}, {"fact": "0"}, {"fact": [str(i) for i in range(1, 102)]}):
        answer = client.post("/facts/tidy", data={"csrf": token, **bad})
        assert answer.status_code == 400, (bad, answer.status_code)
        assert "tidy:" in answer.text
    for body in ({"facts": []}, {"facts": ["a"]}, {"facts": list(range(1, 102))}, {}):
        assert client.post("/api/facts/tidy", json=body).status_code == 422, body  # the schema refuses it
    assert client.post("/api/facts/tidy", content="facts=1").status_code == 415
    # a fact that is proposed for nothing is left alone: nothing done, nothing refused
    answer = client.post("/api/facts/tidy", json={"facts": [store["rules"]]})
    assert answer.status_code == 200 and answer.json()["proposals"] == []
    with org.as_agent("boss") as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_tidy_log").fetchone()["n"] == 0


def test_tidy_api_lists_the_proposals_with_evidence(org, store, web):
    data = web("other").get("/api/facts/tidy").json()
    assert data["total"] == len(data["proposals"]) and data["newest"] == 2000
    merges = [p for p in data["proposals"] if p["action"] == "merge"]
    assert [(p["fact_id"], p["kept_id"]) for p in merges] == [(store["d1"], store["d2"])]
    assert merges[0]["evidence"]["overlap"] >= merges[0]["evidence"]["threshold"]
