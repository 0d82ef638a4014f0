"""Counting baselines of the survey's Fig. 7(a): local RR and the central Laplace/geometric.

- LDP: Boolean randomized response at eps_l = eps_c (no shuffler, no amplification): each user
  keeps its bit with probability e^eps/(e^eps + 1); the count estimate is
  :func:`protocols.counting.cnt_rr.rr_count_estimate` with lambda = 2/(e^eps + 1).
- Central DP: the trusted curator adds Laplace(1/eps) (the survey's CDP baseline) or two-sided
  geometric noise (integer counts) to the true count; sensitivity 1 under replace-one neighbours.
  The samplers are :mod:`protocols.oracles.central`'s (same names if they become exact).
"""

from __future__ import annotations

import math

import numpy as np

from protocols.catalogue.inputs import check_bits
from protocols.counting.cnt_rr import rr_bits, rr_count_estimate, rr_count_variance
from protocols.oracles.central import (
    geometric_mechanism,
    geometric_variance,
    laplace_mechanism,
    laplace_variance,
)


def ldp_rr_lambda(eps: float) -> float:
    """Uniform-replacement probability of eps-LDP Boolean RR, 2/(e^eps + 1)."""
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"LDP RR: eps must be finite and > 0, got {eps}")
    return 2.0 / (math.exp(eps) + 1.0)


def ldp_rr_count(bits: np.ndarray, eps: float, rng: np.random.Generator) -> float:
    """Count estimate of eps-LDP Boolean RR reports (no shuffle)."""
    x = check_bits(bits, "ldp_rr_count")
    lam = ldp_rr_lambda(eps)
    y = rr_bits(x, lam, rng)
    return rr_count_estimate(float(y.sum()), x.size, lam)


def ldp_rr_variance(n: int, eps: float) -> float:
    """Exact variance of :func:`ldp_rr_count`."""
    return rr_count_variance(n, ldp_rr_lambda(eps))


def central_laplace_count(bits: np.ndarray, eps: float, rng: np.random.Generator) -> float:
    """True count + Laplace(1/eps)."""
    x = check_bits(bits, "central_laplace_count")
    return float(laplace_mechanism(np.array([x.sum()], dtype=np.float64), 1.0, eps, rng)[0])


def central_geometric_count(bits: np.ndarray, eps: float, rng: np.random.Generator) -> float:
    """True count + two-sided geometric noise of ratio e^-eps."""
    x = check_bits(bits, "central_geometric_count")
    return float(geometric_mechanism(np.array([x.sum()], dtype=np.int64), 1, eps, rng)[0])


def central_variances(eps: float) -> dict[str, float]:
    """Exact noise variances of the two central baselines."""
    return {"laplace": laplace_variance(1.0, eps), "geometric": geometric_variance(1, eps)}
