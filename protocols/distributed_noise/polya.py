"""Distributed symmetric geometric noise from Polya differences (survey Theorem 8).

If each of m users adds G+ - G- with G+, G- ~ Polya(r, alpha) = NegativeBinomial(r, alpha)
(failures before r successes of probability 1 - alpha), the total is NB(m r) - NB(m r). With
r = 1/m0 and m >= m0 users the total is NB(R) - NB(R) with R = m/m0 >= 1: the symmetric geometric
(discrete Laplace) noise SG with Pr[z] ~ alpha^|z| plus independent extra noise, so adding it to
an integer sum of sensitivity Delta with alpha = exp(-eps/Delta) is eps-DP (Ghosh et al.'s
geometric mechanism and post-processing). m0 = ceil(gamma N) calibrates for a fraction gamma of
honest users (robust shuffle privacy, Def. 4 of the survey).

With fewer users (R < 1) the noise is still NB(R) - NB(R), whose pure epsilon per unit shift is
computed by :func:`nb_difference_epsilon`: the exact log-ratio max over a window |k| <= K plus a
rigorous bound outside it. For k >= 0, Pr[D=k]/Pr[D=k+1] is a weighted average of the
NB ratios (m+1)/((m+R) alpha), m >= k, which for R <= 1 decrease in m; so every ratio beyond K is
at most (K+1)/((K+R) alpha) (and at least 1/alpha > 1); by symmetry the same holds for k < 0.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

WINDOW = 400  # |k| evaluated exactly by nb_difference_epsilon


def _check(r: float, alpha: float) -> None:
    if not (r > 0 and math.isfinite(r)):
        raise ValueError(f"Polya noise: shape r must be finite and > 0, got {r}")
    if not 0 < alpha < 1:
        raise ValueError(f"Polya noise: alpha must lie in (0, 1), got {alpha}")


def nb_difference_pmf(r: float, alpha: float, k: np.ndarray) -> np.ndarray:
    """Pr[A - B = k] for A, B i.i.d. NB(r, alpha), by a convolution truncated at 1e-300 mass."""
    _check(r, alpha)
    nb = stats.nbinom(r, 1 - alpha)
    top = int(nb.isf(1e-300)) + 2 + int(np.max(np.abs(k)))
    j = np.arange(top + 1)
    pj = nb.pmf(j)
    k = np.asarray(k, dtype=np.int64)
    out = np.empty(k.shape, dtype=np.float64)
    for i, kk in enumerate(np.abs(k).ravel()):  # symmetric: Pr[k] = Pr[-k]
        out.ravel()[i] = float(np.dot(pj[kk:], pj[: top + 1 - kk]))
    return out


def nb_difference_epsilon(r: float, alpha: float) -> float:
    """Pure epsilon of a unit shift of NB(r, alpha) - NB(r, alpha) noise (module docstring).

    For r >= 1 this is ln(1/alpha) (an upper bound, exact at r = 1).
    """
    _check(r, alpha)
    if r >= 1:
        return math.log(1 / alpha)
    k = np.arange(-WINDOW, WINDOW + 1)
    p = nb_difference_pmf(r, alpha, k)
    lp = np.log(p)
    inner = float(np.max(np.abs(np.diff(lp))))
    tail = math.log((WINDOW + 1) / ((WINDOW + r) * alpha))
    return max(inner, tail)


def nb_tail_bound(r: float, alpha: float, sigma: int) -> int:
    """Smallest B with Pr[|NB(r) - NB(r)| > B] <= 2^-sigma, via Pr[|A - B| > t] <= 2 Pr[A > t]."""
    _check(r, alpha)
    if sigma < 1:
        raise ValueError(f"Polya noise: sigma must be >= 1, got {sigma}")
    nb = stats.nbinom(r, 1 - alpha)
    target = -(sigma + 1) * math.log(2)  # log of 2^-sigma / 2
    lo, hi = 0, 1
    while nb.logsf(hi) > target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if nb.logsf(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def sg_variance(alpha: float, r_total: float = 1.0) -> float:
    """Variance of NB(R) - NB(R) noise, 2 R alpha/(1 - alpha)^2 (R = 1: discrete Laplace)."""
    _check(r_total, alpha)
    return 2.0 * r_total * alpha / (1 - alpha) ** 2
