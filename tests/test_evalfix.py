"""Issue 26's smaller parts: evaluation trends per golden set and k with dated axes, each run
compared with the previous run of its set (library, page, API, CLI); the Search page with no
"(None)" rank; the Usage page that says what its window holds; `agents add --login` without a
terminal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from cli_org.db.connect import connect
from cli_org.evaluation import compare_with_previous, run_history, trends
from tests import web_site
from tests.helpers import _run, _save

site = web_site.site  # the fixtures (tests/web_site.py)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _age(org, name: str, days: float) -> None:
    """Date a saved run `days` ago (runs saved in one test share a second)."""
    with org.admin() as conn:
        conn.execute(
            "UPDATE eval_runs SET created_at = now() - make_interval(secs => %s) WHERE name = %s",
            (days * 86400, name),
        )
        conn.commit()


@pytest.fixture
def sets(org):
    """Two golden files and two k: golden A at k=8 three times (a1 -> a2 -> a3), golden A at
    k=3 once, golden B at k=8 twice; saved interleaved, on different days."""
    plan = [
        ("a1", "eval/a.txt", 8, [1, None, 2], 9),
        ("b1", "eval/b.txt", 8, [1, 1], 8),
        ("a2", "eval/a.txt", 8, [1, 1, None], 7),
        ("a-k3", "eval/a.txt", 3, [None, None, None], 6),
        ("b2", "eval/b.txt", 8, [None, 1], 5),
        ("a3", "eval/a.txt", 8, [1, 1, 1], 4),
    ]
    for name, golden, k, positions, days in plan:
        _save(org, "boss", name, _run(positions, [1000] * len(positions), k=k), golden_file=golden)
        _age(org, name, days)
    return org


def test_trends_split_runs_by_golden_file_and_k(sets):
    with connect(sets.settings) as conn:
        runs = run_history(conn)
    found = trends(runs)
    assert [(t.golden_file, t.k, [r.name for r in t.runs]) for t in found] == [
        ("eval/a.txt", 8, ["boss/a1", "boss/a2", "boss/a3"]),  # its newest run is the newest
        ("eval/b.txt", 8, ["boss/b1", "boss/b2"]),
        ("eval/a.txt", 3, ["boss/a-k3"]),
    ]
    previous = {r.name: r.previous for r in runs}
    assert previous == {
        "boss/a1": None,
        "boss/b1": None,
        "boss/a2": "boss/a1",
        "boss/a-k3": None,  # another k: not a2's successor
        "boss/b2": "boss/b1",
        "boss/a3": "boss/a2",
    }


def test_the_previous_run_of_a_page_may_lie_on_an_older_page(sets):
    with connect(sets.settings) as conn:
        newest = run_history(conn, limit=1)
    assert [(r.name, r.previous) for r in newest] == [("boss/a3", "boss/a2")]


def test_compare_with_previous_gives_deltas_and_changed_cases(sets):
    with connect(sets.settings) as conn:
        versus = compare_with_previous(conn, "a2")
        first = compare_with_previous(conn, "a-k3")
    assert versus.previous == "boss/a1" and versus.golden_file == "eval/a.txt" and versus.k == 8
    c = versus.comparison
    assert c is not None and c.a == "boss/a1" and c.b == "boss/a2"
    assert c.rows[0].metric == "hit@k" and c.rows[0].delta == pytest.approx(0)  # 2 of 3 both times
    assert [(x.question, x.change) for x in c.changed] == [("question 2", "now miss"), ("question 1", "now hit")]
    assert first.previous is None and first.comparison is None


def test_the_evaluation_page_draws_one_trend_per_set_with_dated_axes(sets, web):
    html = web("boss").get("/evaluation").text
    assert html.count('<svg class="chart"') == 6  # three sets, two charts each
    heads = re.findall(r'<h3 class="trend">([^<]+) <span class="muted">· k=(\d+) · (\d+) runs?', html)
    assert heads == [("eval/a.txt", "8", "3"), ("eval/b.txt", "8", "2"), ("eval/a.txt", "3", "1")]
    first_chart = html.split('<svg class="chart"')[1]
    labels = re.findall(r'text-anchor="middle">([^<]+)</text>', first_chart)
    days = [(datetime.now(UTC) - timedelta(days=d)).strftime("%Y-%m-%d") for d in (9, 7, 4)]
    assert labels == days  # one run a day: the date alone
    assert "boss/b1" not in first_chart and "boss/a-k3" not in first_chart  # other sets, other lines
    # "vs previous" compares with the previous run of the same set and k, not the row below
    assert 'href="/evaluation/compare?a=boss%2Fa2&amp;b=boss%2Fa3"' in html
    assert 'href="/evaluation/compare?a=boss%2Fb1&amp;b=boss%2Fb2"' in html
    assert "a=boss%2Fb2&amp;b=boss%2Fa3" not in html and "b=boss%2Fa-k3" not in html


def test_the_run_page_and_api_compare_with_the_previous_run(sets, web):
    client = web("other")
    html = client.get("/evaluation/runs/boss/b2").text
    section = html.split("Against the previous run of this set")[1].split("<h2>Cases</h2>")[0]
    assert 'href="/evaluation/runs/boss/b1"' in section and "a regression: hit@8 fell from 1.000 to 0.500" in section
    assert "-0.500" in section and "now miss" in section and "question 0" in section
    first = client.get("/evaluation/runs/boss/a1").text
    assert "The first saved run of eval/a.txt at k=8" in first
    data = client.get("/api/eval/previous", params={"run": "boss/b2"}).json()
    assert data["previous"] == "boss/b1" and data["comparison"]["rows"][0]["delta"] == pytest.approx(-0.5)
    assert data["comparison"]["changed"] == [
        {
            "question": "question 0",
            "expected": "answer 0",
            "position_a": 1,
            "position_b": None,
            "chars_a": 1000,
            "chars_b": 1000,
            "change": "now miss",
        }
    ]
    assert client.get("/api/eval/previous", params={"run": "a1"}).json()["comparison"] is None
    assert client.get("/api/eval/previous", params={"run": "nope"}).status_code == 404
    assert client.get("/api/eval/previous").status_code == 422
    assert client.get("/api/eval/previous", params={"run": "x" * 98}).status_code == 422


def test_hostile_golden_file_names_draw_as_text(org, web):
    hostile = "<script>alert(1)</script>.txt"
    _save(org, "boss", "h1", _run([1], [10]), golden_file=hostile)
    _save(org, "boss", "h2", _run([None], [10]), golden_file=hostile)
    html = web("boss").get("/evaluation").text
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;.txt" in html


def test_cli_compare_with_one_run_uses_the_previous_of_its_set(sets, cli):
    code, out, err = cli("eval", "compare", "b2", "--json", agent="boss")
    assert code == 0, err
    data = json.loads(out)
    assert data["a"] == "boss/b1" and data["b"] == "boss/b2" and data["now_miss"] == ["question 0"]
    code, out, err = cli("eval", "compare", "a-k3", agent="boss")
    assert code == 1 and out == ""
    assert err.strip() == (
        "cli-org: boss/a-k3 is the first saved run of eval/a.txt at k=3: nothing before it to compare with"
    )
    code, out, err = cli("eval", "history", "--json", agent="boss")
    assert code == 0 and {r["name"]: r["previous"] for r in json.loads(out)}["boss/a3"] == "boss/a2"


# --- Search: no "(None)" where a note has no keyword rank ------------------------------------


def test_search_shows_a_dash_where_there_is_no_keyword_rank(site):  # noqa: F811
    """Hybrid mode scores the notes only the vectors found on BM25 too (0 when no word
    matches), with no keyword rank: the column showed "0.00 (None)"."""
    client = site("boss")
    data = client.get("/api/search", params={"q": "rollback deploy", "mode": "hybrid"}).json()
    unranked = [h["path"] for h in data["hits"] if h["keyword_rank"] is None and h["keyword_score"] is not None]
    assert unranked, "no hit without a keyword rank: the case this test is about did not occur"
    page = client.get("/search", params={"q": "rollback deploy", "mode": "hybrid"}).text
    rows = page.split("<tbody>")[1].split("</tbody>")[0]
    assert "None" not in rows
    for row in rows.split("<tr>")[1:]:
        bm25 = re.findall(r'<td class="num">(.*?)</td>', row)[2]
        if any(f"<code>{path}</code>" in row for path in unranked):
            assert bm25 == '<span class="muted">–</span>', row
        else:
            assert re.fullmatch(r"\d+\.\d\d \(\d+\)", bm25), bm25


# --- Usage: what the window holds, and the wider one -----------------------------------------


def _archive_one(org, started: datetime) -> None:
    with org.admin() as conn:
        conn.execute(
            "INSERT INTO archive_sessions (harness, external_id, started_at) VALUES ('claude-code', %s, %s)",
            (f"s-{started:%s}", started),
        )
        conn.commit()


def test_usage_says_what_the_window_holds_and_offers_the_wider_one(org, web, cli):
    _archive_one(org, datetime.now(UTC) - timedelta(days=100))
    _archive_one(org, datetime.now(UTC) - timedelta(days=45))
    newest = (datetime.now(UTC) - timedelta(days=45)).strftime("%Y-%m-%d")
    client = web("boss")
    html = client.get("/usage").text
    assert f"no sessions in the last 30 days; 2 archived sessions, newest on {newest}" in html
    assert 'href="/usage?days=47&amp;by=day">show the last 47 days</a>' in html
    assert "import them" not in html and "import sessions" not in html
    wider = client.get("/usage", params={"days": 47}).text
    assert "no sessions in the last" not in wider  # the wider window holds the newest session
    data = client.get("/api/usage").json()["archive"]
    assert data["sessions"] == 2 and data["wider_days"] == 47 and data["newest"].startswith(newest)
    code, out, _ = cli("usage", "--days", "30")
    assert code == 0
    assert out.splitlines()[1] == (
        f"no sessions in the last 30 days; 2 archived sessions, newest on {newest}: widen the window with --days 47"
    )


def test_usage_with_nothing_archived_says_to_import(web):
    html = web("boss").get("/usage").text
    assert "none archived yet: import them with <code>cli-org archive import</code>" in html


# --- agents add --login without a terminal -------------------------------------------------


def _add(org, *args: str, stdin: str | None = None, password: str | None = None):
    env = {**os.environ, **org.env}
    env.pop("ORG_AGENT", None)
    env.pop("ORG_AGENT_PASSWORD", None)
    if password is not None:
        env["ORG_AGENT_PASSWORD"] = password
    return subprocess.run(
        [sys.executable, "-m", "cli_org", "agents", "add", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def _can_log_in(org, name: str, password: str) -> bool:
    try:
        with org.login(f"{org.name}_{name}", password) as conn:
            return conn.execute("SELECT org_me() AS me").fetchone()["me"] == name
    except psycopg.OperationalError:
        return False


def _exists(org, name: str) -> bool:
    with org.admin() as conn:
        return conn.execute("SELECT 1 FROM org_agents WHERE name = %s", (name,)).fetchone() is not None


def test_login_without_a_terminal_or_password_says_how_in_one_line(org):
    done = _add(org, "nopw", "--login")
    assert done.returncode == 1
    assert "GetPassWarning" not in done.stderr and "Password" not in done.stdout + done.stderr
    assert done.stderr.strip() == (
        "cli-org: --login needs a password and there is no terminal to ask on: set ORG_AGENT_PASSWORD, "
        "or pipe it with --password-stdin"
    )
    assert not _exists(org, "nopw")


def test_login_password_from_stdin_and_from_the_environment(org):
    secret = "s3cret pass phrase"
    done = _add(org, "piped", "--login", "--password-stdin", stdin=secret + "\n")
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout + done.stderr  # never echoed
    assert _can_log_in(org, "piped", secret)
    done = _add(org, "crlf", "--password-stdin", stdin="windows-pw\r\n")  # --password-stdin implies --login
    assert done.returncode == 0, done.stderr
    assert _can_log_in(org, "crlf", "windows-pw")
    done = _add(org, "envpw", "--login", password="from-env-pw")
    assert done.returncode == 0, done.stderr
    assert "from-env-pw" not in done.stdout + done.stderr and _can_log_in(org, "envpw", "from-env-pw")


@pytest.mark.parametrize(
    ("stdin", "password", "said"),
    [
        ("", None, "the password from stdin is empty"),
        ("\n", None, "the password from stdin is empty"),
        ("first\nsecond\n", None, "the password from stdin holds a line break; a password is one line"),
        (None, "", "the password from ORG_AGENT_PASSWORD is empty"),
        (None, "two\nlines", "the password from ORG_AGENT_PASSWORD holds a line break; a password is one line"),
    ],
    ids=["empty-stdin", "blank-line", "newline-stdin", "empty-env", "newline-env"],
)
def test_bad_passwords_are_refused_and_nothing_is_made(org, stdin, password, said):
    args = ["badpw", "--login"] + (["--password-stdin"] if stdin is not None else [])
    done = _add(org, *args, stdin=stdin, password=password)
    assert done.returncode == 1 and done.stderr.strip() == f"cli-org: {said}"
    assert "second" not in done.stderr and "two" not in done.stderr
    assert not _exists(org, "badpw")


def test_help_says_where_the_password_comes_from(cli):
    code, out, _ = cli("agents", "add", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "ORG_AGENT_PASSWORD" in flat and "--password-stdin" in flat and "never an argument" in flat


def test_login_on_a_terminal_still_prompts_without_echo(org):
    """On a terminal (a pseudo-terminal here) the hidden prompt still asks twice."""
    import pty
    import select
    import time

    env = {**os.environ, **org.env}
    env.pop("ORG_AGENT", None)
    env.pop("ORG_AGENT_PASSWORD", None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the pseudo-terminal is its controlling terminal
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "cli_org", "agents", "add", "ttyuser", "--login"], env)
    seen = b""
    deadline = time.monotonic() + 120
    answered = 0
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        prompts = (b"Password:" in seen) + (b"Repeat for confirmation:" in seen)
        if prompts > answered:  # each prompt answered once
            answered += 1
            os.write(fd, b"tty-secret\n")
    _, status = os.waitpid(pid, 0)
    text = seen.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "added bot ttyuser" in text and "tty-secret" not in text and "GetPassWarning" not in text
    assert _can_log_in(org, "ttyuser", "tty-secret")
