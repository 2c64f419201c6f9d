"""A deterministic bag-of-words embedder for unit tests (the real model has its own test)."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from cli_org.vault.embedders import Closing


class HashEmbedder(Closing):
    name = "test/hash-bag-of-words"
    dimension = 384

    def __init__(self, synonyms: dict[str, str] | None = None):
        # Mapping words onto one another lets a test build "paraphrases" the keyword side misses.
        self.synonyms = synonyms or {}
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                word = self.synonyms.get(word, word)
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else out[i]
            if not norm:
                out[i, 0] = 1.0
        return out
