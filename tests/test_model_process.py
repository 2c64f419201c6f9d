"""A cold `remember` runs the query model in a forked process of its own (vault/embedders.py
ProcessEmbedder): the same vectors to the byte and the same injection verdicts as the model in
the command's own process, its load error said as before, and nothing left behind or printed
when the command ends before the model is needed."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_org.config import Settings

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

# In a fresh process, as a cold `remember` has it: fork first, then the same texts through
# the model loaded in this process; the judge's verdicts on every held-out line, and vectors.
SAME = """
import json, sys
from pathlib import Path
from cli_org.checks import injection
from cli_org.vault import embedders as E
model = E.model_file(Path(sys.argv[1]))
texts = json.loads(sys.stdin.read())
E.start_early(model, served={'judge': injection.judge})
forked = E._models[model]
assert isinstance(forked, E.ProcessEmbedder) and "numpy" not in sys.modules
verdicts = [injection.judge(t) for t in texts]
vectors = forked.embed(texts[:40])
assert "numpy" not in sys.modules, "the command loaded numpy"
forked.close()
assert forked.embed(texts[:1])  # close() leaves a shared model usable
forked.end()
E._models.clear()
here = E.query_model(model)
assert isinstance(here, E.OnnxEmbedder)
assert [injection.judge(t) for t in texts] == verdicts
import numpy as np
assert [np.asarray(v, np.float32).tobytes() for v in vectors] == [r.tobytes() for r in here.embed(texts[:40])]
assert [E.vector_literal(v) for v in vectors] == [E.vector_literal(r) for r in here.embed(texts[:40])]
print(sum(v is not None for v in verdicts), len(verdicts))
"""


def _model_data_dir() -> Path:
    from cli_org.vault.embedders import model_files

    pytest.importorskip("onnx")
    data_dir = Path(os.environ["CLI_ORG_DATA_DIR"])  # where the session built the model (conftest.py)
    model_files(Settings(data_dir=data_dir))
    return data_dir


def _held_out() -> list[str]:
    texts = []
    for name in ("benchmarks/detect_data/heldout.tsv", "tests/data/write_scan_blind.tsv"):
        for line in (ROOT / name).read_text().splitlines():
            if "\t" in line and not line.startswith("#"):
                texts.append(line.split("\t", 1)[1])
    return texts


def test_the_forked_model_gives_the_same_vectors_and_verdicts():
    import json

    data_dir = _model_data_dir()
    texts = _held_out()
    done = subprocess.run(
        [sys.executable, "-c", SAME, str(data_dir)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    refused, judged = map(int, done.stdout.split())
    assert judged == len(texts) and refused > 20  # the classifier refused some: the verdicts were compared


def _cold(org, *args: str, data_dir: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **org.env, "CLI_ORG_DATA_DIR": str(data_dir), "ORG_AGENT": "bot", "CLI_ORG_WARM": "0"}
    return subprocess.run(
        [sys.executable, "-m", "cli_org", *args], env=env, capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def _running(marker: str) -> list[str]:
    """Processes whose command line holds `marker` (a forked child keeps its parent's)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes().decode("utf-8", "replace"):
                found.append(proc.name)
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_remember_refused_before_the_model_leaves_no_process_and_says_one_line(org):
    data_dir = _model_data_dir()
    marker = f"cold-marker-{os.getpid()}-{time.monotonic_ns()}"
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    done = _cold(org, "remember", marker, f"The deploy token is {key} for the staging box", "--source", "a.md",
                 data_dir=data_dir)  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "secret" in done.stderr, done.stderr
    assert _running(marker) == [], "the model's process outlived the command"


def test_a_model_that_fails_to_load_is_said_on_the_write_that_needs_it(org, tmp_path):
    broken = tmp_path / "data"
    model = broken / "models" / "all-MiniLM-L6-v2"
    model.mkdir(parents=True)
    (model / "model.onnx").write_bytes(b"not a model")
    (model / "tokenizer.json").write_text("{}")
    marker = f"broken-marker-{os.getpid()}-{time.monotonic_ns()}"
    done = _cold(org, "remember", marker, "The nightly deploy finished on the second runner today", "--source",
                 "a.md", data_dir=broken)  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("cli-org: embedding model failed to load:"), done.stderr
    assert done.stderr.count("\n") == 1
    assert _running(marker) == []
