"""Histogram baselines of the survey's Fig. 7(b): local k-RR and central Laplace.

- LDP: GRR (k-RR) over [d] at eps_l = eps_c, no shuffler; unbiased counts.
- Central DP: the curator adds Laplace(2/eps) to every count (replace-one neighbours move one
  unit between two bins: L1 sensitivity 2), with :mod:`protocols.oracles.central`'s sampler.
"""

from __future__ import annotations

import numpy as np

from protocols.catalogue.inputs import check_values
from protocols.oracles.central import laplace_mechanism, laplace_variance
from protocols.oracles.grr import grr_estimate_from_counts, grr_perturb, grr_variance

SENSITIVITY = 2.0


def ldp_krr_counts(values: np.ndarray, d: int, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Count estimates of eps-LDP k-RR reports (no shuffle)."""
    v = check_values(values, d, "ldp_krr_counts")
    c = np.bincount(grr_perturb(v, d, eps, rng), minlength=d).astype(np.float64)
    return grr_estimate_from_counts(c, eps, n=v.size) * v.size


def ldp_krr_variance(true_counts: np.ndarray, eps: float) -> np.ndarray:
    """Exact variance of every count of :func:`ldp_krr_counts`."""
    c = np.asarray(true_counts, dtype=np.float64)
    n = int(c.sum())
    return grr_variance(c / n, c.size, eps, n) * n * n


def central_laplace_counts(
    values: np.ndarray, d: int, eps: float, rng: np.random.Generator
) -> np.ndarray:
    """True counts + Laplace(2/eps) each."""
    v = check_values(values, d, "central_laplace_counts")
    counts = np.bincount(v, minlength=d).astype(np.float64)
    return laplace_mechanism(counts, SENSITIVITY, eps, rng)


def central_laplace_variance(eps: float) -> float:
    """Variance of each central count, 2 (2/eps)^2."""
    return laplace_variance(SENSITIVITY, eps)
