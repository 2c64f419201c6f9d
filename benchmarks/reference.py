"""The benchmarks' reference embedder: the same model through sentence-transformers (torch).

Installed with the `reference` extra (`pip install torch==2.13.0 -e '.[reference]'`), never by
cli-org itself: the tests check the ONNX graph against a numpy forward pass instead.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from cli_org.errors import ConfigError
from cli_org.vault.embedders import DIMENSION, MAX_TOKENS, MODEL_NAME, Closing, _model_dir

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


class SentenceTransformerEmbedder(Closing):
    """The reference implementation; loads torch."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size
        self._model: SentenceTransformer | None = None

    @property
    def model(self) -> SentenceTransformer:
        """Loaded on first use: a run with nothing to embed never pays for torch."""
        if self._model is None:
            for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"):
                os.environ.setdefault(key, "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise ConfigError(
                    "the reference embedder needs sentence-transformers: pip install 'cli-org[reference]'"
                ) from None
            self._model = SentenceTransformer(str(_model_dir()), device="cpu")
            self._model.max_seq_length = MAX_TOKENS
        return self._model

    def close(self) -> None:
        self._model = None

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
