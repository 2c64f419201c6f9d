"""The Evaluation page (`cli-org serve`): saved golden-set runs as charts and a table, one
run's cases, two runs compared; the same under /api/eval/...; refusals and escaping."""

from __future__ import annotations

import json
import re

import pytest

from cli_org.errors import InputError
from cli_org.evaluation import save_run
from tests.helpers import _run, _save  # noqa: F401

pytestmark = pytest.mark.slow

HOSTILE = "<script>alert('q')</script> & more"


@pytest.fixture
def two_runs(org):
    """boss/before: hit@8 0.6, MRR 0.367, median 2,000 chars; boss/after: hit@8 0.8, MRR 0.7,
    median 1,500 chars: questions 1 and 4 now hit, 2 now misses, 3 rose from rank 3 to 1."""
    _save(org, "boss", "before", _run([1, None, 2, 3, None], [2000] * 5))
    _save(org, "boss", "after", _run([1, 2, None, 1, 1], [1500] * 5))
    return org


def test_history_charts_and_table_show_each_runs_values(two_runs, web):
    client = web("boss")
    page = client.get("/evaluation")
    assert page.status_code == 200
    html = page.text
    # the quality chart (top 1.0) holds hit@k and MRR per run, the size chart the characters
    assert html.count('<svg class="chart"') == 2
    # each point's tooltip names its run and date
    assert re.search(r"<title>boss/before, [0-9-]{10} [0-9:]{5} · hit@8: 0.6</title>", html)
    assert "· hit@8: 0.8</title>" in html and "· MRR: 0.37</title>" in html and "· MRR: 0.7</title>" in html
    assert "· median characters: 2,000</title>" in html and "· median characters: 1,500</title>" in html
    # the table, newest first, with links to each run and to the comparison with the one before
    assert html.index('href="/evaluation/runs/boss/after"') < html.index('href="/evaluation/runs/boss/before"')
    assert 'href="/evaluation/compare?a=boss%2Fbefore&amp;b=boss%2Fafter"' in html
    assert "<td>eval/golden.test.txt</td>" not in html and "eval/golden.test.txt" in html
    assert "0.800" in html and "0.700" in html and "0.367" in html and "1,500" in html
    # the compare form offers every run, the newest as B and the one before as A
    assert "<option selected>boss/before</option>" in html.split('name="a"')[1].split("</select>")[0]
    assert "<option selected>boss/after</option>" in html.split('name="b"')[1].split("</select>")[0]


def test_history_api_lists_runs_oldest_first_with_their_figures(two_runs, web):
    data = web("other").get("/api/eval/runs").json()
    assert data["page"] == 1 and data["more"] is False
    assert [r["name"] for r in data["runs"]] == ["boss/before", "boss/after"]
    after = data["runs"][1]
    assert after["author"] == "boss" and after["k"] == 8 and after["golden_file"] == "eval/golden.test.txt"
    assert after["overall"]["hit_rate"] == 0.8 and after["overall"]["mrr"] == pytest.approx(0.7)
    assert after["overall"]["chars_median"] == 1500 and after["overall"]["n"] == 5


def test_history_is_paged_newest_first(org, web):
    from cli_org.db.connect import connect

    with connect(org.settings) as conn:
        for i in range(102):
            save_run(conn, f"r{i:03d}", _run([1], [100 + i]), golden_file="g", project=None)
    client = web("boss")
    first = client.get("/api/eval/runs").json()
    assert first["more"] is True and len(first["runs"]) == 100
    assert first["runs"][0]["name"] == "r002" and first["runs"][-1]["name"] == "r101"
    second = client.get("/api/eval/runs", params={"page": 2}).json()
    assert second["more"] is False and [r["name"] for r in second["runs"]] == ["r000", "r001"]
    html = client.get("/evaluation").text
    assert "older &rarr;" in html
    # 100 points a chart (one golden set), but four dated labels under it, from the first to the last
    labels = html.split('text-anchor="middle">')[1:]
    assert len(labels) == 8 and all(re.match(r"\d\d-\d\d \d\d:\d\d<", label) for label in labels)
    assert client.get("/api/eval/runs", params={"page": 0}).status_code == 422
    assert "No saved runs on this page" in client.get("/evaluation", params={"page": 9}).text


