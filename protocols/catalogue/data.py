"""The survey's synthetic data (seed 004, section 7): Bernoulli(q) bits, a discretized normal over
[d] and a normal over [0, 1], each reproducible from a seed.

The survey gives no mean or spread for its normals; ours (stated in docs/survey.md):
- over [d]: round(N((d - 1)/2, (d/6)^2)) clipped to [0, d - 1] (about 0.3% of the mass clipped);
- over [0, 1]: N(0.5, 0.15^2) clipped to [0, 1] (about 0.1% clipped).
"""

from __future__ import annotations

import numpy as np

from protocols.rng import experiment_rng


def _n(n: int) -> int:
    if int(n) != n or n < 1:
        raise ValueError(f"synthetic data: n must be an integer >= 1, got {n}")
    return int(n)


def bernoulli_bits(n: int, q: float, seed: int) -> np.ndarray:
    """n i.i.d. Bernoulli(q) bits (int64)."""
    if not 0 <= q <= 1:
        raise ValueError(f"bernoulli_bits: q must lie in [0, 1], got {q}")
    rng = experiment_rng(seed, "seed004", "bits")
    return (rng.random(_n(n)) < q).astype(np.int64)


def normal_categorical(n: int, d: int, seed: int) -> np.ndarray:
    """n values in [0, d): a rounded N((d-1)/2, (d/6)^2), clipped."""
    if int(d) != d or d < 2:
        raise ValueError(f"normal_categorical: d must be an integer >= 2, got {d}")
    rng = experiment_rng(seed, "seed004", "categorical", int(d))
    x = np.rint(rng.normal((d - 1) / 2.0, d / 6.0, _n(n)))
    return np.clip(x, 0, d - 1).astype(np.int64)


def normal_unit(n: int, seed: int) -> np.ndarray:
    """n values in [0, 1]: N(0.5, 0.15^2), clipped."""
    rng = experiment_rng(seed, "seed004", "unit")
    return np.clip(rng.normal(0.5, 0.15, _n(n)), 0.0, 1.0)
