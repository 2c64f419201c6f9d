"""Train the lesson classifier (cli_org/archive/lessons.py) on the tuning half and pick its threshold.

    python -m benchmarks.lesson_train [--data-dir DIR] [--write]

A logistic regression (numpy, L2, classes weighted equally, Newton's method) over the query
model's sentence embeddings of every line of benchmarks/lesson_data/tune.tsv, as the injection
classifier is trained (benchmarks/detect_train.py). The threshold is picked on the same half,
in 5-fold cross-validation of the whole detector (each line a person's message after an agent's
action: the cue words choose the sentences, the classifier judges them): the lowest threshold
whose cross-validated precision is at least TARGET_PRECISION with at most MAX_FALSE of the
plain lines proposed. heldout.tsv is never read here
(benchmarks/lessons_eval.py measures it). --write stores cli_org/archive/lesson_weights.npz.
DIR holds (or gets) the query model; by default the user's data folder.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cli_org.archive import lessons
from cli_org.checks.rules import PROPOSAL_KINDS
from cli_org.local.places import data_dir_from
from cli_org.vault.embedders import OnnxEmbedder, build_model, model_file

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "lesson_data"
TUNE = DATA / "tune.tsv"
HELD_OUT = DATA / "heldout.tsv"
# Precision over recall (issue 35: an agent that wades through bad proposals stops reading them).
# Both bounds hold at the chosen threshold: precision on the labelled half, and the share of its
# plain lines proposed, since a real session has many more plain messages than lessons (most of
# a person's messages in the corpora are tasks, questions and go-aheads).
TARGET_PRECISION = 0.95
MAX_FALSE = 0.02
# And never below this: the labelled halves are about half lessons, real sessions are not (2 to
# 12 of the 89 messages of a person in the public sessions of benchmarks/RESULTS.md), so the
# model must at least find a sentence more likely a lesson than not.
MIN_THRESHOLD = 0.5
L2_CHOICES = (0.01, 0.03, 0.1, 0.3, 1.0)
STEPS = 25
FOLDS = 5


@dataclass(frozen=True)
class Line:
    label: str  # lesson | plain
    kind: str
    text: str

    @property
    def lesson(self) -> bool:
        return self.label == "lesson"


def load(path: Path) -> list[Line]:
    out = []
    for n, raw in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not raw.strip() or raw.startswith("#"):
            continue
        parts = raw.split("\t")
        if len(parts) != 3 or parts[0] not in ("lesson", "plain"):
            raise ValueError(f"{path.name}:{n}: expected label<TAB>kind<TAB>text")
        if parts[0] == "lesson" and parts[1] not in PROPOSAL_KINDS:
            raise ValueError(f"{path.name}:{n}: unknown kind {parts[1]!r}")
        out.append(Line(*parts))
    return out


def session_of(text: str) -> list[lessons.Turn]:
    """A line as the detector meets it: the person's message right after the agent acted."""
    return [
        lessons.Turn("a1", "assistant", "", tool_name="Edit"),
        lessons.Turn("t1", "tool", "The file has been updated.", failed=False),
        lessons.Turn("a2", "assistant", "Done: the change is in place."),
        lessons.Turn("u1", "user", text),
    ]


def fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """Newton's method (iteratively reweighted least squares): 385 unknowns, a few steps."""
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    rows = np.hstack([x, np.ones((len(x), 1))])
    penalty = l2 * np.diag(np.r_[np.ones(x.shape[1]), 0.0])  # the intercept is not penalised
    w = np.zeros(rows.shape[1])
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(rows @ w)))
        gradient = rows.T @ (weight * (p - y)) + penalty @ w
        hessian = (rows * (weight * p * (1 - p))[:, None]).T @ rows + penalty
        w -= np.linalg.solve(hessian, gradient)
    return w[:-1], float(w[-1])


def prob(x: np.ndarray, coef: np.ndarray, intercept: float) -> np.ndarray:
    return np.asarray(1 / (1 + np.exp(-(x @ coef + intercept))))


def open_embedder(data_dir: Path | None) -> OnnxEmbedder:
    model = model_file(data_dir or data_dir_from(os.environ))
    if not build_model(model):
        raise SystemExit("no query model: install the weights (see the README) or pass --data-dir")
    return OnnxEmbedder(model)


