"""Consistency post-processing of frequency estimates (HP-SDP's POP, Wang et al.'s Norm-Sub).

- ``nonnegative``: clip negative estimates to zero (Base-Cut).
- ``project_simplex``: exact Euclidean projection onto {f >= 0, sum f = total} by sorting:
  with f sorted decreasingly, rho = the largest k with f_(k) - (sum_{i<=k} f_(i) - total)/k > 0,
  tau = (sum_{i<=rho} f_(i) - total)/rho and the result max(f - tau, 0). O(d log d),
  vectorized over leading axes.
- ``norm_sub``: the iterative variant (HP-SDP Eq. 22 / Norm-Sub): subtract the mean excess from
  the positive set, drop entries that become negative, repeat. It reaches the same optimum.
- ``norm_add`` (shift every entry by the same amount to sum to ``total``; keeps negatives) and
  ``norm_mul`` (clip negatives, then rescale), the other consistency baselines of Wang et al.
  (NDSS 2020).
"""

from __future__ import annotations

import numpy as np


def nonnegative(est: np.ndarray) -> np.ndarray:
    """max(est, 0) elementwise."""
    return np.maximum(np.asarray(est, dtype=np.float64), 0.0)


def project_simplex(est: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Least-squares projection of each row (last axis) onto the scaled simplex."""
    if not total > 0:
        raise ValueError(f"project_simplex: total must be > 0, got {total}")
    f = np.asarray(est, dtype=np.float64)
    if f.shape[-1] == 0:
        raise ValueError("project_simplex: empty estimate")
    if not np.isfinite(f).all():
        raise ValueError("project_simplex: estimate contains NaN or infinity")
    u = -np.sort(-f, axis=-1)
    css = np.cumsum(u, axis=-1) - total
    k = np.arange(1, f.shape[-1] + 1, dtype=np.float64)
    cond = u - css / k > 0
    rho = f.shape[-1] - np.argmax(cond[..., ::-1], axis=-1)  # last index where cond holds, +1
    tau = np.take_along_axis(css, (rho - 1)[..., None], axis=-1) / rho[..., None]
    return np.maximum(f - tau, 0.0)


def norm_sub(est: np.ndarray, total: float = 1.0, max_iter: int | None = None) -> np.ndarray:
    """Iterative Norm-Sub on a 1-D estimate; equals ``project_simplex`` at convergence."""
    if not total > 0:
        raise ValueError(f"norm_sub: total must be > 0, got {total}")
    f = np.asarray(est, dtype=np.float64)
    if f.ndim != 1 or f.size == 0:
        raise ValueError(f"norm_sub: expects a non-empty 1-D estimate, got shape {f.shape}")
    active = np.ones(f.size, dtype=bool)
    out = f.copy()
    for _ in range(f.size if max_iter is None else max_iter):
        shift = (f[active].sum() - total) / active.sum()
        out = np.where(active, f - shift, 0.0)
        neg = active & (out < 0)
        if not neg.any():
            return out
        active &= ~neg
    raise ValueError("norm_sub: did not converge within max_iter iterations")


def norm_add(est: np.ndarray, total: float = 1.0) -> np.ndarray:
    """est + (total - sum est)/d along the last axis (may stay negative)."""
    f = np.asarray(est, dtype=np.float64)
    return f + (total - f.sum(axis=-1, keepdims=True)) / f.shape[-1]


def norm_mul(est: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Clip negatives to zero, then rescale to sum to ``total`` (uniform if all clipped)."""
    f = nonnegative(est)
    s = f.sum(axis=-1, keepdims=True)
    uniform = np.full_like(f, total / f.shape[-1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s > 0, f * total / s, uniform)
