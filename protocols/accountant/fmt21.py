"""Feldman, McMillan, Talwar 2021, "Hiding among the clones": amplification for any eps-LDP
randomizer.

Numeric bound: the shuffled output of n users is a post-processing of the clone pair
``P = (A + D, C - A + 1 - D)``, ``Q = (A + 1 - D, C - A + D)`` with ``C ~ Bin(n-1, e^-eps0)``,
``A ~ Bin(C, 1/2)``, ``D ~ Bern(e^eps0/(e^eps0+1))``. Its hockey-stick divergence is computed
exactly per clone count (no step bucketing as in the public reference code) by the shared core
in :mod:`protocols.accountant.variation_ratio`, with rigorous bucketing only beyond
``max_points`` clone counts. The result is at or below the reference code's upper bound (which
evaluates the divergence at the ends of 100-wide buckets of C).

Closed form (FMT21 Thm 3.1, valid for eps0 <= ln(n / (16 ln(4/delta)))):
``eps = ln(1 + (e^eps0 - 1)/(e^eps0 + 1) * (8 sqrt(e^eps0 ln(4/delta)/n) + 8 e^eps0/n))``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from protocols.accountant.search import bisect_first_true, max_local_for_target
from protocols.accountant.variation_ratio import (
    PairParams,
    _divergence_at,
    pair_epsilon,
    pair_max_local_epsilon,
)


def clone_pair(eps_local: float) -> PairParams:
    """The FMT21 clone dominating pair for an eps_local-LDP randomizer."""
    if not eps_local > 0 or not math.isfinite(eps_local):
        raise ValueError(f"fmt21: local epsilon must be finite and > 0, got {eps_local}")
    e = math.exp(eps_local)
    return PairParams(a0=e / (e + 1.0), a1=1.0 / (e + 1.0), r=0.5 / e)


def fmt21_stepped_delta(eps: float, eps_local: float, n: int, step: int = 100) -> float:
    """Upper bound on delta(eps) with the public reference code's bucketing of C.

    Buckets of ``step`` clone counts laid out outward from E[C] (the first upper bucket holds
    step + 1 values), each charged its mass times D at its worse end, plus uncovered mass. This
    reproduces the published FMT21 numbers (e.g. 0.172 at n=1e5, eps0=4, delta=1e-6); it is a
    valid but looser bound than the exact per-count evaluation.
    """
    if step < 1:
        raise ValueError(f"fmt21: step must be >= 1, got {step}")
    pair = clone_pair(eps_local)
    rate = math.exp(-eps_local)
    mu = (n - 1) * rate
    nb = int(math.ceil(n / step))
    b = np.arange(1, nb, dtype=np.int64)
    up_hi = np.ceil(mu + b * step).astype(np.int64)
    up_lo = np.where(b == 1, up_hi - step, up_hi - step + 1)
    keep_up = up_lo <= n - 1
    dn_lo = np.ceil(mu - b * step).astype(np.int64)
    dn_hi = dn_lo + step - 1
    keep_dn = dn_hi >= 0
    los = np.concatenate([up_lo[keep_up], np.maximum(dn_lo[keep_dn], 0)])
    his = np.concatenate([np.minimum(up_hi[keep_up], n - 1), dn_hi[keep_dn]])
    dist = stats.binom(n - 1, rate)
    mass = dist.cdf(his) - dist.cdf(los - 1)
    d = np.maximum(_divergence_at(los, eps, pair, n), _divergence_at(his, eps, pair, n))
    return float(mass @ d + max(0.0, 1.0 - mass.sum()))


def fmt21_epsilon(
    eps_local: float, n: int, delta: float, *, step: int | None = None
) -> float | None:
    """Numeric FMT21 upper bound on the central epsilon; None when it gives no amplification.

    ``step=None`` evaluates the clone pair exactly (tightest); ``step=100`` reproduces the
    public reference code's bucketing (see ``fmt21_stepped_delta``).
    """
    if step is None:
        _, up = pair_epsilon(eps_local, clone_pair(eps_local), n, delta, lower=False)
        return up
    top = eps_local * (1 - 1e-9)
    if fmt21_stepped_delta(top, eps_local, n, step) >= delta:
        return None
    up = bisect_first_true(
        lambda x: fmt21_stepped_delta(x, eps_local, n, step) < delta, 0.0, top, 2e-5
    )
    return None if up >= top * (1 - 1e-4) else up


def fmt21_max_local_epsilon(
    eps_central: float, n: int, delta: float, *, step: int | None = None
) -> float:
    """Largest eps_local whose numeric FMT21 bound is at most eps_central (``step`` as above)."""
    if step is None:
        return pair_max_local_epsilon(eps_central, clone_pair, n, delta)

    def ok(e: float) -> bool:
        return e <= eps_central or fmt21_stepped_delta(eps_central, e, n, step) < delta

    return max_local_for_target(ok, eps_central, cap=60.0, abs_tol=1e-4)


def fmt21_closed_form(eps_local: float, n: int, delta: float) -> float | None:
    """FMT21 closed-form bound; None outside its validity regime eps0 <= ln(n/(16 ln(4/delta)))."""
    cap = n / (16.0 * math.log(4.0 / delta))
    if cap <= 1.0 or eps_local > math.log(cap):
        return None
    e = math.exp(eps_local)
    inner = 8.0 * math.sqrt(e * math.log(4.0 / delta) / n) + 8.0 * e / n
    return math.log1p((e - 1.0) / (e + 1.0) * inner)
