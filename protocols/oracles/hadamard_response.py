"""Hadamard response / S-Hist: one randomized bit of a Hadamard row (the GFIM frequency oracle).

Coding matrix: the Sylvester Hadamard matrix of order m = 2^ceil(log2 d),
``H[j, v] = (-1)^popcount(j AND v)`` (0-based), so H H^T = m I; items 0..d-1 use columns
0..d-1. A user with item v draws a public row j uniformly from [0, m) and sends ``(j, bit)``
where the sign ``s = +1 if bit else -1`` equals H[j, v] with probability e^eps/(e^eps+1).
A dummy item (padding, ``DUMMY = -1``) sends a uniform bit. Every report is eps-LDP.

Estimator: with c = (e^eps+1)/(e^eps-1), ``f_v = scale * (c/N) * sum_i H[j_i, v] s_i``; ``scale``
is 1 for single items and l for padding-and-sampling. Aggregation is O(N + m log m): sum the
signs per row, then one fast Walsh-Hadamard transform gives every v at once.

Exact variance: a report of item u contributes X = c H[j, v] s with E[X] = 1[u = v] and
E[X^2] = c^2 (dummies: mean 0), so ``Var f_v = scale^2 (c^2 - mean_i pi_i^2) / N`` with
pi_i = Pr[user i reports v]; for single items this is (c^2 - f_v)/N.
"""

from __future__ import annotations

import math

import numpy as np

DUMMY = -1


def hadamard_order(d: int) -> int:
    """m = 2^ceil(log2 d), at least 2."""
    if d < 1:
        raise ValueError(f"Hadamard: domain size must be >= 1, got {d}")
    return max(2, 1 << (int(d) - 1).bit_length())


def hadamard_entry(j: np.ndarray, v: np.ndarray) -> np.ndarray:
    """H[j, v] in {+1, -1} elementwise (broadcasting)."""
    x = np.bitwise_and(np.asarray(j, np.int64), np.asarray(v, np.int64))
    parity = np.bitwise_count(x) & 1
    return 1 - 2 * parity.astype(np.int64)


def fwht(z: np.ndarray) -> np.ndarray:
    """Fast Walsh-Hadamard transform along the last axis (length a power of two): H z."""
    a = np.array(z, dtype=np.float64, copy=True)
    m = a.shape[-1]
    if m & (m - 1):
        raise ValueError(f"fwht: length must be a power of two, got {m}")
    lead = a.shape[:-1]
    h = 1
    while h < m:
        a = a.reshape(*lead, m // (2 * h), 2, h)
        x, y = a[..., 0, :], a[..., 1, :]
        a = np.stack([x + y, x - y], axis=-2).reshape(*lead, m)
        h *= 2
    return a


def hr_constant(eps: float) -> float:
    """c = (e^eps + 1)/(e^eps - 1)."""
    if not eps > 0:
        raise ValueError(f"Hadamard: eps must be > 0, got {eps}")
    return (math.exp(eps) + 1) / (math.exp(eps) - 1)


def hr_perturb(items: np.ndarray, m: int, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Reports (j, bit) of all users: int64 array (n, 2). Items in [0, m) or DUMMY."""
    v = np.asarray(items, dtype=np.int64)
    if m < 2 or m & (m - 1):
        raise ValueError(f"Hadamard: order m must be a power of two >= 2, got {m}")
    if v.size and (v.min() < DUMMY or v.max() >= m):
        raise ValueError(f"Hadamard: items must lie in [0, {m}) or be DUMMY ({DUMMY})")
    if not eps > 0:
        raise ValueError(f"Hadamard: eps must be > 0, got {eps}")
    n = v.size
    j = rng.integers(0, m, size=n, dtype=np.int64)
    truth = hadamard_entry(j, np.maximum(v, 0)) > 0
    keep = rng.random(n) < math.exp(eps) / (math.exp(eps) + 1)
    bit = np.where(keep, truth, ~truth)
    dummy = v == DUMMY
    bit[dummy] = rng.random(int(dummy.sum())) < 0.5
    return np.stack([j, bit.astype(np.int64)], axis=1)


def hr_estimate(
    reports: np.ndarray,
    m: int,
    eps: float,
    d: int | None = None,
    *,
    n: int | None = None,
    scale: float = 1.0,
) -> np.ndarray:
    """Unbiased frequencies of items 0..d-1 (times ``scale``) from (j, bit) reports."""
    r = np.asarray(reports, dtype=np.int64)
    if r.ndim != 2 or r.shape[1] != 2:
        raise ValueError(f"Hadamard: reports must have shape (n, 2) = (j, bit), got {r.shape}")
    if r.size and ((r[:, 0] < 0).any() or (r[:, 0] >= m).any() or (r[:, 1] & ~1).any()):
        raise ValueError(f"Hadamard: report rows must lie in [0, {m}) and bits in {{0, 1}}")
    nn = r.shape[0] if n is None else n
    if nn < 1:
        raise ValueError("Hadamard: need at least one report")
    signs = 2.0 * r[:, 1] - 1.0
    z = np.bincount(r[:, 0], weights=signs, minlength=m)
    est = scale * hr_constant(eps) * fwht(z) / nn
    return est[: (m if d is None else d)]


def hr_variance(
    freqs: np.ndarray,
    eps: float,
    n: int,
    *,
    scale: float = 1.0,
    mean_pi_sq: np.ndarray | None = None,
) -> np.ndarray:
    """Exact variance per item: scale^2 (c^2 - mean pi^2)/n (default: single items, pi = 1[u=v])."""
    c = hr_constant(eps)
    m2 = np.asarray(freqs, dtype=np.float64) if mean_pi_sq is None else np.asarray(mean_pi_sq)
    return scale**2 * (c * c - m2) / n
