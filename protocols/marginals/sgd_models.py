"""SGD-trained linear regression, logistic regression and linear SVM on synthetic data (seed 000,
spec Sec. 8.2 / 10.3), tested on held-out real records.

Learning data (the paper's Mexico subset, replaced by Census-Income (KDD), the same 200,000 rows
as :func:`protocols.datasets.categorical.load_census_income`):

* 5 feature attributes: age (9 bins), class of worker (9), marital status (7), sex (2),
  tax filer status (6), dummy-coded to c_i - 1 binary features each (28) plus an intercept
  (full-or-part-time status is left out: it nearly determines weeks worked);
* "income": Census-Income (KDD) has no numeric income (only the >50K flag and a wage-per-hour
  field that is non-zero for 5.7 % of the rows), so the numeric stand-in is *weeks worked in
  year* (0-52, non-zero for 52 %), discretised at equal width into 10 bins (the paper's
  construction). Regression target: the bin (0-9); classification label: +1 if the bin exceeds
  the mean bin of the real training records, else -1 ("above-mean income").
* 80/20 split (seed-fixed): the 80 % build the published marginals and the synthetic data, the
  20 % are the real test set.

SGD (the paper fixes only the step size 1/sqrt(t)): mini-batches of ``batch`` records, step
eta_t = 1/sqrt(t) per mini-batch, ``epochs`` passes, zero initialisation, the returned weights are
the average of the iterates of the last epoch (Polyak-Ruppert). Features are scaled by
1/sqrt(6) so every row has squared norm <= 1 (1/sqrt(t) is then a stable step for the squared
loss); the regression target is scaled to [0, 1] and predictions back. Losses: squared
(linear regression), logistic, hinge with L2 weight ``lam`` (linear SVM). Metrics: the
regression's mean squared error on the bin scale (SSE / n_test, also the SSE itself) and the
misclassification rate of the two classifiers.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from protocols.datasets import categorical as D

FEATURES = ("age", "class-of-worker", "marital-status", "sex", "tax-filer-status")
INCOME = "weeks-worked-bin"
INCOME_COLUMN = 39  # weeks worked in year, census-income.*.csv
INCOME_BINS = 10
MODELS = ("linear", "logistic", "svm")


@dataclass(frozen=True)
class LearningData:
    """The 6-attribute learning subset (5 features + income bin), split 80/20."""

    dataset: D.CategoricalDataset  # all records: FEATURES + INCOME
    train: np.ndarray
    test: np.ndarray

    @property
    def feature_sizes(self) -> tuple[int, ...]:
        return self.dataset.domain_sizes[:-1]


def _weeks_worked(data_dir: str | Path | None, n: int, seed: int) -> np.ndarray:
    """Weeks worked of the same sampled rows as ``load_census_income(data_dir, n, seed)``."""
    folder = Path(data_dir or D.default_data_dir()) / "census-income-kdd"
    vals: list[int] = []
    for fname in ("census-income.train.csv.gz", "census-income.test.csv.gz"):
        path = folder / fname
        if not path.exists():
            raise ValueError(f"census-income learning data: missing {path}")
        with gzip.open(path, "rt") as fh:
            for line in fh:
                parts = line.split(",")
                if len(parts) >= 42:
                    vals.append(int(float(parts[INCOME_COLUMN])))
    pick = np.sort(np.random.default_rng(seed).choice(len(vals), size=n, replace=False))
    return np.asarray(vals, dtype=np.int64)[pick]


def income_bins(values: np.ndarray, lo: float = 0.0, hi: float = 52.0) -> np.ndarray:
    """Equal-width discretisation of [lo, hi] into INCOME_BINS bins (0..9)."""
    b = np.floor((np.asarray(values, dtype=np.float64) - lo) / (hi - lo) * INCOME_BINS)
    return np.clip(b, 0, INCOME_BINS - 1).astype(np.int64)


def load_census_learning(
    data_dir: str | Path | None = None,
    n: int = 200_000,
    seed: int = 0,
    split_seed: int = 0,
    base: D.CategoricalDataset | None = None,
) -> LearningData:
    """Census-Income learning subset (module docstring) with its 80/20 split.

    ``base``: the already loaded ``load_census_income(data_dir, n, seed)`` (saves a parse).
    """
    if base is None:
        base = D.load_census_income(data_dir, n=n, seed=seed)
    elif base.n != n or base.name != "census-income":
        raise ValueError(f"load_census_learning: base must be census-income with n={n}")
    cols = [base.attributes.index(a) for a in FEATURES]
    x = np.column_stack([base.records[:, cols], income_bins(_weeks_worked(data_dir, n, seed))])
    ds = D.CategoricalDataset(
        "census-income-learning",
        x.astype(np.int64),
        tuple(base.domain_sizes[c] for c in cols) + (INCOME_BINS,),
        FEATURES + (INCOME,),
        base.source + f"; weeks worked (column {INCOME_COLUMN}) in {INCOME_BINS} equal-width bins",
    )
    perm = np.random.default_rng(split_seed).permutation(ds.n)
    cut = int(0.8 * ds.n)
    return LearningData(ds, ds.records[np.sort(perm[:cut])], ds.records[np.sort(perm[cut:])])


def design_matrix(records: np.ndarray, feature_sizes: tuple[int, ...]) -> np.ndarray:
    """Dummy coding (c_i - 1 columns per feature, value 0 the baseline) plus an intercept,
    scaled so every row has squared norm <= 1."""
    x = np.asarray(records, dtype=np.int64)
    blocks = [np.ones((x.shape[0], 1))]
    for j, c in enumerate(feature_sizes):
        blocks.append((x[:, j : j + 1] == np.arange(1, c)).astype(np.float64))
    return np.hstack(blocks) / np.sqrt(len(feature_sizes) + 1)


def labels(records: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """(regression target = income bin, classification label +-1 = bin > threshold)."""
    y = np.asarray(records)[:, -1].astype(np.float64)
    return y, np.where(y > threshold, 1.0, -1.0)


def _gradient(model: str, w: np.ndarray, X: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    z = X @ w
    if model == "linear":
        return X.T @ (z - y) / len(y)
    if model == "logistic":
        return -X.T @ (y / (1.0 + np.exp(np.clip(y * z, -50, 50)))) / len(y)
    viol = (y * z < 1).astype(np.float64)
    return -X.T @ (viol * y) / len(y) + lam * w


def sgd_train(
    model: str,
    X: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator,
    *,
    epochs: int = 2,
    batch: int = 32,
    lam: float = 1e-4,
) -> np.ndarray:
    """Mini-batch SGD with step 1/sqrt(t); returns the last epoch's averaged weights."""
    if model not in MODELS:
        raise ValueError(f"sgd_train: model must be one of {MODELS}, got {model!r}")
    if X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(f"sgd_train: {X.shape[0]} rows for {y.shape[0]} labels")
    w = np.zeros(X.shape[1])
    avg = np.zeros_like(w)
    t = 0
    for ep in range(epochs):
        order = rng.permutation(X.shape[0])
        steps = 0
        for start in range(0, len(order), batch):
            b = order[start : start + batch]
            t += 1
            w = w - _gradient(model, w, X[b], y[b], lam) / np.sqrt(t)
            if ep == epochs - 1:
                avg += w
                steps += 1
    return avg / max(1, steps)


