"""Unary encoding: symmetric (SUE, basic one-hot RAPPOR) and optimized (OUE, Wang et al. 2017).

A user with value v in [0, d) sends d bits: bit v is 1 with probability p, every other bit is 1
with probability q. SUE: p = e^(eps/2)/(e^(eps/2)+1), q = 1 - p. OUE: p = 1/2,
q = 1/(e^eps+1). Both are eps-LDP (two bits differ between any two inputs).

Estimator: f_v = (C_v/n - q)/(p - q) with C_v the number of reports with bit v set; its exact
variance is (f p(1-p) + (1-f) q(1-q)) / (n (p-q)^2).
"""

from __future__ import annotations

import math

import numpy as np

KINDS = ("oue", "sue")


def ue_probabilities(eps: float, kind: str = "oue") -> tuple[float, float]:
    """(p, q): probability that the true bit, resp. any other bit, is reported as 1."""
    if not eps > 0:
        raise ValueError(f"unary encoding: eps must be > 0, got {eps}")
    if kind == "oue":
        return 0.5, 1.0 / (math.exp(eps) + 1.0)
    if kind == "sue":
        s = math.exp(eps / 2)
        return s / (s + 1.0), 1.0 / (s + 1.0)
    raise ValueError(f"unary encoding: kind must be one of {KINDS}, got {kind!r}")


def _check_values(values: np.ndarray, d: int) -> np.ndarray:
    v = np.asarray(values, dtype=np.int64)
    if d < 2:
        raise ValueError(f"unary encoding: domain size d must be >= 2, got {d}")
    if v.size and (v.min() < 0 or v.max() >= d):
        raise ValueError(f"unary encoding: values must lie in [0, {d})")
    return v


def ue_perturb(
    values: np.ndarray, d: int, eps: float, rng: np.random.Generator, kind: str = "oue"
) -> np.ndarray:
    """Perturbed bit vectors of all users at once: bool array of shape (n, d)."""
    v = _check_values(values, d)
    p, q = ue_probabilities(eps, kind)
    bits = rng.random((v.size, d)) < q
    bits[np.arange(v.size), v] = rng.random(v.size) < p
    return bits


def ue_sample_counts(
    values: np.ndarray, d: int, eps: float, rng: np.random.Generator, kind: str = "oue"
) -> np.ndarray:
    """Column sums C_v of the n perturbed reports, sampled directly from their exact law.

    C_v = Bin(n_v, p) + Bin(n - n_v, q), independent over v: the same distribution as summing
    ``ue_perturb``, without materializing n x d bits (for simulations at scale).
    """
    v = _check_values(values, d)
    p, q = ue_probabilities(eps, kind)
    true_counts = np.bincount(v, minlength=d)
    return rng.binomial(true_counts, p) + rng.binomial(v.size - true_counts, q)


def ue_estimate(
    reports: np.ndarray, eps: float, kind: str = "oue", n: int | None = None
) -> np.ndarray:
    """Unbiased frequencies from an (n, d) array of reports."""
    r = np.asarray(reports)
    if r.ndim != 2:
        raise ValueError(f"ue_estimate: reports must have shape (n, d), got {r.shape}")
    counts = r.sum(axis=0, dtype=np.int64)
    return ue_estimate_from_counts(counts, eps, r.shape[0] if n is None else n, kind)


def ue_estimate_from_counts(
    counts: np.ndarray, eps: float, n: int, kind: str = "oue"
) -> np.ndarray:
    """Unbiased frequencies from the column sums of n reports."""
    if n < 1:
        raise ValueError(f"ue_estimate: n must be >= 1, got {n}")
    p, q = ue_probabilities(eps, kind)
    return (np.asarray(counts, dtype=np.float64) / n - q) / (p - q)


def ue_variance(freqs: np.ndarray, eps: float, n: int, kind: str = "oue") -> np.ndarray:
    """Exact variance of the estimator per value, given the true frequencies."""
    p, q = ue_probabilities(eps, kind)
    f = np.asarray(freqs, dtype=np.float64)
    return (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2)
