"""How long must a phrase be before finding it in a session means it was quoted?

The "hits later quoted" rule (cli_org/archive/quoted.py) counts a hit as quoted when a run
of N consecutive words of it shows up later in the session. Too short a run turns up by
chance. This measures the chance rate on real data that never met: every note of a real
vault (../shared/corpora/til, the words recall would show for it: title and the start of
its body) against every message of the real agent transcripts (../shared/corpora/
transcripts: Claude Code, Codex, Hermes), which never saw that vault. Any match is chance.

    python -m benchmarks.quoted_phrase
"""

from __future__ import annotations

import re
import sys

from cli_org.archive import claude, codex, hermes
from cli_org.archive.importer import parse_line
from cli_org.archive.jsonl import batches
from cli_org.archive.quoted import MIN_CONTENT_WORDS, phrases, words
from cli_org.local.files import open_file

from .common import SHARED

SHOWN_CHARS = 300  # about what a [vault] line shows: the heading and a snippet


def transcript_texts() -> list[str]:
    root = SHARED / "transcripts"
    texts: list[str] = []
    for module, folder in ((claude, root / "claude-code"), (codex, root / "codex")):
        for path in module.files(folder):
            transcript = module.TranscriptFile(path)
            n = 0
            with open_file(path, root=folder) as (fh, st):
                lines = [line for batch in batches(fh, 0, st.st_size) for line in [*batch.lines, batch.tail]]
            for line in lines:
                n += 1
                if not line.strip():
                    continue
                try:
                    parsed = parse_line(transcript, line, n)
                except Exception:  # noqa: BLE001 - a malformed line is skipped, as the importer does
                    continue
                texts += [m.text for m in parsed.messages if m.text]
    store = hermes.read(hermes.store_path(root / "hermes" / "state.db"))
    texts += [m.text for m in store.messages if m.text]
    return texts


def note_texts() -> list[str]:
    notes = []
    for path in sorted((SHARED / "til").rglob("*.md")):
        if path.name.lower() in ("readme.md", "license.md"):
            continue
        body = path.read_text("utf-8", errors="replace")
        notes.append(re.sub(r"\s+", " ", body)[:SHOWN_CHARS])
    return notes


def main() -> None:
    if not (SHARED / "til").is_dir() or not (SHARED / "transcripts").is_dir():
        sys.exit(f"needs {SHARED}/til and {SHARED}/transcripts")
    texts = transcript_texts()
    notes = note_texts()
    total_words = sum(len(words(t)) for t in texts)
    print(
        f"{len(notes)} vault notes (first {SHOWN_CHARS} chars) against {len(texts)} transcript messages, "
        f"{total_words} words"
    )
    print("| words in a run | content words >= | notes with a chance match | share |")
    print("| --- | --- | --- | --- |")
    for n in (3, 4, 5, 6, 7, 8):
        seen: set[tuple[str, ...]] = set()
        for t in texts:
            ws = words(t)
            seen.update(tuple(ws[i : i + n]) for i in range(len(ws) - n + 1))
        for min_content in sorted({0, 2, MIN_CONTENT_WORDS}):
            matched = [note for note in notes if phrases(note, n, min_content) & seen]
            print(f"| {n} | {min_content} | {len(matched)} | {100 * len(matched) / len(notes):.2f}% |")
            if n == 5 and min_content == 2:
                for note in matched[:5]:
                    run = sorted(phrases(note, n, min_content) & seen)[0]
                    print(f"|   e.g. | | {' '.join(run)!r} | |")


if __name__ == "__main__":
    main()
