"""Sample complexity of the uniformity testers: the smallest n reaching a stated power.

The alternative is Paninski's: pi_v = (1 + 2 alpha s_v)/k with s_v = +1 on even and -1 on odd v,
at total-variation distance alpha from uniform (the hard instance of the literature). For every n
on a geometric grid the tester is built for n users (its public null threshold at level
``size``), and its power is estimated from ``draws`` draws of the exact law of its input (the
multinomial bin counts plus the protocol's noise, :meth:`sample_statistic`). The reported n is the
first grid point whose power reaches ``power``. ``nonprivate`` gives the same search for the
collision test on exact counts (the utility cost of privacy is the ratio of the two).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def paninski(k: int, alpha: float) -> np.ndarray:
    """The alternative at TV distance alpha from uniform on [k] (k even)."""
    if k % 2 or not 0 < alpha <= 0.5:
        raise ValueError(f"paninski: need even k and alpha in (0, 1/2], got {k}, {alpha}")
    s = np.where(np.arange(k) % 2 == 0, 1.0, -1.0)
    return (1 + 2 * alpha * s) / k


def bin_distribution(pi: np.ndarray, partition: np.ndarray, bins: int) -> np.ndarray:
    """The law of the bin of a value drawn from pi."""
    return np.bincount(partition, weights=pi, minlength=bins)


def _nonprivate_stat(counts: np.ndarray, n: int) -> np.ndarray:
    b = counts.shape[-1]
    return np.sum((counts - n / b) ** 2, axis=-1) - n * (1 - 1 / b)


def nonprivate_power(k: int, pi: np.ndarray, n: int, size: float, draws: int, seed: int) -> float:
    """Power of the collision test on exact counts at level ``size``."""
    rng = np.random.default_rng(seed)
    null = _nonprivate_stat(rng.multinomial(n, np.full(k, 1 / k), size=draws).astype(float), n)
    tau = np.quantile(null, 1 - size)
    alt = _nonprivate_stat(rng.multinomial(n, pi, size=draws).astype(float), n)
    return float(np.mean(alt > tau))


def tester_power(tester: Any, pi_values: np.ndarray, draws: int, seed: int) -> float:
    """Power of a built tester against the value distribution ``pi_values`` over [k]."""
    rng = np.random.default_rng(seed)
    pib = bin_distribution(pi_values, tester.partition, tester.bins)
    t = tester.sample_statistic(pib, tester.n, rng, draws)
    return float(np.mean(t > tester.threshold))


def sample_complexity(
    build: Callable[[int], Any] | None,
    k: int,
    alpha: float,
    *,
    power: float = 0.9,
    size: float = 0.1,
    ns: np.ndarray | None = None,
    draws: int = 400,
    seed: int = 0,
) -> dict[str, Any]:
    """First n on the grid where the tester (``build(n)``; None = non-private) has the power."""
    grid = ns if ns is not None else np.unique(np.geomspace(50, 1e7, 46).astype(np.int64))
    pi = paninski(k, alpha)
    table = []
    for n in grid:
        n = int(n)
        try:
            pw = (
                nonprivate_power(k, pi, n, size, draws, seed)
                if build is None
                else tester_power(build(n), pi, draws, seed)
            )
        except ValueError as exc:  # the private counter is infeasible at this n
            table.append({"n": n, "power": None, "note": str(exc)})
            continue
        table.append({"n": n, "power": pw})
        if pw >= power:
            return {"n": n, "power": pw, "grid": table}
    return {"n": None, "power": None, "grid": table}
