"""Central-model baselines: Laplace and two-sided geometric (discrete Laplace) mechanisms.

Laplace: x + Lap(Delta/eps) is eps-DP for L1 sensitivity Delta; variance 2 (Delta/eps)^2.
Geometric: for integer x, x + G1 - G2 with G1, G2 i.i.d. geometric on {0, 1, ...} of ratio
alpha = e^(-eps/Delta) gives Pr[noise = z] = (1-alpha)/(1+alpha) alpha^|z|, eps-DP for integer
sensitivity Delta; variance 2 alpha / (1 - alpha)^2.
"""

from __future__ import annotations

import math

import numpy as np


def _check(eps: float, sensitivity: float) -> None:
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"central mechanism: eps must be finite and > 0, got {eps}")
    if not sensitivity > 0:
        raise ValueError(f"central mechanism: sensitivity must be > 0, got {sensitivity}")


def laplace_mechanism(
    values: np.ndarray, sensitivity: float, eps: float, rng: np.random.Generator
) -> np.ndarray:
    """values + i.i.d. Laplace(sensitivity/eps) noise."""
    _check(eps, sensitivity)
    x = np.asarray(values, dtype=np.float64)
    return x + rng.laplace(0.0, sensitivity / eps, size=x.shape)


def laplace_variance(sensitivity: float, eps: float) -> float:
    """Variance of the Laplace noise: 2 (sensitivity/eps)^2."""
    _check(eps, sensitivity)
    return 2.0 * (sensitivity / eps) ** 2


def geometric_mechanism(
    values: np.ndarray, sensitivity: int, eps: float, rng: np.random.Generator
) -> np.ndarray:
    """Integer values + two-sided geometric noise of ratio e^(-eps/sensitivity)."""
    _check(eps, sensitivity)
    if int(sensitivity) != sensitivity:
        raise ValueError(f"geometric mechanism: sensitivity must be an integer, got {sensitivity}")
    x = np.asarray(values)
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"geometric mechanism: values must be integers, got dtype {x.dtype}")
    p = -math.expm1(-eps / sensitivity)  # success probability 1 - alpha
    g1 = rng.geometric(p, size=x.shape) - 1
    g2 = rng.geometric(p, size=x.shape) - 1
    return x.astype(np.int64) + g1 - g2


def geometric_variance(sensitivity: int, eps: float) -> float:
    """Variance of the two-sided geometric noise: 2 alpha/(1-alpha)^2."""
    _check(eps, sensitivity)
    alpha = math.exp(-eps / sensitivity)
    return 2.0 * alpha / (1.0 - alpha) ** 2
