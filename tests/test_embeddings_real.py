"""The real model: the ONNX graph built from the weights gives sentence-transformers'
vectors, the int8 indexing model agrees with them, and neither a cold search nor a cold
`vault embed` imports torch."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from cli_org.config import Settings
from cli_org.db.connect import connect
from cli_org.vault.embed import embed_pending
from cli_org.vault.embedders import (
    MODEL_NAME,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    index_embedder,
    int8_path,
    onnx_path,
)
from cli_org.vault.scan import scan
from cli_org.vault.search import search

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_embeddings_real")]

# Looked up, not imported: torch loads when a test here runs, not when any run collects it.
if importlib.util.find_spec("sentence_transformers") is None:
    pytest.skip("sentence_transformers (the reference) is not installed", allow_module_level=True)

TEXTS = [
    "How do I squash the last three commits into one?",
    "Partial indexes cover only the rows a query needs.",
    "x",
    "",
    "Ünïcödé, emoji 🚀 and punctuation!?",
    "A much longer passage. " * 200,  # past the 256-token window: both paths truncate alike
    "SELECT * FROM memory_facts WHERE valid_to IS NULL;",
]


@pytest.fixture(scope="module")
def model_settings(tmp_path_factory):
    return Settings(data_dir=tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def st():
    with SentenceTransformerEmbedder() as reference:
        yield reference


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


def test_onnx_matches_sentence_transformers(st, indexer, model_settings):
    assert onnx_path(model_settings).exists()
    fast = OnnxEmbedder(onnx_path(model_settings))
    a, b = st.embed(TEXTS), fast.embed(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    cosines = _cosines(a, b)
    assert cosines.min() > 0.999, cosines
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-4)


def test_onnx_rows_do_not_depend_on_their_batch(indexer, model_settings):
    """Sorting by length and padding per batch must not change a text's vector."""
    fast = OnnxEmbedder(onnx_path(model_settings), batch=2)
    alone = np.stack([fast.embed([t])[0] for t in TEXTS])
    together = fast.embed(TEXTS)
    assert _cosines(alone, together).min() > 0.9999
    side_by_side = OnnxEmbedder(onnx_path(model_settings), threads=1, batch=2, workers=2).embed(TEXTS)
    assert _cosines(alone, side_by_side).min() > 0.9999  # each row lands in its own place
    assert fast.embed([]).shape == (0, 384)


def test_int8_indexing_model_agrees_with_the_reference(st, indexer, model_settings):
    """The default indexing embedder (int8, no torch) against sentence-transformers."""
    assert int8_path(model_settings).exists() and indexer.name == MODEL_NAME
    texts = [t for t in TEXTS if len(t) > 1] + _sample_chunks()
    assert len(texts) > 30
    cosines = _cosines(st.embed(texts), indexer.embed(texts))
    assert cosines.min() > 0.99, sorted(cosines)[:5]
    assert cosines.mean() > 0.995
    # A text of one token or none has the fewest numbers to average its rounding out:
    # measured 0.987 ("x") and 0.983 (""), still the same direction.
    degenerate = [t for t in TEXTS if len(t) <= 1]
    assert _cosines(st.embed(degenerate), indexer.embed(degenerate)).min() > 0.975


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


def test_models_are_built_without_torch(st, tmp_path):
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
    assert _cosines(built, st.embed(TEXTS)).min() > 0.999
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
