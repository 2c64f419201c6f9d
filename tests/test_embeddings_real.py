"""The real model: the fast query path gives sentence-transformers' vectors, and a cold
search process never imports torch."""

import os
import subprocess
import sys

import numpy as np
import pytest

from cli_org.config import Settings
from cli_org.db.connect import connect
from cli_org.vault.embed import embed_pending
from cli_org.vault.embedders import MODEL_NAME, OnnxEmbedder, index_embedder, onnx_path
from cli_org.vault.scan import scan
from cli_org.vault.search import search

pytest.importorskip("sentence_transformers")

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
def st(model_settings):
    return index_embedder(model_settings)  # also exports the ONNX copy


def test_onnx_matches_sentence_transformers(st, model_settings):
    assert onnx_path(model_settings).exists()
    fast = OnnxEmbedder(onnx_path(model_settings))
    a, b = st.embed(TEXTS), fast.embed(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    cosines = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert cosines.min() > 0.999, cosines
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-4)


def test_real_semantic_search_and_cold_process_without_torch(st, model_settings, org, tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "squash.md").write_text("# Squash commits\n\nUse an interactive rebase to fold fixups together.\n")
    (vault / "vacuum.md").write_text("# Vacuum\n\nReclaim disk space from dead tuples in PostgreSQL.\n")
    (vault / "tmux.md").write_text("# Tmux panes\n\nSplit the terminal window horizontally.\n")
    with connect(org.settings) as conn:
        scan(conn, vault)
        assert embed_pending(conn, st).embedded == 3
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
