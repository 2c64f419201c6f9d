"""Proposals from the archive (issue 35): what proposing costs `archive import`, how many
proposals real sessions give, and whether an accepted proposal is recalled later.

1. Cost: `cli-org archive import` of the real transcripts (../shared/corpora/transcripts:
   Claude Code, Codex, Hermes), each run a fresh process into a fresh database, with
   `--no-propose` and with proposing (the default), alternating; medians and their ratio
   (the issue's bar: proposing slows the import by at most 20 %).
2. Yield: proposals per 100 sessions of those transcripts, and of the demo's sample sessions
   (eval/sample/sessions, written with lessons in them), with the proposals listed so that a
   reader can judge them.
3. Recalled later: every proposal of the sample sessions is accepted by its agent, then each
   question of eval/proposals-recall.txt (written apart from the sessions: how a later agent
   would ask) is recalled; a question counts when the accepted fact it names (by a phrase of
   its claim) is among the answer's fact hits.

4. The Stop hook: `cli-org hook claude-code stop` as a whole cold process (no warm helper)
   on a turn of plain work and on a turn with a correction, medians and maxima.

    python -m benchmarks.proposals [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, SHARED

TRANSCRIPTS = SHARED / "transcripts"
QUESTIONS = ROOT / "eval" / "proposals-recall.txt"


def _env(database: str, data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLI_ORG_", "ORG_"))}
    return {**env, "CLI_ORG_DATA_DIR": str(data), "CLI_ORG_DATABASE": database, "HF_HUB_OFFLINE": "1",
            "CLI_ORG_WARM": "0"}  # fmt: skip


def _cli(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "cli_org", *args], env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    if check and done.returncode != 0:
        raise SystemExit(f"cli-org {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def _stores(root: Path) -> list[str]:
    """The import's options for the stores under `root`, named as the corpus names them."""
    out = []
    for flag, name in (
        ("--claude", "claude-code"),
        ("--codex", "codex"),
        ("--hermes", "hermes"),
    ):  # as the corpus names them
        if (root / name).exists():
            out += [flag, str(root / name)]
    return out


def cost(data: Path, runs: int) -> dict[str, object]:
    times: dict[str, list[float]] = {"no-propose": [], "propose": []}
    for n in range(runs):
        for mode in ("no-propose", "propose") if n % 2 == 0 else ("propose", "no-propose"):
            env = _env(f"bench_prop_{mode.replace('-', '_')}_{n}", data)
            _cli(env, "init", "--owner", "ana")
            args = ["archive", "import", *_stores(TRANSCRIPTS), "--json"]
            if mode == "no-propose":
                args.append("--no-propose")
            start = time.perf_counter()
            done = _cli(env, *args)
            times[mode].append(time.perf_counter() - start)
            if mode == "propose" and n == 0:
                report = json.loads(done.stdout)
                sessions = sum(s["sessions"] for s in report["imported"])
                listed = json.loads(_cli(env, "proposals", "--json", "--state", "all", "--limit", "500").stdout)
    base, with_proposals = statistics.median(times["no-propose"]), statistics.median(times["propose"])
    return {
        "runs": runs,
        "import_no_propose_s": round(base, 2),
        "import_propose_s": round(with_proposals, 2),
        "ratio": round(with_proposals / base, 3),
        "sessions": sessions,
        "proposals": len(listed),
        "per_100_sessions": round(100 * len(listed) / max(sessions, 1), 1),
        "listed": [f"[{p['kind']}] {p['claim']} ({p['harness']})" for p in listed],
    }


def sample(data: Path) -> dict[str, object]:
    env = _env("bench_prop_sample", data)
    _cli(env, "init", "--owner", "ana")
    for agent in ("builder", "reviewer", "ops"):
        _cli(env, "agents", "add", agent, check=False)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "sample-sessions.py"), tmp], check=True, stdout=subprocess.DEVNULL
        )
        sessions = 0
        for flag, store, agent in (
            ("--claude", "claude", "builder"),
            ("--codex", "codex", "reviewer"),
            ("--hermes", "hermes", "ops"),
        ):  # the demo's three imports
            out = _cli(env, "archive", "import", flag, str(Path(tmp) / store), "--agent", agent, "--json")
            sessions += sum(s["sessions"] for s in json.loads(out.stdout)["imported"])
    listed = json.loads(_cli(env, "proposals", "--json", "--as", "ana", "--limit", "500").stdout)
    for p in listed:  # each by its own agent, at its next session start (a vector is stored with it)
        _cli(env, "proposals", "accept", str(p["id"]), "--as", p["agent"])
    found, asked = 0, []
    for line in QUESTIONS.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        question, phrase = (part.strip() for part in line.split("|", 1))
        answer = json.loads(_cli(env, "recall", question, "--as", "builder", "--json").stdout)
        facts = [json.dumps(h).lower() for h in answer["hits"] if h["arm"] == "fact"]
        hit = any(phrase.lower() in f for f in facts)
        found += hit
        asked.append(f"{'found' if hit else 'MISSED'}: {question}")
    return {
        "sessions": sessions,
        "proposals": len(listed),
        "per_100_sessions": round(100 * len(listed) / max(sessions, 1), 1),
        "listed": [f"[{p['kind']}] {p['claim']} ({p['harness']}, {p['agent'] or 'unassigned'})" for p in listed],
        "accepted": len(listed),
        "questions": len(asked),
        "recalled": found,
        "asked": asked,
    }


def _turns(path: Path, turns: list[tuple[str, str]]) -> None:
    with path.open("w") as out:
        for n, (role, text) in enumerate(turns):
            content: object = text if role == "user" else [{"type": "text", "text": text}]
            out.write(json.dumps({"type": role, "sessionId": "s", "uuid": f"u{n}", "cwd": str(path.parent),
                                  "timestamp": f"2026-12-04T10:{n:02d}:00Z",
                                  "message": {"role": role, "content": content}}) + "\n")  # fmt: skip


def stop_hook(data: Path, runs: int) -> dict[str, object]:
    env = {**_env("bench_prop_sample", data), "CLI_ORG_WARM": "0"}
    _cli(env, "agents", "add", "bot", check=False)
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        plain, lesson = Path(tmp) / "plain.jsonl", Path(tmp) / "lesson.jsonl"
        _turns(plain, [("user", "fix the typo in the banner"), ("assistant", "Fixed.")])
        said = "no, in this repo we always use pnpm, never npm."
        _turns(lesson, [("user", "install the deps"), ("assistant", "Ran npm install."), ("user", said),
                        ("assistant", "Done.")])  # fmt: skip
        for name, path in (("plain", plain), ("lesson", lesson)):
            times, said = [], ""
            for n in range(runs):
                payload = {"session_id": f"bench-{name}-{n}", "transcript_path": str(path), "cwd": tmp,
                           "hook_event_name": "Stop", "stop_hook_active": False}  # fmt: skip
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "cli_org", "hook", "claude-code", "stop", "--as", "bot"],
                                      input=json.dumps(payload), env=env, capture_output=True, text=True)  # fmt: skip
                times.append(time.perf_counter() - start)
                said = done.stdout
            out[name] = {"p50_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
                         "blocked": '"decision": "block"' in said}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="cli-org-bench-proposals-") as tmp:
        data = Path(tmp) / "data"
        out = {"load_before": round(load, 2), "sample": sample(data), "stop_hook": stop_hook(data, 11)}
        if TRANSCRIPTS.exists():
            out["real"] = cost(data, args.runs)
        out["load_after"] = round(os.getloadavg()[0], 2)
        _cli(_env("x", data), "db", "stop", check=False)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