def test_an_empty_history_says_how_to_save_a_run(org, web):
    client = web("boss")
    page = client.get("/evaluation")
    assert page.status_code == 200 and "No saved runs yet" in page.text and "--save NAME" in page.text
    assert client.get("/api/eval/runs").json() == {"runs": [], "page": 1, "more": False}


def test_a_run_page_lists_its_cases_misses_first_and_filters(two_runs, web):
    client = web("boss")
    html = client.get("/evaluation/runs/boss/before").text
    assert "Run boss/before" in html and "eval/golden.test.txt" in html and "3 hit, 2 missed" in html
    order = [html.index(f"question {i}<") for i in (1, 4, 0, 2, 3)]  # misses (1, 4), then by rank
    assert order == sorted(order)
    misses = client.get("/evaluation/runs/boss/before", params={"show": "miss"}).text
    assert "question 1<" in misses and "question 4<" in misses and "question 0<" not in misses
    hits = client.get("/evaluation/runs/boss/before", params={"show": "hit"}).text
    assert "question 0<" in hits and "question 1<" not in hits
    assert client.get("/evaluation/runs/boss/before", params={"show": "some"}).status_code == 422
    # your own run by its bare name, another's by AUTHOR/NAME
    assert "Run boss/after" in client.get("/evaluation/runs/after").text
    assert "Run boss/after" in web("other").get("/evaluation/runs/after").text


def test_run_api_gives_every_case(two_runs, web):
    data = web("boss").get("/api/eval/runs/boss/after").json()
    assert data["name"] == "boss/after" and data["k"] == 8 and data["golden_file"] == "eval/golden.test.txt"
    assert [c["position"] for c in data["cases"]] == [1, 2, None, 1, 1]
    assert data["cases"][0] == {
        "question": "question 0",
        "expected": "answer 0",
        "tag": "fact",
        "position": 1,
        "chars": 1500,
        "ms": 10.0,
    }


def test_unknown_ambiguous_and_out_of_bounds_run_names_are_refused(two_runs, web):
    _save(two_runs, "bot", "shared", _run([1], [10]))
    _save(two_runs, "lead", "shared", _run([None], [20]))
    client = web("other")
    for path in ("/evaluation/runs/nope", "/api/eval/runs/nope", "/api/eval/runs/bot/nope"):
        refused = client.get(path)
        assert refused.status_code == 404, path
    assert "no saved run named" in client.get("/api/eval/runs/nope").json()["error"]
    assert "Not found" in client.get("/evaluation/runs/nope").text
    ambiguous = client.get("/api/eval/runs/shared")
    assert ambiguous.status_code == 400 and "bot/shared, lead/shared" in ambiguous.json()["error"]
    assert client.get("/api/eval/runs/bot/shared").json()["cases"][0]["position"] == 1
    assert web("bot").get("/api/eval/runs/shared").json()["name"] == "bot/shared"  # yours first
    assert client.get("/api/eval/runs/" + "x" * 65).status_code == 422
    assert client.get("/api/eval/runs/" + "x" * 33 + "/shared").status_code == 422
    assert client.get("/evaluation/runs/bot/shared/more").status_code == 404  # no such route
    assert client.get("/api/eval/runs/a%00b").status_code == 400  # NUL: one clean refusal


def test_compare_page_shows_deltas_verdict_and_the_cases_that_changed(two_runs, web):
    client = web("boss")
    page = client.get("/evaluation/compare", params={"a": "before", "b": "after"})
    assert page.status_code == 200
    html = page.text
    assert "a clear win: hit@8 rose from 0.600 to 0.800 (+0.200)" in html
    assert "median characters fell from 2,000 to 1,500 (-500)" in html
    assert "+0.200" in html and "-500" in html and "better" in html
    assert "2 now hit, 1 now missed, 1 moved rank." in html
    changed = html.split("Cases that changed")[1]
    # the flips first (now miss, now hit), then the rank that rose
    assert changed.index("question 2<") < changed.index("question 1<") < changed.index("question 4<")
    assert changed.index("question 4<") < changed.index("question 3<") and "question 0<" not in changed
    assert "same run" not in html


