"""Measure the lesson detector (cli_org/archive/lessons.py) with the real query model.

    python -m benchmarks.lessons_eval [--data-dir DIR] [--transcripts DIR ...] [--show]

1. Precision and recall on benchmarks/lesson_data/heldout.tsv (never trained on, never used to
   pick the threshold), each line a person's message right after the agent acted; the same on
   tune.tsv (trained on: not a measure, a check that the fit is sane); with the model and with
   the rules alone.
2. Proposals per 100 sessions over real transcripts: ../shared/corpora/transcripts (Claude Code
   .jsonl, Codex rollouts, Hermes state.db), and any folder given with --transcripts (Claude
   Code or Codex .jsonl files, told apart by their lines), parsed by the archive's own parsers
   (cli_org/archive/claude.py, codex.py, hermes.py). --show prints every proposal with the file
   and message it came from, for reading by hand.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from cli_org.archive import claude, codex, hermes, lessons
from cli_org.archive.records import BadRecord, Message, load_line
from cli_org.vault.embedders import Embedder

from .lesson_train import HELD_OUT, ROOT, TUNE, load, open_embedder, precision_recall, session_of

TRANSCRIPTS = ROOT.parent / "shared" / "corpora" / "transcripts"
MAX_FILE = 64 << 20  # a transcript file read whole here (the benchmark's own inputs)


def labelled(path: Path, embedder: Embedder | None) -> None:
    rows = load(path)
    truth = np.array([r.lesson for r in rows])
    found = [lessons.lessons(session_of(r.text), embedder) for r in rows]
    predicted = np.array([bool(f) for f in found])
    p, r = precision_recall(predicted, truth)
    how = "model" if embedder is not None else "rules alone"
    print(
        f"  {path.name} ({how}): precision {p:.1%}, recall {r:.1%}"
        f"  ({int(truth.sum())} lessons, {int((~truth).sum())} plain)"
    )
    wrong = [(x, f) for x, f in zip(rows, found, strict=True) if bool(f) != x.lesson]
    kinds = [x.kind == f[0].kind for x, f in zip(rows, found, strict=True) if x.lesson and f]
    if kinds:
        print(f"    kind right for {np.mean(kinds):.0%} of the lessons found")
    for x, f in wrong:
        said = f"-> {f[0].claim!r} [{f[0].why} {f[0].score}]" if f else "(missed)"
        print(f"    {x.label:6} {x.text[:100]!r} {said}")


def _messages_jsonl(path: Path) -> list[Message]:
    data = path.read_bytes()[:MAX_FILE]
    first = next((ln for ln in data.split(b"\n") if ln.strip()), b"")
    try:
        head = json.loads(first)
    except ValueError:
        head = {}
    module: Any = (
        codex if isinstance(head, dict) and ("payload" in head or head.get("type") == "session_meta") else claude
    )
    parser = module.TranscriptFile(path)
    out: list[Message] = []
    for n, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            out.extend(parser.parse(load_line(line), n).messages)
        except (BadRecord, KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


def _sessions(messages: list[Message], where: str) -> dict[str, list[dict[str, Any]]]:
    by: dict[str, list[Message]] = defaultdict(list)
    for m in messages:
        by[f"{where}:{m.session}"].append(m)
    return {
        name: [
            {
                "source_key": m.source_key,
                "kind": m.kind,
                "text": m.text,
                "tool_name": m.tool_name,
                "command": m.command,
                "raw": m.raw,
                "tool_call_id": m.tool_call_id,
            }
            for m in sorted(ms, key=lambda m: (m.position, m.part))
        ]
        for name, ms in by.items()
    }


def real_sessions(folders: list[Path]) -> dict[str, list[dict[str, Any]]]:
    sessions: dict[str, list[dict[str, Any]]] = {}
    for folder in folders:
        if not folder.is_dir():
            print(f"  (no folder {folder})")
            continue
        for path in sorted(folder.rglob("*.jsonl")):
            sessions |= _sessions(_messages_jsonl(path), str(path.relative_to(folder)))
        for db in sorted(folder.rglob("state.db")):
            store = hermes.read(db)
            sessions |= _sessions(store.messages, str(db.relative_to(folder)))
    return sessions


def per_session(folders: list[Path], embedder: Embedder | None, show: bool) -> None:
    sessions = real_sessions(folders)
    if not sessions:
        print("  no sessions found")
        return
    total = 0
    persons = 0
    for name, rows in sorted(sessions.items()):
        turns = lessons.turns_from_rows(rows)
        persons += sum(1 for t in turns if t.kind == "user" and lessons._prose(t.text))
        found = lessons.lessons(turns, embedder)
        total += len(found)
        if show:
            for lesson in found:
                print(
                    f"    {name} {lesson.key}: {lesson.claim!r}"
                    f" [{lesson.kind}, {lesson.subject!r}, {lesson.why} {lesson.score}]"
                )
    how = "model" if embedder is not None else "rules alone"
    print(
        f"  {len(sessions)} sessions ({persons} messages of a person), {total} proposals ({how}):"
        f" {100 * total / len(sessions):.1f} per 100 sessions"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, help="where the query model is (or is made)")
    parser.add_argument("--transcripts", type=Path, action="append", default=[], help="more transcript folders")
    parser.add_argument("--show", action="store_true", help="print every proposal on the real transcripts")
    args = parser.parse_args()
    embedder = open_embedder(args.data_dir)
    print(
        f"classifier threshold {lessons.threshold():.2f} (lesson_weights.npz),"
        f" strong cues {lessons.STRONG_MARGIN} below"
    )
    print("held-out half (never trained or tuned on):")
    labelled(HELD_OUT, embedder)
    labelled(HELD_OUT, None)
    print("tuning half (trained on; not a measure):")
    labelled(TUNE, embedder)
    print("real transcripts:")
    folders = [TRANSCRIPTS, *args.transcripts]
    per_session(folders, embedder, args.show)
    per_session(folders, None, args.show)
    embedder.close()


if __name__ == "__main__":
    main()
