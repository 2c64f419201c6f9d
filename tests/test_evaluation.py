"""Golden-set runner, saved runs and comparison, noise, context cost and stale memory."""

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest

from cli_org.db.connect import connect
from cli_org.errors import InputError, ThresholdNotMet
from cli_org.evaluation import (
    CaseResult,
    GoldenRun,
    compare,
    context_cost,
    figures,
    load_run,
    parse_golden,
    parse_hook_cases,
    require_hook_rates,
    run_golden,
    run_hook,
    save_run,
)
from cli_org.evaluation import stale as find_stale
from cli_org.evaluation.stale import cited_paths
from cli_org.store import facts
from cli_org.vault.scan import scan


def test_parse_good_file_comments_unicode():
    cases = parse_golden("# header\n\nwhere is the café?|café.md|vault\n  how many 🚀 | rockets  \n")
    assert [(c.question, c.expected, c.tag, c.line) for c in cases] == [
        ("where is the café?", "café.md", "vault", 3),
        ("how many 🚀", "rockets", "-", 4),
    ]


def test_parse_refuses_malformed_lines_naming_them():
    with pytest.raises(InputError) as info:
        parse_golden("ok|fine\nno separator here\na|b|c|d\n|empty question\nq|\n", "g.txt")
    msg = str(info.value)
    assert msg.startswith("g.txt: ") and "line 2" in msg and "line 3" in msg and "line 4" in msg and "line 5" in msg
    with pytest.raises(InputError, match="no cases"):
        parse_golden("# only a comment\n")


