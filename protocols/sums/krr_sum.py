"""The discrete-sum building block of RSum_KR and RSum_RM: k-RR on integers of [0, k), debiased.

Each user holding an integer z in [0, k) sends z with probability 1 - lambda, else a uniform
integer of [0, k). The sum of m reports has mean (1 - lambda) sum z + m lambda (k - 1)/2, so

    est = (sum y - m lambda (k - 1)/2) / (1 - lambda)

is unbiased, with variance sum_i Var(y_i)/(1 - lambda)^2 where
Var(y_i) = (1-lambda) z^2 + lambda (k-1)(2k-1)/6 - ((1-lambda) z + lambda (k-1)/2)^2.
lambda comes from the survey's Theorem 4 with k values (Eq. 8).
"""

from __future__ import annotations

import numpy as np

from protocols.accountant import survey


def theorem4_krr(eps: float, n: int, delta: float, k: int, what: str) -> tuple[float, float]:
    """(lambda, eps_l) of shuffled k-RR at (eps, delta) with n users; ValueError if invalid."""
    b = survey.theorem4_inverse(eps, n, delta, k)
    if not b.valid or b.value is None or b.blanket is None:
        raise ValueError(f"{what}: Theorem 4 with k={k}: {b.reason}")
    return float(b.blanket), float(b.value)


def krr_integers(z: np.ndarray, k: int, lam: float, rng: np.random.Generator) -> np.ndarray:
    """Reports of every user: own integer w.p. 1 - lambda, else uniform on [0, k)."""
    replace = rng.random(z.shape) < lam
    return np.where(replace, rng.integers(0, k, size=z.shape), z).astype(np.int64)


def krr_sum_estimate(report_sum: float, m: int, k: int, lam: float) -> float:
    """Unbiased sum of the m users' integers from the sum of their reports."""
    return (report_sum - m * lam * (k - 1) / 2.0) / (1.0 - lam)


def krr_sum_variance(z: np.ndarray, k: int, lam: float) -> float:
    """Exact variance of :func:`krr_sum_estimate` for the integers z (module docstring)."""
    z = np.asarray(z, dtype=np.float64)
    mean = (1 - lam) * z + lam * (k - 1) / 2.0
    second = (1 - lam) * z * z + lam * (k - 1) * (2 * k - 1) / 6.0
    return float(np.sum(second - mean * mean) / (1 - lam) ** 2)


def krr_sum_variance_bound(m: int, k: int, lam: float) -> float:
    """Data-independent upper bound on that variance (worst z for every user)."""
    z = np.array([0.0, k - 1.0])
    worst = max(krr_sum_variance(np.array([v]), k, lam) for v in z)
    return m * worst
