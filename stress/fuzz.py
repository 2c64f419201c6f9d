"""Generated hostile queries through recall and vault search, in-process: every one either
answers or raises the project's own error (OrgError); anything else is a bug.

    python -m stress.fuzz [--count 100000] [--seed 14] [--real-model]

Runs with different seeds use different databases, so several can run at once.

The queries mix random code points (lone surrogates and NUL included), the full-text
operators `& | ! <-> :* ( )`, quotes and backslashes, words that are in the data, and very
long or very wordy strings. Seeded: the same seed gives the same queries.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cli_org.errors import OrgError

OPERATORS = ["&", "|", "!", "<->", "<2>", ":*", "(", ")", "'", '"', "\\", "-", "*", ":", "!!", "&&", "||", "<", ">"]
WORDS = [
    "deploy",
    "postgres",
    "vault",
    "notes",
    "the",
    "a",
    "not",
    "or",
    "and",
    "backup",
    "port",
    "index",
    "café",
    "日本",
]
ODD = ["\ufeff", "\u200b", "\u202e", "\n", "\t", "\r", "\x7f", "\U0001f600", "\u0301", "𝔘"]


def _char(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        return chr(rng.randrange(0x20, 0x7F))
    if roll < 0.5:
        return rng.choice(ODD)
    code = rng.randrange(0, 0x110000)
    return chr(code) if not 0xD800 <= code < 0xE000 else "?"


def _spoil(rng: random.Random, text: str) -> str:
    """About one query in ten gets a lone surrogate and one in twenty a NUL, somewhere."""
    for odd, rate in ((chr(rng.randrange(0xD800, 0xE000)), 0.1), ("\x00", 0.05)):
        if rng.random() < rate:
            at = rng.randrange(0, len(text) + 1)
            text = text[:at] + odd + text[at:]
    return text


def query(rng: random.Random) -> str:
    """One generated query; about one in twenty is past the size or word limits."""
    return _spoil(rng, _shape(rng))


def _shape(rng: random.Random) -> str:
    shape = rng.random()
    if shape < 0.03:
        return _char(rng) * rng.choice([1001, 5000, 100_000])  # very long
    if shape < 0.05:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(65, 400)))  # too many words
    if shape < 0.25:
        return "".join(_char(rng) for _ in range(rng.randrange(0, 40)))
    parts = []
    for _ in range(rng.randrange(1, 12)):
        roll = rng.random()
        if roll < 0.45:
            parts.append(rng.choice(WORDS))
        elif roll < 0.8:
            parts.append(rng.choice(OPERATORS))
        else:
            parts.append("".join(_char(rng) for _ in range(rng.randrange(1, 6))))
    glue = rng.choice([" ", "", " ", "&", ":*", "'"])
    return glue.join(parts)


@dataclass
class Outcome:
    calls: int = 0
    answered: int = 0
    refused: Counter = field(default_factory=Counter)  # OrgError class name -> count
    unexpected: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def fuzz(conn, settings, count: int, seed: int, embedder=None, every: int = 0) -> Outcome:
    """Send `count` generated queries through recall (all arms) and through vault search
    (keyword and hybrid, alternating) on one connection; with `every`, a progress line on
    stderr each `every` queries."""
    from cli_org.recall.answer import recall
    from cli_org.vault.search import search

    rng = random.Random(seed)
    out = Outcome()
    started = time.perf_counter()
    for i in range(count):
        q, odd = query(rng), bool(i % 2)
        calls = (
            ("recall", lambda q=q, odd=odd: recall(conn, q, settings=settings, embedder=embedder, log=odd)),
            ("search", lambda q=q, odd=odd: search(conn, q, mode="hybrid" if odd else "keyword", embedder=embedder)),
        )
        for name, call in calls:
            out.calls += 1
            try:
                call()
                out.answered += 1
            except OrgError as exc:
                out.refused[type(exc).__name__] += 1
            except Exception as exc:  # noqa: BLE001 - every other exception is what this looks for
                out.unexpected.append(
                    {"call": name, "query": q[:200], "error": repr(exc)[:300], "trace": traceback.format_exc()[-1500:]}
                )
                if not conn.closed and conn.info.transaction_status:
                    conn.rollback()
        if every and (i + 1) % every == 0:
            print(
                json.dumps(
                    {
                        "queries": i + 1,
                        "answered": out.answered,
                        "refused": sum(out.refused.values()),
                        "unexpected": len(out.unexpected),
                        "seconds": round(time.perf_counter() - started),
                    }
                ),
                file=sys.stderr,
                flush=True,
            )
    out.seconds = time.perf_counter() - started
    return out


def seed_data(admin, conn, root: Path) -> None:
    """A few facts, notebook lines and notes whose words the generator uses (the notes
    scanned by the admin connection `admin`, the rest written as the agent of `conn`)."""
    from cli_org.store import facts, notebook
    from cli_org.vault.scan import scan

    for i, word in enumerate(WORDS[:8]):
        facts.remember(conn, word, f"The {word} note number {i} says how to deploy postgres", source="docs/fuzz.md")
    notebook.add(conn, "memory", "deploy the vault backup on port 5432")
    root.mkdir(parents=True, exist_ok=True)
    for i, word in enumerate(WORDS):
        (root / f"n{i}.md").write_text(f"# {word}\n\nHow to {word} the postgres index and the backup port.\n")
    scan(admin, root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--real-model", action="store_true", help="the real query model, not the hash embedder")
    args = parser.parse_args()
    from benchmarks.common import WORK, bench_settings
    from cli_org.db.connect import connect
    from cli_org.store.agents import add_agent

    settings = bench_settings(f"stress_fuzz_{'real' if args.real_model else 'hash'}_{args.seed}", fresh=True)
    with connect(settings) as admin:
        add_agent(admin, "fuzzer")
    embedder = None
    if args.real_model:
        from cli_org.vault.embedders import query_embedder

        embedder, notice = query_embedder(settings)
        if embedder is None:
            sys.exit(f"no query model: {notice}")
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.fakes import HashEmbedder

        embedder = HashEmbedder()
    with connect(settings) as admin, connect(settings, "fuzzer") as conn:
        seed_data(admin, conn, WORK / "fuzz-vault")
        if not args.real_model:
            from cli_org.vault.embed import embed_pending

            embed_pending(admin, embedder)
        out = fuzz(conn, settings, args.count, args.seed, embedder, every=1000)
    print(
        json.dumps(
            {
                "queries": args.count,
                "calls": out.calls,
                "answered": out.answered,
                "refused": dict(out.refused),
                "unexpected": len(out.unexpected),
                "seconds": round(out.seconds, 1),
                "model": "real" if args.real_model else "hash",
                "first_unexpected": out.unexpected[:5],
            },
            indent=2,
            ensure_ascii=True,
        )
    )
    sys.exit(1 if out.unexpected else 0)


if __name__ == "__main__":
    main()
