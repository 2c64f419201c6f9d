"""What reaches the model, before and after a change, in one sitting: on the TIL database that
`recall_eval` loads (the 1,871-note vault, the sample's facts and memory files, the invented
team's facts), for each half of each set, through `recall` itself (`--limit 8`, agent `mara`)
and the Claude Code prompt hook's own library call:

- TIL golden and fact golden: hit@8, MRR, precision@1 and @3 (the share of the hits shown
  among the first 1 or 3 that hold the expected text; an answer cut to one hit that is right
  has precision@3 1.0), median characters of an answer;
- noise (answered) and near-topic (mean hits);
- the hook sets: quiet rate (`hook-quiet`, no injection) and needed-fact rate (`hook-needed`,
  the injection holds the fact), median characters of an injection.

    python -m benchmarks.precise                        # this checkout
    python -m benchmarks.precise --before 23aa447       # and the code of that commit, interleaved

`--before REV` exports REV's `cli_org` (git archive) under $BENCH_WORK and runs the same
measurement with it in a child process, set by set, so both see the same machine. The
databases must be loaded (`python -m benchmarks.recall_eval --quick`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
EVAL = ROOT / "eval"
SETS = ("til-golden", "facts-golden", "noise", "til-noise", "til-near", "hook-quiet", "hook-needed")
HALVES = ("tune", "test")
AGENT = "mara"


def _lines(path: Path) -> list[list[str]]:
    rows = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            rows.append([part.strip() for part in line.split("|")])
    return rows


def _precision(lines: list[str], expected: str, k: int) -> float:
    shown = lines[:k]
    return sum(1 for line in shown if expected.lower() in line.lower()) / len(shown) if shown else 0.0


def measure(which: str, name: str) -> dict:
    """One half of one set, with whatever `cli_org` is first on the path (the worker side:
    only library calls that both the code before and after a change have)."""
    import dataclasses

    from cli_org.config import Settings
    from cli_org.db.connect import connect
    from cli_org.evaluation import load_golden, parse_queries
    from cli_org.evaluation.golden import first_position
    from cli_org.recall.answer import recall
    from cli_org.session.hooks import HookInput, claude_code_hook
    from cli_org.vault.embedders import query_embedder

    env = dict(os.environ)
    env.setdefault("CLI_ORG_DATA_DIR", str(_work() / "data"))
    env["CLI_ORG_DATABASE"] = "bench_til"
    settings = dataclasses.replace(Settings.from_env(env), root=str(EVAL / "sample"))
    embedder, _ = query_embedder(settings)
    path = EVAL / f"{name}.{which}.txt"
    if not path.exists():
        return {"missing": str(path.relative_to(ROOT))}
    rows = _lines(path)  # hook sets: the code before them has no parser of its own
    out: dict = {"cases": len(rows)}
    with connect(settings, AGENT) as conn:
        if name.startswith("hook-"):
            texts = []
            for row in rows:
                prompt = row[0]
                hook = HookInput("UserPromptSubmit", None, prompt, None)  # no project: every fact in scope
                raw = claude_code_hook(conn, "prompt", hook, settings=settings, embedder=embedder)
                text = json.loads(raw)["hookSpecificOutput"]["additionalContext"] if raw else ""
                conn.rollback()
                texts.append((row, text))
            given = [t for _, t in texts if t]
            out["injected"] = len(given)
            out["median_chars"] = statistics.median(len(t) for t in given) if given else 0
            if name == "hook-quiet":
                out["quiet_rate"] = round(sum(1 for _, t in texts if not t) / len(texts), 3)
                out["spoke_on"] = [r[0] for r, t in texts if t][:12]
            else:
                found = [bool(t) and r[1].lower() in t.lower() for r, t in texts]
                out["needed_rate"] = round(sum(found) / len(found), 3)
                out["missed"] = [r[0] for (r, _), ok in zip(texts, found, strict=True) if not ok][:12]
            return out
        if name.endswith("golden"):
            cases = [(c.question, c.expected, c.tag) for c in load_golden(path)]
        else:
            cases = [(q, "", "") for q in parse_queries(path.read_text())]
        answers = []
        for question, expected, tag in cases:
            result = recall(conn, question, settings=settings, limit=8, embedder=embedder, log=False)
            answers.append((question, expected, tag, [h.text for h in result.hits], result.chars))
        if name.endswith("golden"):
            pos = [first_position(lines, expected) for _, expected, _, lines, _ in answers]
            n = len(pos)
            out.update(
                hit8=round(sum(1 for p in pos if p) / n, 3),
                mrr=round(sum(1 / p for p in pos if p) / n, 3),
                p1=round(sum(_precision(a[3], a[1], 1) for a in answers) / n, 3),
                p3=round(sum(_precision(a[3], a[1], 3) for a in answers) / n, 3),
                median_chars=statistics.median(a[4] for a in answers),
                median_hits=statistics.median(len(a[3]) for a in answers),
            )
            para = [p for a, p in zip(answers, pos, strict=True) if a[2] == "paraphrase"]
            if para:
                out["paraphrase_hit8"] = round(sum(1 for p in para if p) / len(para), 3)
            out["misses"] = [a[0] for a, p in zip(answers, pos, strict=True) if not p][:12]
        else:
            out.update(
                answered=sum(1 for a in answers if a[3]),
                mean_hits=round(statistics.mean(len(a[3]) for a in answers), 3),
            )
    return out


def _work() -> Path:
    return Path(os.environ.get("BENCH_WORK") or Path(tempfile.gettempdir()) / "cli-org-bench")


def export(rev: str) -> Path:
    """REV's `cli_org` package, exported once under $BENCH_WORK/code-REV."""
    target = _work() / f"code-{rev}"
    if not (target / "cli_org").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "cli_org"], check=True, capture_output=True
        ).stdout
        with tempfile.TemporaryFile() as f:
            f.write(archive)
            f.seek(0)
            with tarfile.open(fileobj=f) as tar:
                tar.extractall(target, filter="data")
    return target


def run_with(code: Path, which: str, name: str) -> dict:
    """`measure` in a child whose `cli_org` is the one under `code`."""
    script = (
        "import importlib.util, json, sys\n"
        f"sys.path.insert(0, {str(code)!r})\n"
        f"spec = importlib.util.spec_from_file_location('precise_worker', {str(HERE)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        f"print(json.dumps(m.measure({which!r}, {name!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, cwd=str(code))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also measure the code of this commit")
    parser.add_argument("--half", choices=HALVES, action="append", help="one half only (repeatable)")
    parser.add_argument("--sets", help=f"comma-separated, of {', '.join(SETS)}")
    args = parser.parse_args()
    codes = {"after": ROOT}
    if args.before:
        codes = {"before": export(args.before), **codes}
    for which in args.half or HALVES:
        for name in args.sets.split(",") if args.sets else SETS:
            row = {"half": which, "set": name}
            for label, code in codes.items():
                row[label] = run_with(code, which, name)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
