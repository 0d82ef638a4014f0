"""The authors' blanket condition of FE1 (Luo, Wang, Yi, CCS 2022; ``hkustDB/SDPFE``,
``FE/fe.cpp`` ``Checker``/``Search`` and ``HHD/hhd.cpp`` ``SearchOptMu``).

X1, X2 ~ Bin(n, p) independent stand for the blanket messages consistent with x and with x'
(privacy loss ln((X1 + 1)/X2)). The authors' condition is

    sum_{x2 = 0..n} P[X2 = x2] P[X1 >= ceil(e^eps x2 - 1)] <= delta

(terms from the first x2 with ceil(e^eps x2 - 1) >= n on are dropped, as the C++ loop breaks
there), and the blanket mass is mu = p n for the smallest such p, found by the authors'
bisection: p in [0, 1000/n] (FE) or [0, 32 ln(2/delta)/(eps^2 n)] (HHD, which starts at the top
when that is >= 5000/n), stopped at width 0.1/n, the upper end returned. The bisection is
reproduced step for step so that mu matches their printed value (97.9614 at n = 10^5, eps = 1,
delta = 1e-10). This is the *authors'* sufficient condition, reported beside our exact
accountant (:mod:`protocols.almost_single.blanket`), never instead of it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom


def binomial_condition(p: float, n: int, eps: float) -> float:
    """The left-hand side of the authors' condition at blanket probability p (module docstring)."""
    if not (0 <= p <= 1 and n >= 1 and eps >= 0):
        raise ValueError(f"binomial_condition: bad arguments p={p}, n={n}, eps={eps}")
    x2 = np.arange(n + 1)
    x1 = np.maximum(0, np.ceil(math.exp(eps) * x2 - 1)).astype(np.int64)
    keep = x1 < n  # the C++ loop breaks at the first x1 >= n (x1 grows with x2)
    stop = int(np.argmin(keep)) if not keep.all() else n + 1
    x2, x1 = x2[:stop], x1[:stop]
    return float(binom.pmf(x2, n, p) @ binom.sf(x1 - 1, n, p))


def authors_mu(eps: float, delta: float, n: int, variant: str = "fe") -> float:
    """mu = p n for the authors' bisection on the binomial condition (module docstring);
    ``variant`` "fe" (FE/fe.cpp) or "hhd" (HHD/hhd.cpp: its own upper end)."""
    if not (eps > 0 and 0 < delta < 1 and int(n) == n and n >= 2):
        raise ValueError(
            f"authors_mu: need eps > 0, delta in (0, 1), n >= 2; got {eps}, {delta}, {n}"
        )
    n = int(n)
    lo, hi = 0.0, 1000.0 / n
    if variant == "hhd":
        hi = 32.0 * math.log(2 / delta) / eps**2 / n
        if hi * n >= 0.5e4:
            lo = hi
    elif variant != "fe":
        raise ValueError(f"authors_mu: variant must be 'fe' or 'hhd', got {variant!r}")
    hi = min(hi, 1.0)
    while lo + 0.1 / n < hi:
        mid = (lo + hi) * 0.5
        if binomial_condition(mid, n, eps) <= delta:
            hi = mid
        else:
            lo = mid
    return hi * n
