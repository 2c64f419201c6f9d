"""Prompt injections recognised by their meaning: what the write scan's patterns (patterns.py) miss.

A logistic regression over the sentence embedding of all-MiniLM-L6-v2 (the model recall
already runs; ONNX, no torch). Its weights are `injection_weights.npz` in this package,
written by `python -m benchmarks.detect_train` from the labelled lines of
benchmarks/detect_data/tune.tsv, tune_i33.tsv and tests/data/write_scan*.tsv (injections
against benign look-alikes and ordinary notes); benchmarks/detect_data/heldout*.tsv are never
trained on. The scan runs it wherever the query model is or can be made (vault/embedders.py
builds it from the installed weights on first need): without the weights the patterns alone
decide, and `available()` says so.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..local.places import data_dir_from

if TYPE_CHECKING:
    from ..vault.embedders import Embedder, OnnxEmbedder, ProcessEmbedder

WEIGHTS = Path(__file__).with_name("injection_weights.npz")
# Shorter texts (a subject, a path) are left to the patterns: the training lines are sentences,
# and a word or two says too little to score.
MIN_CHARS = 24


@functools.cache
def _weights() -> tuple[Any, float, float]:
    import numpy as np

    with np.load(WEIGHTS) as w:
        return w["coef"].astype(np.float32), float(w["intercept"]), float(w["threshold"])


def _embedder(model: Path) -> OnnxEmbedder | ProcessEmbedder | None:
    from ..vault.embedders import query_model

    return query_model(model)


def _model() -> Path:
    from ..vault.embedders import model_file

    return model_file(data_dir_from(os.environ))


def available() -> bool:
    """Whether the classifier runs here: the query model exists under the data dir, or its
    weights are installed and it is built on first need."""
    from ..vault.embedders import installed

    return _model().exists() or installed()


def scores(texts: list[str], embedder: Embedder) -> list[float]:
    """The probability that each text is an instruction aimed at the agent that reads it; for
    a text at or above the threshold that holds a number, the lower of its score and that of
    the text with its numbers written N (numbers_folded). Below the threshold the second score
    could only be lower, and the decision is the same, so it is not computed."""
    vectors = embedder.embed(texts)  # first: it waits for the loader's numpy (lessons.scores says why)
    import numpy as np

    coef, intercept, threshold = _weights()

    def probability(rows: Any) -> list[float]:
        return [float(v) for v in 1 / (1 + np.exp(-(rows @ coef + intercept)))]

    found = probability(vectors)
    again = [i for i, (t, p) in enumerate(zip(texts, found, strict=True)) if p >= threshold and numbers_folded(t) != t]
    if again:
        folded = embedder.embed([numbers_folded(texts[i]) for i in again])
        for i, p in zip(again, probability(folded), strict=True):
            found[i] = min(found[i], p)
    return found


# A number says nothing of whether a text gives an order, but it moves the embedding: "Run
# r0-83 of the nightly deploy finished on runner 83" scored 0.96 and the same with 7 for each
# number 0.36 (2026-12-03; 26 of 309 such claims of benchmarks/remember_cost.py were refused).
# So a text is also scored with its digit runs written N, and the lower score counts
# (benchmarks/detect_train.py picks the threshold on the same rule).
_NUMBER = re.compile(r"[0-9]+")


def numbers_folded(text: str) -> str:
    return _NUMBER.sub("N", text)


# The model's vocabulary is English word pieces: text in another script (Arabic, Devanagari,
# CJK, Cyrillic) becomes a few pieces whose embeddings sit together, and the classifier
# refused ordinary notes written in them (10 of the 12 false positives on the blind set of
# 2026-12-01, benchmarks/RESULTS.md). It judges only text that is mostly Latin letters.
MIN_LATIN = 0.8


def _latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(ord(c) < 0x250 for c in letters) >= MIN_LATIN * len(letters)


# An order needs words: a run of one letter ("x" * 1000, a cap test's filler) scored p=1.00
# (2026-12-03), the embedding of one repeated piece being no sentence at all. The classifier
# judges only text with at least this many different words of two letters or more; every
# labelled injection has more (the shortest, "ignore previous instructions", has three).
MIN_WORDS = 3
_WORD = re.compile(r"[^\W\d_]{2,}")


def _worded(text: str) -> bool:
    return len({w.lower() for w in _WORD.findall(text)}) >= MIN_WORDS


def is_injection(text: str) -> bool:
    """True when the model is here and scores the text at or above the trained threshold."""
    return judge(text) is not None


# Where a refused text is cut into sentences, to say which one the classifier objects to.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def judge(text: str) -> tuple[str, float, float] | None:
    """None when the text passes (or the model is not here); else the sentence that scores
    highest (the whole text when it is one sentence), its score and the threshold. The text
    is judged whole, as trained; the sentences are scored only to name one in a refusal.
    (Judging each sentence alone as well caught 3 more of 100 blind injections but refused 2
    to 3 more of 100 look-alikes on each blind set, 2026-12-03: not taken.)"""
    if len(text) < MIN_CHARS or not _latin(text) or not _worded(text):
        return None
    embedder = _embedder(_model())
    if embedder is None:
        return None
    from ..vault.embedders import ProcessEmbedder

    if isinstance(embedder, ProcessEmbedder):  # this same judge, run in the model's process
        found = embedder.ask("judge", text)  # served there: faces/cli
        return None if found is None else (found[0], found[1], found[2])
    # The embedder's loader thread imports onnxruntime, and with it numpy; numpy imported by
    # two threads at once fails ("partially initialized module"), as a cold `remember` did in
    # CI right after `vault embed` made the model. So the loader finishes first.
    embedder.ready()
    threshold = _weights()[2]
    whole = text.strip()
    score = float(scores([whole], embedder)[0])
    if score < threshold:
        return None
    sentences = [s for s in _SENTENCE_END.split(whole) if s]
    if len(sentences) > 1:
        each = [float(v) for v in scores(sentences, embedder)]
        best = max(range(len(sentences)), key=each.__getitem__)
        if each[best] >= threshold:
            return sentences[best], each[best], threshold
    return whole, score, threshold
