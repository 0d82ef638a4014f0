"""Central-model baselines: Laplace on a stated grid and two-sided geometric, with exact noise.

No floating-point Laplace (Mironov, CCS 2012: the textbook ``x + Lap(b)`` in doubles leaks
through the pattern of representable outputs). Both mechanisms add exact integer noise
(:func:`protocols.oracles.discrete_noise.discrete_laplace`, Canonne-Kamath-Steinke 2020):

* **Geometric** (integer values, integer sensitivity Delta): x + Z with
  Pr[Z = z] = (1-a)/(1+a) a^|z|, a = e^(-eps/Delta): eps-DP; variance 2a/(1-a)^2.
* **Laplace on a grid** (real values): the grid is g = Delta / 2^GRID_BITS (``grid_bits``
  stated, default 10). Each value is mapped to the grid, r(x) = floor(x/g + 1/2) (monotone and
  shift-equivariant, so |r(x) - r(x')| <= Delta/g whenever |x - x'| <= Delta; one more grid step
  is allowed for the floating-point rounding of x/g), then the integer noise of the geometric
  mechanism with sensitivity Delta/g + 1 grid units is added and the result is g times an
  integer: (eps)-DP for L1 sensitivity Delta per coordinate. Its variance is g^2 times the
  discrete Laplace variance, (1 + 2^-GRID_BITS)^2 2 (Delta/eps)^2 up to O(g^2).

Public names are kept (``laplace_mechanism``, ``laplace_variance``, ``geometric_mechanism``,
``geometric_variance``); the variances are those of the noise actually added.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from protocols.oracles.discrete_noise import discrete_laplace, discrete_laplace_variance

GRID_BITS = 10


def _check(eps: float, sensitivity: float) -> None:
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"central mechanism: eps must be finite and > 0, got {eps}")
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(
            f"central mechanism: sensitivity must be finite and > 0, got {sensitivity}"
        )


def laplace_grid(sensitivity: float, grid_bits: int = GRID_BITS) -> float:
    """The grid g = sensitivity / 2^grid_bits the Laplace mechanism's outputs lie on."""
    if grid_bits < 0:
        raise ValueError(f"laplace grid: grid_bits must be >= 0, got {grid_bits}")
    return sensitivity / (1 << grid_bits)


def _grid_scale(sensitivity: float, eps: float, grid_bits: int) -> Fraction:
    """Noise scale in grid units: (2^grid_bits + 1) / eps."""
    return Fraction((1 << grid_bits) + 1) / Fraction(eps)


def laplace_mechanism(
    values: np.ndarray,
    sensitivity: float,
    eps: float,
    rng: np.random.Generator,
    grid_bits: int = GRID_BITS,
) -> np.ndarray:
    """values mapped to the grid plus exact discrete Laplace noise (module docstring): eps-DP
    for L1 sensitivity ``sensitivity``; float64 outputs, each an integer multiple of the grid."""
    _check(eps, sensitivity)
    x = np.asarray(values, dtype=np.float64)
    if not np.isfinite(x).all():
        raise ValueError("laplace mechanism: values must be finite")
    g = laplace_grid(sensitivity, grid_bits)
    units = np.floor(x / g + 0.5).astype(np.int64)
    noise = discrete_laplace(_grid_scale(sensitivity, eps, grid_bits), x.shape, rng)
    return (units + noise).astype(np.float64) * g


def laplace_variance(sensitivity: float, eps: float, grid_bits: int = GRID_BITS) -> float:
    """Variance of the noise :func:`laplace_mechanism` adds (about 2 (sensitivity/eps)^2)."""
    _check(eps, sensitivity)
    g = laplace_grid(sensitivity, grid_bits)
    return g * g * discrete_laplace_variance(_grid_scale(sensitivity, eps, grid_bits))


def geometric_mechanism(
    values: np.ndarray, sensitivity: int, eps: float, rng: np.random.Generator
) -> np.ndarray:
    """Integer values + exact two-sided geometric noise of ratio e^(-eps/sensitivity)."""
    _check(eps, sensitivity)
    if int(sensitivity) != sensitivity:
        raise ValueError(f"geometric mechanism: sensitivity must be an integer, got {sensitivity}")
    x = np.asarray(values)
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"geometric mechanism: values must be integers, got dtype {x.dtype}")
    scale = Fraction(int(sensitivity)) / Fraction(eps)
    return x.astype(np.int64) + discrete_laplace(scale, x.shape, rng)


def geometric_variance(sensitivity: int, eps: float) -> float:
    """Variance of the two-sided geometric noise: 2 alpha/(1-alpha)^2, alpha = e^(-eps/sens)."""
    _check(eps, sensitivity)
    return discrete_laplace_variance(Fraction(int(sensitivity)) / Fraction(eps))