def detector_predictions(
    rows: list[Line], unit_probability: Callable[[int, list[str]], list[float]], bar: float
) -> np.ndarray:
    """Whether the whole detector proposes something for each line, given a function that
    scores the candidate sentences of line i."""
    out = np.zeros(len(rows), bool)
    for i, line in enumerate(rows):
        found = lessons.candidates(session_of(line.text))
        if not found:
            continue
        ps = unit_probability(i, [c.unit for c in found])
        out[i] = any(lessons.accepted(c, p, bar) for c, p in zip(found, ps, strict=True))
    return out


def rules_only(rows: list[Line]) -> np.ndarray:
    return np.array([bool(lessons.lessons(session_of(line.text))) for line in rows])


def precision_recall(predicted: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    tp = int((predicted & truth).sum())
    return tp / max(1, int(predicted.sum())), tp / max(1, int(truth.sum()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, help="where the query model is (or is made)")
    parser.add_argument("--write", action="store_true", help="store the weights in the package")
    parser.add_argument("--errors", action="store_true", help="print the cross-validated mistakes")
    args = parser.parse_args()
    rows = load(TUNE)
    truth = np.array([r.lesson for r in rows])
    embedder = open_embedder(args.data_dir)
    texts = [r.text for r in rows]
    x = embedder.embed(texts).astype(np.float64)
    y = truth.astype(np.float64)
    print(f"tune.tsv: {int(truth.sum())} lessons, {int((~truth).sum())} plain lines")
    p, r = precision_recall(rules_only(rows), truth)
    print(f"rules alone (no model), tune half: precision {p:.1%}, recall {r:.1%}")

    candidate_units = {i: [c.unit for c in lessons.candidates(session_of(t))] for i, t in enumerate(texts)}
    units = sorted({u for us in candidate_units.values() for u in us})
    unit_x = dict(zip(units, embedder.embed(units).astype(np.float64), strict=True)) if units else {}
    folds = np.arange(len(rows)) % FOLDS
    np.random.default_rng(35).shuffle(folds)

    best = None
    for l2 in L2_CHOICES:
        models = [fit(x[folds != k], y[folds != k], l2) for k in range(FOLDS)]

        def cv_units(i: int, us: list[str], models: list[tuple[np.ndarray, float]] = models) -> list[float]:
            coef, intercept = models[folds[i]]
            return [float(prob(unit_x[u], coef, intercept)) for u in us]

        chosen = None
        for bar in np.arange(MIN_THRESHOLD, 0.99, 0.01):
            said = detector_predictions(rows, cv_units, float(bar))
            pr, rc = precision_recall(said, truth)
            if pr >= TARGET_PRECISION and (said & ~truth).sum() <= MAX_FALSE * (~truth).sum():
                chosen = (rc, pr, float(bar))
                break
        if chosen is None:
            print(f"L2 {l2}: no threshold reaches precision {TARGET_PRECISION:.0%}")
            continue
        rc, pr, bar = chosen
        print(f"L2 {l2}: 5-fold cross-validation on tune, threshold {bar:.2f}: precision {pr:.1%}, recall {rc:.1%}")
        if best is None or rc > best[0]:
            best = (rc, pr, bar, l2)
    if best is None:
        raise SystemExit("no setting reached the target precision")
    rc, pr, bar, l2 = best
    coef, intercept = fit(x, y, l2)
    if args.errors:
        models = [fit(x[folds != k], y[folds != k], l2) for k in range(FOLDS)]

        def cv_best(i: int, us: list[str]) -> list[float]:
            c, b = models[folds[i]]
            return [float(prob(unit_x[u], c, b)) for u in us]

        predicted = detector_predictions(rows, cv_best, bar)
        for row, said in zip(rows, predicted, strict=True):
            if said != row.lesson:
                print(f"  cross-validated {'false positive' if said else 'missed'}: {row.text[:110]!r}")
    print(f"chosen: L2 {l2}, threshold {bar:.2f} (cross-validated precision {pr:.1%}, recall {rc:.1%})")
    if args.write:
        np.savez(lessons.WEIGHTS, coef=coef.astype(np.float32), intercept=intercept, threshold=bar)
        print(f"wrote {lessons.WEIGHTS.relative_to(ROOT)}")
    embedder.close()


if __name__ == "__main__":
    main()