def test_compare_api_gives_rows_flips_and_changed_cases(two_runs, web):
    data = web("boss").get("/api/eval/compare", params={"a": "boss/before", "b": "boss/after"}).json()
    assert data["a"] == "boss/before" and data["b"] == "boss/after" and data["k_a"] == data["k_b"] == 8
    assert data["hit"] == "rose" and data["chars"] == "fell" and data["verdict"].startswith("a clear win")
    hit = data["rows"][0]
    assert hit["metric"] == "hit@k" and hit["delta"] == pytest.approx(0.2) and hit["change"] == "better"
    assert data["now_hit"] == ["question 1", "question 4"] and data["now_miss"] == ["question 2"]
    assert [(c["question"], c["position_a"], c["position_b"], c["change"]) for c in data["changed"]] == [
        ("question 2", 2, None, "now miss"),
        ("question 1", None, 2, "now hit"),
        ("question 4", None, 1, "now hit"),
        ("question 3", 3, 1, "rose"),
    ]
    assert data["changed"][3]["chars_a"] == 2000 and data["changed"][3]["chars_b"] == 1500


def test_compare_the_same_run_twice_says_so_and_nothing_changed(two_runs, web):
    client = web("boss")
    html = client.get("/evaluation/compare", params={"a": "after", "b": "after"}).text
    assert "A and B are the same run" in html and "no change" in html
    assert "No case changed rank" in html
    data = client.get("/api/eval/compare", params={"a": "after", "b": "boss/after"}).json()
    assert data["changed"] == [] and all(r["change"] == "same" for r in data["rows"])


def test_compare_refuses_missing_unknown_and_differs_on_k_with_a_warning(two_runs, web):
    _save(two_runs, "boss", "k3", _run([1, None, None, None, None], [700] * 5, k=3))
    client = web("boss")
    for params in ({"a": "before"}, {"b": "after"}, {}, {"a": "", "b": "after"}):
        assert client.get("/api/eval/compare", params=params).status_code == 422, params
        assert client.get("/evaluation/compare", params=params).status_code == 422, params
    refused = client.get("/api/eval/compare", params={"a": "before", "b": "nope"})
    assert refused.status_code == 404 and "nope" in refused.json()["error"]
    assert client.get("/evaluation/compare", params={"a": "nope", "b": "after"}).status_code == 404
    html = client.get("/evaluation/compare", params={"a": "before", "b": "k3"}).text
    assert "different --limit (k=8 for boss/before, k=3 for boss/k3)" in html
    # hit@k fell from 0.6 to 0.2, but at another k: no regression is claimed, no row judged
    assert '<p class="verdict verdict-not-comparable"><strong>not comparable: hit@k fell' in html
    verdict = html.split('<p class="verdict', 1)[1].split("</p>", 1)[0]
    metrics = html.split('<table class="metrics">', 1)[1].split("</table>", 1)[0]
    assert "regression" not in verdict and "change-worse" not in metrics and "change-better" not in metrics
    assert metrics.count('<span class="tag change-not-comparable">not comparable</span>') == 4
    data = client.get("/api/eval/compare", params={"a": "before", "b": "k3"}).json()
    assert data["verdict"].startswith("not comparable: ") and data["rows"][0]["change"] == "not comparable"