def evaluate_models(
    train_records: np.ndarray,
    test_records: np.ndarray,
    feature_sizes: tuple[int, ...],
    threshold: float,
    rng: np.random.Generator,
    **sgd: Any,
) -> dict[str, float]:
    """Train the three models on ``train_records`` (real or synthetic), test on real records."""
    Xtr, Xte = (
        design_matrix(train_records, feature_sizes),
        design_matrix(test_records, feature_sizes),
    )
    ytr, ctr = labels(train_records, threshold)
    yte, cte = labels(test_records, threshold)
    scale = INCOME_BINS - 1
    w = sgd_train("linear", Xtr, ytr / scale, rng, **sgd)
    err = Xte @ w * scale - yte
    out = {"linear_sse": float(np.sum(err**2)), "linear_mse": float(np.mean(err**2))}
    for m in ("logistic", "svm"):
        w = sgd_train(m, Xtr, ctr, rng, **sgd)
        out[f"{m}_misclassification"] = float(np.mean(np.where(Xte @ w > 0, 1.0, -1.0) != cte))
    out["test_positive_rate"] = float(np.mean(cte > 0))
    return out


def income_threshold(train_records: np.ndarray) -> float:
    """Mean income bin of the real training records (the public label threshold)."""
    return float(np.mean(np.asarray(train_records)[:, -1]))
