"""Train the injection classifier (cli_org/checks/injection.py) and measure it.

    python -m benchmarks.detect_train --data-dir DIR [--write]

Trains a logistic regression (numpy, L2, classes weighted equally, Newton's method) on the sentence
embeddings of every injection and benign line of benchmarks/detect_data/tune.tsv, tune_i33.tsv
and tests/data/write_scan*.tsv; secrets are left out. The threshold is the lowest at which no
more than MAX_FALSE of the training benign lines score above it, in 5-fold cross-validation.
Prints the cross-validated and held-out (benchmarks/detect_data/heldout.tsv and heldout_i33.tsv,
never trained on) recall and false positives of the classifier alone, and the cost of one check. --write
stores the weights in cli_org/checks/injection_weights.npz. DIR holds (or gets) the query model.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from cli_org.checks import injection
from cli_org.config import Settings
from cli_org.vault.embedders import OnnxEmbedder, model_files

from .common import ROOT, median
from .write_scan_data import load

DATA = ROOT / "benchmarks" / "detect_data"
TRAIN_FILES = [DATA / "tune.tsv", DATA / "tune_i33.tsv", *sorted((ROOT / "tests" / "data").glob("write_scan*.tsv"))]
HELD_OUT = [DATA / "heldout.tsv", DATA / "heldout_i33.tsv", DATA / "heldout_i33b.tsv"]
MAX_FALSE = 0.02  # benign lines above the threshold, cross-validated
L2 = 0.03  # of 0.01-1.0, the best cross-validated recall at 2% false positives
STEPS = 25


def labelled(paths: list[Path]) -> tuple[list[str], np.ndarray]:
    rows = [e for path in paths for e in load(path) if e.label in ("injection", "benign")]
    return [e.text for e in rows], np.array([e.label == "injection" for e in rows], np.float32)


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Newton's method (iteratively reweighted least squares): 385 unknowns, a few steps."""
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    rows = np.hstack([x, np.ones((len(x), 1))])
    penalty = L2 * np.diag(np.r_[np.ones(x.shape[1]), 0.0])  # the intercept is not penalised
    w = np.zeros(rows.shape[1])
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(rows @ w)))
        gradient = rows.T @ (weight * (p - y)) + penalty @ w
        hessian = (rows * (weight * p * (1 - p))[:, None]).T @ rows + penalty
        w -= np.linalg.solve(hessian, gradient)
    return w[:-1], float(w[-1])


def prob(x: np.ndarray, coef: np.ndarray, intercept: float, xn: np.ndarray | None = None) -> np.ndarray:
    """The classifier's score; with `xn` (the embeddings of the texts with their numbers
    written N, injection.numbers_folded) the lower of the two, as injection.scores does."""
    p = 1 / (1 + np.exp(-(x @ coef + intercept)))
    return p if xn is None else np.minimum(p, 1 / (1 + np.exp(-(xn @ coef + intercept))))


def embedded(embedder: OnnxEmbedder, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The texts' embeddings, and those of the texts with their numbers folded."""
    x = embedder.embed(texts).astype(np.float64)
    return x, embedder.embed([injection.numbers_folded(t) for t in texts]).astype(np.float64)


def threshold_for(benign_scores: np.ndarray, max_false: float = MAX_FALSE) -> float:
    allowed = int(max_false * len(benign_scores))
    return float(np.sort(benign_scores)[::-1][allowed]) + 1e-6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True, help="where the query model is (or is made)")
    parser.add_argument("--write", action="store_true", help="store the weights in the package")
    parser.add_argument("--max-false", type=float, default=MAX_FALSE, help="benign share above the threshold")
    args = parser.parse_args()
    model = model_files(Settings(data_dir=args.data_dir)) / "model.onnx"
    embedder = OnnxEmbedder(model)
    texts, y = labelled(TRAIN_FILES)
    x, xn = embedded(embedder, texts)
    print(f"training rows: {int(y.sum())} injections, {int((1 - y).sum())} benign")
    folds = np.arange(len(y)) % 5
    np.random.default_rng(21).shuffle(folds)
    cv = np.zeros(len(y))
    for k in range(5):
        coef, intercept = fit(x[folds != k], y[folds != k])
        cv[folds == k] = prob(x[folds == k], coef, intercept, xn[folds == k])
    threshold = threshold_for(cv[y == 0], args.max_false)
    print(
        f"5-fold cross-validation at threshold {threshold:.3f}: recall {(cv[y == 1] >= threshold).mean():.1%},"
        f" false positives {(cv[y == 0] >= threshold).mean():.1%}"
    )
    coef, intercept = fit(x, y)
    for path in HELD_OUT:
        held_texts, held_y = labelled([path])
        hx, hxn = embedded(embedder, held_texts)
        held = prob(hx, coef, intercept, hxn)
        print(
            f"held-out ({path.name}), classifier alone: recall {(held[held_y == 1] >= threshold).mean():.1%}"
            f" of {int(held_y.sum())}, false positives {(held[held_y == 0] >= threshold).mean():.1%}"
            f" of {int((1 - held_y).sum())}"
        )
    if args.write:
        np.savez(injection.WEIGHTS, coef=coef.astype(np.float32), intercept=intercept, threshold=threshold)
        print(f"wrote {injection.WEIGHTS.relative_to(ROOT)}")
    times = []
    for text in held_texts[:50]:
        started = time.perf_counter()
        embedder.embed([text])
        times.append(time.perf_counter() - started)
    print(f"one check (embed + score), median of {len(times)}: {median(times) * 1000:.1f} ms")
    embedder.close()


if __name__ == "__main__":
    main()