@pytest.fixture
def sample(org, tmp_path):
    """A tiny vault where first-hit positions are known exactly."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "kilo-many.md").write_text("# Kilo\n\nkilo kilo kilo lima\n")
    (vault / "kilo-once.md").write_text("# Other\n\nkilo lima mike november oscar papa\n")
    (vault / "zulu.md").write_text("# Zulu\n\nzulu yankee\n")
    root = tmp_path / "root"
    (root / ".agents/org/memory").mkdir(parents=True)
    settings = dataclasses.replace(org.settings, root=str(root))
    with connect(settings) as conn:
        scan(conn, vault)
    return settings, root


GOLDEN = "kilo lima|kilo-many.md|first\nkilo lima|kilo-once.md|second\nzulu yankee|zulu.md|first\nkilo|absent.md|miss\n"


@pytest.mark.slow
def test_scoring_positions_are_exact(sample):
    settings, _ = sample
    with connect(settings) as conn:
        run = run_golden(conn, parse_golden(GOLDEN), settings=settings, limit=8)
        logged = conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"]
    assert [c.position for c in run.cases] == [1, 2, 1, None]
    assert run.overall.hit_rate == 0.75 and run.overall.mrr == pytest.approx((1 + 0.5 + 1) / 4)
    assert run.by_tag["first"].hit_rate == 1.0 and run.by_tag["miss"].hit_rate == 0.0
    assert run.by_tag["second"].mrr == 0.5
    assert all(c.chars > 0 for c in run.cases)
    assert logged == 0  # evaluation never counts as usage


def _run(positions, chars):
    cases = [CaseResult(f"q{i}", "x", "-", p, c, 10.0) for i, (p, c) in enumerate(zip(positions, chars, strict=True))]
    return GoldenRun(8, figures(cases), {}, cases)


@pytest.mark.slow
def test_compare_two_hand_made_runs(org):
    with connect(org.settings) as conn:
        save_run(conn, "before", _run([1, None, 2, 1], [2000, 2100, 1900, 2000]), golden_file="g", project=None)
        save_run(conn, "after", _run([1, 1, None, 1], [1500, 1600, 1400, 1500]), golden_file="g", project=None)
        save_run(conn, "better", _run([1, 1, 2, 1], [1500, 1600, 1400, 1500]), golden_file="g", project=None)
        with pytest.raises(InputError, match="exists already"):
            save_run(conn, "before", _run([1], [1]), golden_file="g", project=None)
        a, b, c = (load_run(conn, n) for n in ("before", "after", "better"))
    result = compare(a, b)
    rows = {r.metric: r for r in result.rows}
    assert rows["hit@k"].delta == 0 and rows["chars median"].delta == -500
    assert result.now_hit == ["q1"] and result.now_miss == ["q2"]
    assert result.verdict == "a clear win: hit@8 held at 0.750; median characters fell from 2,000 to 1,500 (-500)"
    win = compare(a, c)
    assert win.rows[0].change == "better" and win.verdict.startswith("a clear win: hit@8 rose")
    assert compare(c, a).verdict.startswith("a regression: hit@8 fell from 1.000 to 0.750 (-0.250)")


@pytest.mark.slow
def test_cli_golden_save_compare_history(cli, sample, tmp_path, monkeypatch):
    settings, root = sample
    monkeypatch.setenv("ORG_ROOT", str(root))
    golden = tmp_path / "g.txt"
    golden.write_text(GOLDEN)
    code, out, _ = cli("eval", "golden", str(golden), "--save", "r1")
    assert code == 0 and "MISS" in out and "hit@8 0.750" in out and "saved as r1" in out
    code, out, err = cli("eval", "golden", str(golden), "--min-hit", "0.9")
    assert code == 1 and "below --min-hit 0.9" in err
    assert cli("eval", "golden", str(golden), "--min-hit", "0.7")[0] == 0
    data = json.loads(cli("eval", "golden", str(golden), "--json", "--save", "r2")[1])
    assert data["overall"]["hit_rate"] == 0.75 and [c["position"] for c in data["cases"]] == [1, 2, 1, None]
    code, out, _ = cli("eval", "compare", "r1", "r2")
    assert code == 0 and "hit@k" in out and "no change: hit@8 held at 0.750; median characters held at" in out
    assert cli("eval", "compare", "r1", "nope")[0] == 1
    code, out, _ = cli("eval", "history")
    assert code == 0 and "r1" in out and "r2" in out and "hit@8 0.750" in out
    assert [r["name"] for r in json.loads(cli("eval", "history", "--json")[1])] == ["r1", "r2"]
    bad = tmp_path / "bad.txt"
    bad.write_text("fine|x\nbroken line\n")
    code, out, err = cli("eval", "golden", str(bad))
    assert code == 1 and "line 2" in err and out == ""


@pytest.mark.slow
def test_history_png(cli, sample, tmp_path):
    pytest.importorskip("matplotlib")
    golden = tmp_path / "g.txt"
    golden.write_text(GOLDEN)
    cli("eval", "golden", str(golden), "--save", "p1")
    png = tmp_path / "h.png"
    code, out, _ = cli("eval", "history", "--png", str(png))
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_noise_fails_and_passes(cli, sample, tmp_path, monkeypatch):
    monkeypatch.setenv("ORG_ROOT", str(sample[1]))
    quiet = tmp_path / "quiet.txt"
    quiet.write_text("# must find nothing\nqqzx vvwy\nflorp glarb\n")
    code, out, _ = cli("eval", "noise", str(quiet))
    assert code == 0 and "2 of 2 queries found nothing" in out
    loud = tmp_path / "loud.txt"
    loud.write_text("qqzx vvwy\nzulu yankee\n")
    code, out, _ = cli("eval", "noise", str(loud))
    assert code == 1 and "FAIL" in out and "zulu yankee" in out
    data = json.loads(cli("eval", "noise", str(loud), "--json")[1])
    assert data["failed"] == 1 and data["queries"][1]["hits"] >= 1 and data["queries"][1]["chars"] > 20


def _tree(root: Path) -> None:
    (root / ".agents/org/memory").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src/app.py").write_text("print('hi')\n")
    (root / "docs").mkdir()
    (root / "docs/notes.md").write_text("notes\n")
    (root / "AGENTS.md").write_text("rule one\n" + "x" * 250 + "\n")
    (root / "src/AGENTS.md").write_text("scoped rule\n")
    (root / "CLAUDE.md").write_text("see AGENTS.md\n")
    (root / "mem").mkdir()
    (root / "mem/MEMORY.md").write_text("- [a](a.md) pointer\n" + "y" * 300 + "\n")
    (root / ".agents/org/memory/bot.md").write_text(
        "- entry point is `src/app.py`\n- old helper lived in `src/old_helper.py`\n- run `make test` often\n"
        "- notes in `notes.md` and `docs/gone.md`\n"
    )
    (root / "node_modules/pkg").mkdir(parents=True)
    (root / "node_modules/pkg/AGENTS.md").write_text("vendored, not ours\n")


def test_context_cost(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-harness"))
    _tree(tmp_path)
    rows = {r.kind: r for r in context_cost(tmp_path)}
    standing = rows["standing instructions"]
    assert standing.files == 3 and standing.long_lines == 1
    assert standing.chars == len("rule one\n" + "x" * 250 + "\n") + len("scoped rule\n") + len("see AGENTS.md\n")
    assert standing.tokens_estimate == round(standing.chars / 4)
    assert rows["harness memory index"].files == 1 and rows["harness memory index"].long_lines == 1
    assert rows["bot memory files"].files == 1


def _own_memory(root: Path) -> Path:
    from cli_org.archive.homes import claude_project_memory

    path = claude_project_memory(root)
    assert path is not None
    return path


def test_the_harness_memory_folder_is_named_as_the_real_sessions_show(corpora):
    # Sessions in the corpus name their own project folder (~/.claude/projects/<name>/);
    # the name derived from each session's cwd must be that one.
    checked = 0
    for session in sorted(corpora("transcripts").glob("claude-code/*.jsonl")):
        text = session.read_text(errors="replace")
        cwd = next((json.loads(line).get("cwd") for line in text.splitlines() if '"cwd"' in line), None)
        if cwd and ".claude/projects/-" in text:
            assert f".claude/projects/{_own_memory(Path(cwd)).parent.parent.name}/" in text
            checked += 1
    assert checked >= 2
    assert _own_memory(Path("/w/my_app.v2")).parent.parent.name == "-w-my-app-v2"


def test_cost_counts_the_harness_memory_index_kept_in_the_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    root = tmp_path / "my_project.git"
    _tree(root)
    own = _own_memory(root)
    own.parent.mkdir(parents=True)
    own.write_text("- [deploys](deploys.md) how we ship\n" + "z" * 250 + "\n")
    index = {r.kind: r for r in context_cost(root)}["harness memory index"]
    assert index.files == 2 and index.paths == ["mem/MEMORY.md", str(own)]
    assert index.long_lines == 2 and index.chars == len("- [a](a.md) pointer\n" + "y" * 300 + "\n") + own.stat().st_size


def test_cost_reads_no_symlink_or_special_file_as_the_harness_memory_index(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    root = tmp_path / "project"
    _tree(root)
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n" * 40)
    own = _own_memory(root)
    own.parent.mkdir(parents=True)

    def index() -> list[str]:
        return {r.kind: r for r in context_cost(root)}["harness memory index"].paths

    own.symlink_to(secret)  # the file a symlink
    assert index() == ["mem/MEMORY.md"]
    own.unlink()
    os.mkfifo(own)  # a FIFO: reading it would hang
    assert index() == ["mem/MEMORY.md"]
    own.unlink()
    own.parent.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "MEMORY.md").write_text("not this project's\n")
    own.parent.symlink_to(elsewhere)  # the memory folder a symlink
    assert index() == ["mem/MEMORY.md"]


@pytest.mark.slow
def test_stale_paths_and_fact_sources(org, tmp_path):
    _tree(tmp_path)
    with org.as_agent("bot") as conn:
        changed = facts.remember(conn, "app", "Entry point is `src/app.py`", source="src/app.py").id
        gone = facts.remember(conn, "helper", "Helper in `src/old_helper.py`", source="src/old_helper.py").id
        fine = facts.remember(conn, "docs", "Notes live in docs", source="docs/notes.md").id
    # The source file changes after the fact was written.
    time.sleep(0.05)
    (tmp_path / "src/app.py").write_text("print('changed')\n")
    os.utime(tmp_path / "docs/notes.md", (1, 1))
    with connect(org.settings) as conn:
        items = find_stale(conn, tmp_path).items
    found = {(i.where, i.cited, i.problem) for i in items}
    assert found == {
        (".agents/org/memory/bot.md:2", "src/old_helper.py", "missing"),
        (".agents/org/memory/bot.md:4", "docs/gone.md", "missing"),
        (f"fact #{gone}", "src/old_helper.py", "missing"),
        (f"fact #{gone}", "src/old_helper.py", "source missing"),
        (f"fact #{changed}", "src/app.py", "source changed after the fact was written"),
    }
    assert not any(f"#{fine}" in i.where for i in items)
    assert (tmp_path / "src/app.py").exists()  # nothing is deleted


def test_cited_paths_without_an_extension_and_build_files_not_bare_words():
    # The sample's own memory cites `docker/courier.Dockerfile`; extensionless scripts too.
    line = (
        "- built from `docker/app.Dockerfile` by `scripts/deploy` (see `./tools/run` and `Makefile`);"
        " the `deploy` job, `flaky-watch`, `make`, `/healthz`, `/v2/jobs`, `24/7`, Node `20.11`, `1.2.3`"
    )
    assert cited_paths(line) == ["docker/app.Dockerfile", "scripts/deploy", "./tools/run", "Makefile"]
    assert cited_paths("run `deploy` then `build-and-push` with `--platform` and `TZ=UTC`") == []
    sample = Path(__file__).parent.parent / "eval/sample/.agents/org/memory/builder.md"
    assert "docker/courier.Dockerfile" in cited_paths(sample.read_text())


def test_stale_reports_a_gone_extensionless_script_and_dockerfile(tmp_path):
    (tmp_path / ".agents/org/memory").mkdir(parents=True)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/deploy").write_text("#!/bin/sh\n")
    (tmp_path / "Makefile").write_text("all:\n")
    (tmp_path / ".agents/org/memory/bot.md").write_text(
        "- deploy with `scripts/deploy`, not `scripts/release`\n- images from `docker/app.Dockerfile`\n"
        "- `Makefile` and the `deploy` job\n"
    )
    found = {(i.where, i.cited) for i in find_stale(None, tmp_path).items}
    assert found == {
        (".agents/org/memory/bot.md:1", "scripts/release"),
        (".agents/org/memory/bot.md:2", "docker/app.Dockerfile"),
    }


@pytest.mark.slow
def test_cli_cost_and_stale(cli, tmp_path):
    _tree(tmp_path)
    code, out, _ = cli("eval", "cost", "--root", str(tmp_path))
    assert code == 0 and "standing instructions" in out and "estimates" in out
    data = json.loads(cli("eval", "cost", "--root", str(tmp_path), "--json")[1])
    assert data["chars_per_token"] == 4 and data["rows"][0]["files"] == 3
    code, out, _ = cli("eval", "stale", "--root", str(tmp_path))
    assert code == 0 and "`src/old_helper.py` missing" in out and "2 item(s)" in out


def _saved(name: str, hit_rate: float, chars_median: float, k: int = 8):
    from datetime import UTC, datetime

    from cli_org.evaluation import Figures, SavedRun

    overall = Figures(4, hit_rate, hit_rate, chars_median, chars_median, 10.0, 12.0)
    return SavedRun(name, None, datetime.now(UTC), None, None, None, k, overall, [])


HIT = {"rose": (0.5, 0.75), "fell": (0.75, 0.5), "held": (0.5, 0.5)}
CHARS = {"rose": (1000, 1500), "fell": (1500, 1000), "held": (1000, 1000)}
JUDGEMENT = {
    ("rose", "fell"): "a clear win",
    ("rose", "held"): "a clear win",
    ("rose", "rose"): "a trade-off",
    ("held", "fell"): "a clear win",
    ("held", "held"): "no change",
    ("held", "rose"): "a regression",
    ("fell", "fell"): "a regression",
    ("fell", "held"): "a regression",
    ("fell", "rose"): "a regression",
}
SAID = {
    "rose": "{name} rose from {a} to {b} ({d})",
    "fell": "{name} fell from {a} to {b} ({d})",
    "held": "{name} held at {b}",
}


@pytest.mark.parametrize("hit", ["rose", "fell", "held"])
@pytest.mark.parametrize("chars", ["rose", "fell", "held"])
def test_compare_verdict_says_what_changed(hit, chars):
    (ha, hb), (ca, cb) = HIT[hit], CHARS[chars]
    result = compare(_saved("a", ha, ca), _saved("b", hb, cb))
    said_hit = SAID[hit].format(name="hit@8", a=f"{ha:.3f}", b=f"{hb:.3f}", d=f"{hb - ha:+.3f}")
    said_chars = SAID[chars].format(name="median characters", a=f"{ca:,}", b=f"{cb:,}", d=f"{cb - ca:+,}")
    assert result.verdict == f"{JUDGEMENT[hit, chars]}: {said_hit}; {said_chars}"


@pytest.mark.parametrize("hit", ["rose", "fell", "held"])
def test_compare_of_runs_with_a_different_k_judges_nothing(hit):
    (ha, hb), (ca, cb) = HIT[hit], CHARS["rose"]
    result = compare(_saved("a", ha, ca, k=3), _saved("b", hb, cb, k=8))
    assert result.verdict.startswith("not comparable: hit@k ") and "k=3 for a, k=8 for b" in result.warnings[0]
    changes = {row.metric: row.change for row in result.rows}
    assert {changes[m] for m in ("hit@k", "MRR", "chars median", "chars p95")} == {"not comparable"}
    assert changes["ms median"] == "same"  # the time per recall does not depend on k


def test_cli_compare_columns_are_as_wide_as_the_run_names(org, cli):
    with connect(org.settings) as conn:
        save_run(conn, "baseline-before-x", _run([1, None], [2000, 2000]), golden_file="g", project=None)
        save_run(conn, "candidate-after-y", _run([1, 1], [1500, 1500]), golden_file="g", project=None)
    code, out, _ = cli("eval", "compare", "baseline-before-x", "candidate-after-y")
    assert code == 0
    header, first = out.splitlines()[:2]
    assert header.split() == ["baseline-before-x", "candidate-after-y", "delta"]
    # each value ends where its run's name ends
    assert header.index("baseline-before-x") + len("baseline-before-x") == first.index("0.500") + len("0.500")
    assert header.index("candidate-after-y") + len("candidate-after-y") == first.index("1.000") + len("1.000")


def test_compare_held_means_held_at_the_precision_shown():
    result = compare(_saved("a", 0.5, 1000.0), _saved("b", 0.5, 1000.4))
    assert result.chars == "held" and result.rows[2].change == "same" and "held at 1,000" in result.verdict


@pytest.mark.slow
def test_cli_compare_formats_per_metric_and_warns_on_different_k(org, cli):
    slow = _run([1, None, 2, 1], [2000, 2171, 1900, 2000])
    fast = _run([1, 1, None, 1], [1500, 1500, 1329, 1500])
    fast.k = 5
    with connect(org.settings) as conn:
        save_run(conn, "slow", slow, golden_file="g", project=None)
        save_run(conn, "fast", fast, golden_file="g", project=None)
    code, out, err = cli("eval", "compare", "slow", "fast")
    assert code == 0
    lines = {line.split("  ")[0]: line.split() for line in out.splitlines()}
    # hit@k and characters depend on k: between k=8 and k=5 neither row nor verdict judges.
    assert lines["hit@k"][-5:] == ["0.750", "0.750", "+0.000", "not", "comparable"]
    assert lines["chars median"][-5:] == ["2,000", "1,500", "-500", "not", "comparable"]
    assert lines["ms median"][-2:] == ["+0", "same"]
    verdict = out.splitlines()[-1]
    assert verdict.startswith("not comparable: hit@k held at 0.750; median characters fell")
    assert not any(word in out for word in ("regression", "clear win", "trade-off", "better", "worse"))
    assert ".000" not in out.split("chars median")[1].split("miss -> hit")[0]
    assert "different --limit (k=8 for slow, k=5 for fast)" in err and err.startswith("warning: ")
    data = json.loads(cli("eval", "compare", "slow", "fast", "--json")[1])
    assert data["k_a"] == 8 and data["k_b"] == 5 and "different --limit" in data["warnings"][0]
    assert data["hit"] == "held" and data["chars"] == "fell" and data["rows"][2]["unit"] == "chars"
    code, out, err = cli("eval", "compare", "slow", "slow")
    assert code == 0 and err == ""


@pytest.mark.slow
def test_golden_table_has_a_header_and_noise_says_characters(cli, sample, tmp_path, monkeypatch):
    monkeypatch.setenv("ORG_ROOT", str(sample[1]))
    golden = tmp_path / "g.txt"
    golden.write_text(GOLDEN)
    out = cli("eval", "golden", str(golden))[1].splitlines()
    assert out[0].split() == ["#", "pos", "chars", "ms", "tag", "question"]
    assert out[1].split()[:2] == ["1", "1"] and out[4].split()[:2] == ["4", "MISS"]
    loud = tmp_path / "loud.txt"
    loud.write_text("zulu yankee\n")
    code, out, _ = cli("eval", "noise", str(loud))
    assert "chars" in out and "bytes" not in out
    assert "bytes" not in cli("eval", "noise", "--help")[1]


@pytest.mark.slow
def test_threshold_failures_are_an_error_type(cli, sample, tmp_path, monkeypatch):
    from cli_org.errors import OrgError, ThresholdNotMet
    from cli_org.evaluation import require_hit_rate, require_quiet, run_noise

    settings, root = sample
    monkeypatch.setenv("ORG_ROOT", str(root))
    assert issubclass(ThresholdNotMet, OrgError) and ThresholdNotMet.exit_code == 1
    run = _run([1, None], [10, 10])
    require_hit_rate(run, 0.5)
    with pytest.raises(ThresholdNotMet, match=r"hit@8 0\.500 is below --min-hit 0\.6"):
        require_hit_rate(run, 0.6)
    with connect(settings) as conn:
        noisy = run_noise(conn, ["qqzx vvwy", "zulu yankee"], settings=settings)
    assert (noisy.passed, noisy.failed) == (1, 1)
    with pytest.raises(ThresholdNotMet, match="1 of 2 noise queries found something"):
        require_quiet(noisy)
    loud = tmp_path / "loud.txt"
    loud.write_text("zulu yankee\n")
    code, out, err = cli("eval", "noise", str(loud), "--json")
    assert code == 1 and json.loads(out)["failed"] == 1
    assert json.loads(err) == {"error": "1 of 1 noise queries found something"}


# --- the prompt hook's sets: quiet and needed cases --------------------------------------


def test_parse_hook_cases_quiet_needed_and_refusals():
    cases = parse_hook_cases("# header\nrun the tests\nrename it||words\ndeploy it|at night|paraphrase\nship|night\n")
    assert [(c.prompt, c.expected, c.tag, c.line) for c in cases] == [
        ("run the tests", None, "-", 2),
        ("rename it", None, "words", 3),
        ("deploy it", "at night", "paraphrase", 4),
        ("ship", "night", "-", 5),
    ]
    with pytest.raises(InputError) as info:
        parse_hook_cases("fine\na|b|c|d\n|no prompt\nwhen do deploys run|deploys\nok\x00\n", "h.txt")
    msg = str(info.value)
    assert msg.startswith("h.txt: ") and all(f"line {n}" in msg for n in (2, 3, 4, 5)) and "line 1" not in msg
    assert "the expected phrase is part of the prompt" in msg
    with pytest.raises(InputError, match="no cases"):
        parse_hook_cases("# only a comment\n\n")


# Without a query model (these tests have none) the prompt hook passes only a fact holding
# every word of the prompt (HookShaping).
FLAKY = "is the payments e2e test flaky?"


@pytest.fixture
def flaky_fact(org):
    """One fact a prompt about the payments e2e test needs (as tests/test_hooks.py uses it)."""
    with org.as_agent("other") as conn:
        facts.remember(conn, "flaky", "The payments e2e test is flaky on Fridays", source="ci/log.txt")
    return org


@pytest.mark.slow
def test_hook_run_scores_quiet_and_needed_cases(flaky_fact):
    org = flaky_fact
    cases = parse_hook_cases(
        f"zebra quasar nebula\n{FLAKY}\n{FLAKY}|flaky on Fridays|words\n{FLAKY}|a phrase no fact holds|words\n"
    )
    with org.as_agent("bot") as conn:
        logged = conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"]
        conn.rollback()
        run = run_hook(conn, cases, settings=org.settings)
        # An evaluation is no use of the memory: its recalls stay out of the usage log.
        assert conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"] == logged
    quiet, loud, found, missed = run.cases
    assert quiet.injected == "" and quiet.found is None
    # Each prompt stands alone (no session): the same hit comes to every one of the three.
    assert all("flaky on Fridays" in r.injected for r in (loud, found, missed))
    assert (found.found, missed.found) == (True, False)
    o = run.overall
    assert (o.quiet_n, o.quiet_rate) == (2, 0.5)  # the quiet prompt that got an injection lowers it
    assert (o.needed_n, o.needed_rate) == (2, 0.5)
    assert o.injections == 3 and o.chars_median == len(loud.injected)
    assert run.by_tag == {}  # one tag only
    require_hook_rates(run, 0.5, 0.5)
    with pytest.raises(ThresholdNotMet, match=r"quiet rate 0\.500 is below --min-quiet 0\.6.*needed-fact rate"):
        require_hook_rates(run, 0.6, 0.75)


@pytest.mark.slow
def test_cli_hook_reports_gates_and_refuses_bad_input(flaky_fact, cli, tmp_path):
    quiet, needed = tmp_path / "quiet.txt", tmp_path / "needed.txt"
    quiet.write_text(f"# must add nothing\nzebra quasar nebula\n{FLAKY}\n")
    needed.write_text(f"{FLAKY}|flaky on Fridays|words\n{FLAKY}|no fact says this|paraphrase\n")
    code, out, err = cli("eval", "hook", str(quiet), str(needed), agent="bot")
    lines = out.splitlines()
    assert code == 0 and err == "" and lines[0].split() == ["#", "result", "chars", "ms", "tag", "prompt"]
    assert lines[1].split()[:2] == ["1", "QUIET"] and lines[2].split()[:2] == ["2", "ADDED"]
    assert "flaky on Fridays" in out.split(lines[2], 1)[1].split("\n  3 ", 1)[0]  # what it got, under it
    assert "quiet 0.500 (n=2)  needed 0.500 (n=2)" in out and "words        needed 1.000" in out
    data = json.loads(cli("eval", "hook", str(quiet), str(needed), "--json", agent="bot")[1])
    assert data["overall"]["quiet_rate"] == 0.5 and [c["found"] for c in data["cases"]] == [None, None, True, False]
    assert data["by_tag"] == {"paraphrase": 0.0, "words": 1.0}
    # The gates: at the rate passes, above it exits 1 after the whole report.
    assert (
        cli("eval", "hook", str(quiet), str(needed), "--min-quiet", "0.5", "--min-needed", "0.5", agent="bot")[0] == 0
    )
    code, out, err = cli("eval", "hook", str(quiet), "--min-quiet", "0.9", agent="bot")
    assert code == 1 and "quiet 0.500" in out and err.strip() == "cli-org: quiet rate 0.500 is below --min-quiet 0.9"
    code, _, err = cli("eval", "hook", str(needed), "--min-needed", "0.9", agent="bot")
    assert code == 1 and err.strip() == "cli-org: needed-fact rate 0.500 is below --min-needed 0.9"
    code, _, err = cli("eval", "hook", str(quiet), "--min-needed", "0.5", agent="bot")
    assert code == 1 and err.strip() == "cli-org: --min-needed given, but no case measures the needed-fact rate"
    # Bad input: one line on stderr, nothing run.
    bad = tmp_path / "bad.txt"
    bad.write_text("fine\nprompt|phrase|tag|extra\n")
    code, out, err = cli("eval", "hook", str(quiet), str(bad), agent="bot")
    assert code == 1 and out == "" and len(err.splitlines()) == 1 and "bad.txt: line 2" in err
    code, out, err = cli("eval", "hook", str(tmp_path / "missing.txt"), agent="bot")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "missing.txt" in err


@pytest.mark.slow
@pytest.mark.attack("files")
def test_stale_looks_at_nothing_outside_the_checkout(org, tmp_path):
    """A fact's source up `..` or through a symlink out of the root is not judged: stale
    neither reports it missing nor tells whether the file outside changed."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    with org.as_agent("bot") as conn:
        facts.remember(conn, "up", "Outside file", source="../outside/new.md")
        facts.remember(conn, "via link", "Linked file", source="link/new.md")
        facts.remember(conn, "gone via link", "Linked and gone", source="link/gone.md")
    time.sleep(0.05)
    (outside / "new.md").write_text("written after the facts\n")
    with connect(org.settings) as conn:
        assert find_stale(conn, root).items == []