def test_hostile_text_in_runs_is_escaped_everywhere(org, web):
    # A run's name cannot hold markup: the database refuses it before anything is saved.
    with org.as_agent("bot") as conn, pytest.raises(InputError, match="letters, digits"):
        save_run(conn, "<script>", _run([1], [1]), golden_file="g", project=None)
    questions = [HOSTILE, "<img src=x onerror=alert(1)>"]
    _save(org, "bot", "a", _run([1, None], [10, 10], questions), golden_file="<b>golden</b>.txt")
    _save(org, "bot", "b", _run([None, 1], [10, 10], questions), golden_file="<b>golden</b>.txt")
    client = web("boss")
    for path in ("/evaluation", "/evaluation/runs/bot/a", "/evaluation/compare?a=bot/a&b=bot/b"):
        html = client.get(path).text
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>golden" not in html, path
    run = client.get("/evaluation/runs/bot/a").text
    assert "&lt;script&gt;alert(&#39;q&#39;)&lt;/script&gt; &amp; more" in run
    assert "&lt;img src=x onerror=alert(1)&gt;" in run and "&lt;b&gt;golden&lt;/b&gt;.txt" in run
    assert "&lt;script&gt;" in client.get("/evaluation/compare?a=bot/a&b=bot/b").text
    assert client.get("/api/eval/runs/bot/a").json()["cases"][0]["question"] == HOSTILE  # JSON keeps it as data


def test_a_malformed_saved_run_is_listed_with_its_problem_never_a_crash(org, web):
    _save(org, "boss", "good", _run([1], [10]))
    with org.admin() as conn:
        # stored before migration 0023 checked a run's numbers (NOT VALID: old rows stay)
        conn.execute("ALTER TABLE eval_runs DROP CONSTRAINT eval_runs_numbers")
        conn.execute(
            "INSERT INTO eval_runs (name, golden_file, k, summary, cases) VALUES ('broken', 'g', 8, %s, '[]')",
            (json.dumps({"overall": {"n": 1}}),),
        )
        conn.commit()
    client = web("boss")
    page = client.get("/evaluation")
    assert page.status_code == 200 and "malformed" in page.text and "· hit@8: 1</title>" in page.text
    runs = client.get("/api/eval/runs").json()["runs"]
    assert runs[1]["name"] == "broken" and runs[1]["overall"] is None and "malformed" in runs[1]["problem"]
    refused = client.get("/api/eval/runs/broken")
    assert refused.status_code == 400 and "malformed" in refused.json()["error"]
    assert client.get("/evaluation/compare", params={"a": "good", "b": "broken"}).status_code == 400


def test_evaluation_pages_are_in_the_navigation_and_the_schema(org, web):
    client = web("boss")
    assert 'href="/evaluation" class="here"' in client.get("/evaluation").text
    paths = client.get("/api/openapi.json").json()["paths"]
    assert {"/api/eval/runs", "/api/eval/runs/{name}", "/api/eval/runs/{author}/{name}", "/api/eval/compare"} <= set(
        paths
    )
    # every API route is published under its own path (the fuzzer walks the routes)
    from fastapi.routing import APIRoute

    from cli_org.faces.web.pages.evaluation import router

    assert all(r.path in paths for r in router.routes if isinstance(r, APIRoute) and r.include_in_schema)
    assert not any(p.startswith("/evaluation") for p in paths)


def test_links_to_runs_with_every_allowed_character_work(org, web):
    _save(org, "bot", "v1.2+fix@main:3_a-b", _run([1], [10]))
    _save(org, None, "admin.run", _run([None], [10]))
    client = web("boss")
    html = client.get("/evaluation").text
    links = {href for href in html.split('href="')[1:] for href in [href.split('"')[0]] if "/evaluation/" in href}
    runs = sorted(h for h in links if h.startswith("/evaluation/runs/"))
    assert runs == ["/evaluation/runs/admin.run", "/evaluation/runs/bot/v1.2%2Bfix%40main%3A3_a-b"]
    for href in runs:
        assert client.get(href).status_code == 200, href
    (compare,) = [h for h in links if h.startswith("/evaluation/compare")]
    page = client.get(compare.replace("&amp;", "&"))
    assert page.status_code == 200 and "bot/v1.2+fix@main:3_a-b" in page.text
