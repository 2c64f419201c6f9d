"""The labelled write-scan set (tests/data/write_scan.tsv), filled in and split in two halves.

Used by tests/test_write_scan.py and benchmarks/write_scan.py. Secret-shaped parts are
stored as templates and generated here from a generator seeded by the line itself, so the
repository never holds a live-looking token and every run sees the same texts.

Template fields: {{X<n>}} is n characters of class X; {{BEGIN:NAME}} is a PEM header;
{{B64:text}} is the base64 of the text (after its own fields are filled).
The split: a line whose SHA-256 starts with an even byte is in the "tune" half (patterns
were adjusted while looking at it); odd is "held-out" (only measured).
"""

from __future__ import annotations

import base64
import hashlib
import random
import re
import string
from dataclasses import dataclass
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "tests" / "data" / "write_scan.tsv"
LABELS = ("secret", "injection", "benign")
HALVES = ("tune", "held-out")

_CLASSES = {
    "A": string.ascii_uppercase + string.digits,
    "a": string.ascii_letters + string.digits,
    "l": string.ascii_lowercase + string.digits,
    "w": string.ascii_lowercase,
    "h": "0123456789abcdef",
    "H": "0123456789ABCDEF",
    "d": string.digits,
    "b": string.ascii_letters + string.digits + "+/",
    "u": string.ascii_letters + string.digits + "_-",
}
_FIELD = re.compile(r"\{\{(?:([AalwhHdbu])(\d+)|BEGIN:([A-Z0-9 ]+))\}\}")
_B64 = re.compile(r"\{\{B64:([^{}]*)\}\}")


@dataclass(frozen=True)
class Example:
    label: str
    text: str
    template: str
    half: str
    line: int
    near: str | None = None  # a benign example written as a near miss of this class, if said


def fill(template: str) -> str:
    """The template with its random fields generated from a seed derived from the template."""
    rng = random.Random(hashlib.sha256(template.encode()).digest())

    def one(m: re.Match) -> str:
        if m[3]:
            return f"-----BEGIN {m[3]}-----"
        return "".join(rng.choice(_CLASSES[m[1]]) for _ in range(int(m[2])))

    return _B64.sub(lambda m: base64.b64encode(m[1].encode()).decode(), _FIELD.sub(one, template))


def half_of(label: str, template: str) -> str:
    return HALVES[hashlib.sha256(f"{label}\t{template}".encode()).digest()[0] % 2]


def load(path: Path = PATH) -> list[Example]:
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return _load_jsonl(path)
    examples = []
    for number, raw in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        label, template = raw.split("\t", 1)
        if label not in LABELS:
            raise ValueError(f"{path.name}:{number}: unknown label {label!r}")
        examples.append(Example(label, fill(template), template, half_of(label, template), number))
    return examples


def _load_jsonl(path: Path) -> list[Example]:
    """A blind set kept as gzipped JSON lines (`label`, `text`, `near`): its secrets are literal,
    made-up values that a template cannot hold (a base64-encoded key, a key split in two), so
    the file is compressed to keep live-looking tokens out of the repository's plain text."""
    import gzip
    import json

    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    examples = []
    for number, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        record = json.loads(line)
        if record["label"] not in LABELS:
            raise ValueError(f"{path.name}:{number}: unknown label {record['label']!r}")
        text = record["text"]
        examples.append(Example(record["label"], text, text, "all", number, record.get("near")))
    return examples
