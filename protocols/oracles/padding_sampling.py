"""Padding-and-sampling for set-valued data (LDPMiner / GFIM §1.4): one item per user.

Set-valued data is held in CSR form: ``indptr`` (n + 1 offsets) and ``items`` (the items of
user i are ``items[indptr[i]:indptr[i+1]]``, distinct, in [0, d)). Each user pads its set to
exactly ``ell`` slots with dummies (or keeps a uniform ell-subset when it has more) and reports
one uniformly chosen slot, so item v is sampled with probability
``pi_i(v) = 1[v in S_i] min(1/ell, 1/|S_i|)``. Any frequency oracle then runs on the sampled
item; scaling its estimate by ell makes it unbiased for users with |S_i| <= ell (truncated
users are under-counted: E = ell * mean_i pi_i(v)).

Oracles provided here: GRR on d + 1 values (the dummy is value d) and Hadamard response (a
dummy sends a uniform bit), each with the exact variance in terms of mean pi and mean pi^2.
"""

from __future__ import annotations

import math

import numpy as np

from protocols.oracles.grr import grr_perturb, grr_probabilities
from protocols.oracles.hadamard_response import DUMMY, hr_constant, hr_estimate, hr_perturb


def csr_from_lists(sets: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, items) from a list of item lists."""
    sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    indptr = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    items = np.fromiter((x for s in sets for x in s), dtype=np.int64, count=int(indptr[-1]))
    return indptr, items


def _check_csr(indptr: np.ndarray, items: np.ndarray, d: int | None = None) -> None:
    if indptr.ndim != 1 or indptr.size < 1 or indptr[0] != 0 or indptr[-1] != items.size:
        raise ValueError("padding-sampling: indptr must start at 0 and end at len(items)")
    if (np.diff(indptr) < 0).any():
        raise ValueError("padding-sampling: indptr must be non-decreasing")
    if d is not None and items.size and (items.min() < 0 or items.max() >= d):
        raise ValueError(f"padding-sampling: items must lie in [0, {d})")


def length_percentile(sizes: np.ndarray, q: float = 0.9) -> int:
    """Smallest L such that at least a fraction q of users have |S_i| <= L."""
    s = np.sort(np.asarray(sizes, dtype=np.int64))
    if s.size == 0:
        raise ValueError("length_percentile: no users")
    if not 0 < q <= 1:
        raise ValueError(f"length_percentile: q must lie in (0, 1], got {q}")
    return int(s[math.ceil(q * s.size) - 1])


def pad_and_sample(
    indptr: np.ndarray, items: np.ndarray, ell: int, rng: np.random.Generator
) -> np.ndarray:
    """One sampled item per user (DUMMY = -1 when a padding slot is drawn), vectorized."""
    indptr = np.asarray(indptr, dtype=np.int64)
    items = np.asarray(items, dtype=np.int64)
    _check_csr(indptr, items)
    if ell < 1:
        raise ValueError(f"padding-sampling: ell must be >= 1, got {ell}")
    sizes = np.diff(indptr)
    u = rng.random(sizes.size)
    # sets larger than ell: a uniform slot of a uniform ell-subset is a uniform item
    slot = np.where(sizes > ell, np.floor(u * sizes), np.floor(u * ell)).astype(np.int64)
    real = slot < sizes
    out = np.full(sizes.size, DUMMY, dtype=np.int64)
    out[real] = items[indptr[:-1][real] + slot[real]]
    return out


def inclusion_moments(
    indptr: np.ndarray, items: np.ndarray, ell: int, d: int
) -> tuple[np.ndarray, np.ndarray]:
    """(mean_i pi_i(v), mean_i pi_i(v)^2) for every item v in [0, d)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    items = np.asarray(items, dtype=np.int64)
    _check_csr(indptr, items, d)
    sizes = np.diff(indptr)
    n = sizes.size
    w = 1.0 / np.maximum(sizes, ell).astype(np.float64)  # per-user pi for its items
    per_item = np.repeat(w, sizes)
    m1 = np.bincount(items, weights=per_item, minlength=d) / n
    m2 = np.bincount(items, weights=per_item**2, minlength=d) / n
    return m1, m2


def ps_grr_perturb(
    indptr: np.ndarray, items: np.ndarray, d: int, ell: int, eps: float, rng: np.random.Generator
) -> np.ndarray:
    """Sample one slot per user, then GRR on d + 1 values (dummy = d)."""
    sampled = pad_and_sample(indptr, items, ell, rng)
    if sampled.size and sampled.max() >= d:
        raise ValueError(f"padding-sampling: items must lie in [0, {d})")
    return grr_perturb(np.where(sampled == DUMMY, d, sampled), d + 1, eps, rng)


def ps_grr_estimate(reports: np.ndarray, d: int, ell: int, eps: float) -> np.ndarray:
    """ell-scaled unbiased item frequencies (items 0..d-1) from PS-GRR reports."""
    r = np.asarray(reports, dtype=np.int64)
    p, q = grr_probabilities(d + 1, eps)
    counts = np.bincount(r, minlength=d + 1)[:d].astype(np.float64)
    return ell * (counts / r.size - q) / (p - q)


def ps_grr_variance(
    mean_pi: np.ndarray, mean_pi_sq: np.ndarray, d: int, ell: int, eps: float, n: int
) -> np.ndarray:
    """Exact variance of ``ps_grr_estimate``: a user reports v w.p. r_i = q + pi_i (p - q)."""
    p, q = grr_probabilities(d + 1, eps)
    m1, m2 = np.asarray(mean_pi), np.asarray(mean_pi_sq)
    mean_r_1mr = q * (1 - q) + (p - q) * (1 - 2 * q) * m1 - (p - q) ** 2 * m2
    return ell**2 * mean_r_1mr / (n * (p - q) ** 2)


def ps_hadamard_perturb(
    indptr: np.ndarray, items: np.ndarray, m: int, ell: int, eps: float, rng: np.random.Generator
) -> np.ndarray:
    """Sample one slot per user, then one randomized Hadamard bit (dummy: a uniform bit)."""
    return hr_perturb(pad_and_sample(indptr, items, ell, rng), m, eps, rng)


def ps_hadamard_estimate(reports: np.ndarray, m: int, d: int, ell: int, eps: float) -> np.ndarray:
    """ell-scaled unbiased item frequencies from PS-Hadamard reports."""
    return hr_estimate(reports, m, eps, d, scale=float(ell))


def ps_hadamard_variance(mean_pi_sq: np.ndarray, ell: int, eps: float, n: int) -> np.ndarray:
    """Exact variance of ``ps_hadamard_estimate``: ell^2 (c^2 - mean pi^2) / n."""
    c = hr_constant(eps)
    return ell**2 * (c * c - np.asarray(mean_pi_sq)) / n
