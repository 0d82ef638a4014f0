"""k-ary randomized response (GRR / direct encoding): perturbation, estimator, exact variance."""

from __future__ import annotations

import math

import numpy as np


def grr_probabilities(k: int, eps: float) -> tuple[float, float]:
    """(p, q): probability of reporting the true value, and each specific other value."""
    if k < 2:
        raise ValueError(f"GRR needs a domain of at least 2 values, got k={k}")
    e = math.exp(eps)
    return e / (e + k - 1), 1.0 / (e + k - 1)


def grr_perturb(values: np.ndarray, k: int, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Perturb every user's value in [0, k) at once; returns int64 reports in [0, k)."""
    v = np.asarray(values, dtype=np.int64)
    if v.size and (v.min() < 0 or v.max() >= k):
        raise ValueError(f"GRR values must lie in [0, {k})")
    p, _ = grr_probabilities(k, eps)
    keep = rng.random(v.shape) < p
    # a uniformly random *other* value: shift by 1..k-1
    other = (v + rng.integers(1, k, size=v.shape)) % k
    return np.where(keep, v, other)


def grr_estimate(reports: np.ndarray, k: int, eps: float, n: int | None = None) -> np.ndarray:
    """Unbiased frequency estimate (fractions summing to 1) from GRR reports.

    ``n`` is the normaliser (number of users); by default the number of reports.
    """
    counts = np.bincount(np.asarray(reports, dtype=np.int64), minlength=k).astype(np.float64)
    return grr_estimate_from_counts(counts, eps, n)


def grr_estimate_from_counts(counts: np.ndarray, eps: float, n: int | None = None) -> np.ndarray:
    """Unbiased frequencies from a histogram of GRR reports."""
    k = counts.shape[-1]
    p, q = grr_probabilities(k, eps)
    n = counts.sum(axis=-1, keepdims=True) if n is None else n
    return (counts / n - q) / (p - q)


def rr_report_variance(f: np.ndarray | float, p: float, q: float) -> np.ndarray | float:
    """q (1 - q) + f (p - q)(1 - p - q): the variance of one report's hit indicator for a value
    of frequency f, when a holder hits with probability p and a non-holder with q (any RR)."""
    return q * (1 - q) + f * (p - q) * (1 - p - q)


def grr_variance(freqs: np.ndarray, k: int, eps: float, n: int) -> np.ndarray:
    """Exact variance of ``grr_estimate`` per value, given true frequencies ``freqs``.

    Var = (q (1 - q) + f (p - q)(1 - p - q)) / (n (p - q)^2): exact for the fixed-n estimator.
    """
    p, q = grr_probabilities(k, eps)
    f = np.asarray(freqs, dtype=np.float64)
    return rr_report_variance(f, p, q) / (n * (p - q) ** 2)


def grr_sample_counts(true_counts: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Histogram of the GRR reports of users with these true counts, sampled from its exact law.

    The n_u users holding u report u w.p. p and each other value w.p. q: one multinomial per
    true value, summed. Same distribution as ``bincount(grr_perturb(...))`` without
    materializing one report per user (for simulations at scale; k x k memory).
    """
    c = np.asarray(true_counts, dtype=np.int64)
    if c.ndim != 1 or (c < 0).any():
        raise ValueError("grr_sample_counts: true_counts must be a 1-D array of counts >= 0")
    k = c.size
    p, q = grr_probabilities(k, eps)
    pvals = np.full((k, k), q)
    np.fill_diagonal(pvals, p)
    return rng.multinomial(c, pvals).sum(axis=0)
