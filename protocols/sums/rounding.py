"""Unbiased randomized rounding to precision p, and its exact variance.

x in [0, 1] becomes floor(p x) + Bernoulli(p x - floor(p x)), an integer in [0, p] with mean
p x (:func:`protocols.summation.split_mix.randomized_rounding`, reused) and variance
f (1 - f), f = frac(p x). The sum of the rounded values divided by p estimates sum x without bias.
"""

from __future__ import annotations

import numpy as np

from protocols.summation.split_mix import check_unit_values, randomized_rounding

__all__ = ["check_unit_values", "randomized_rounding", "rounding_variance"]


def rounding_variance(x: np.ndarray, precision: int) -> float:
    """Exact variance of sum(round_p(x))/p: sum f (1 - f) / p^2, f = frac(p x)."""
    if int(precision) != precision or precision < 1:
        raise ValueError(f"rounding: precision must be an integer >= 1, got {precision}")
    y = np.asarray(x, dtype=np.float64) * precision
    f = y - np.floor(y)
    return float(np.sum(f * (1 - f)) / precision**2)
