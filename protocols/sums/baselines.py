"""Sum baselines of the survey's Fig. 7(c): Harmony (LDP) and the central Laplace mechanism.

Harmony (Nguyen, Xiao, Yang, Hui, Shin, Shin, 2016), for x in [0, 1]: t = 2x - 1 in [-1, 1] is
rounded to b = +1 with probability (1 + t)/2 (else -1), then b is kept with probability
e^eps/(e^eps + 1) (else flipped), and the user reports b' (e^eps + 1)/(e^eps - 1), an unbiased
estimate of t. Each report is eps-LDP (two outputs with ratio e^eps). Sum estimate
(sum t-hat + n)/2; variance per user ((e^eps+1)/(e^eps-1))^2 - t^2, over 4.

Central: sum x + Laplace(1/eps) (sensitivity 1), :mod:`protocols.oracles.central`'s sampler.
"""

from __future__ import annotations

import math

import numpy as np

from protocols.oracles.central import laplace_mechanism, laplace_variance
from protocols.sums.rounding import check_unit_values


def harmony_reports(x: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Every user's report in {-c, +c}, c = (e^eps + 1)/(e^eps - 1)."""
    v = check_unit_values(x, "harmony_reports")
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"Harmony: eps must be finite and > 0, got {eps}")
    t = 2 * v - 1
    b = np.where(rng.random(v.shape) < (1 + t) / 2, 1.0, -1.0)
    keep = rng.random(v.shape) < math.exp(eps) / (math.exp(eps) + 1)
    c = (math.exp(eps) + 1) / math.expm1(eps)
    return np.where(keep, b, -b) * c


def harmony_sum(x: np.ndarray, eps: float, rng: np.random.Generator) -> float:
    """Unbiased sum estimate from Harmony reports."""
    r = harmony_reports(x, eps, rng)
    return float((r.sum() + r.size) / 2)


def harmony_variance(x: np.ndarray, eps: float) -> float:
    """Exact variance of :func:`harmony_sum`."""
    t = 2 * check_unit_values(x, "harmony_variance") - 1
    c = (math.exp(eps) + 1) / math.expm1(eps)
    return float(np.sum(c * c - t * t) / 4)


def central_laplace_sum(x: np.ndarray, eps: float, rng: np.random.Generator) -> float:
    """sum x + Laplace(1/eps)."""
    v = check_unit_values(x, "central_laplace_sum")
    return float(laplace_mechanism(np.array([v.sum()]), 1.0, eps, rng)[0])


def central_laplace_sum_variance(eps: float) -> float:
    """2/eps^2."""
    return laplace_variance(1.0, eps)
