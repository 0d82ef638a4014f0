"""Variation-ratio amplification bound (Wang et al., VLDB 2024) and its numerical core.

Every bound computed here is the hockey-stick divergence of a *dominating pair*: a pair of
distributions (P, Q) of which the shuffled output on neighbouring datasets is a post-processing.
The pair is parametrised by

- the target user's three states: bucket 0 w.p. ``a0``, bucket 1 w.p. ``a1``, "neutral" w.p.
  ``nu = 1 - a0 - a1`` (Q swaps ``a0`` and ``a1``);
- each of the other ``n - 1`` users independently in bucket 0 w.p. ``r``, bucket 1 w.p. ``r``
  and neutral w.p. ``1 - 2r``.

The observer sees the counts ``(a, b)`` of buckets 0 and 1. With ``t = a + b`` the likelihood
ratio is ``(a0 a/r + a1 b/r + N) / (a1 a/r + a0 b/r + N)``, ``N = nu (n - t)/(1 - 2r)``, which is
increasing in ``a`` for fixed ``t``: the optimal region ``{P >= e^eps Q}`` is ``a >= L(t)``.
Conditioning on the number ``C ~ Bin(n-1, 2r)`` of non-neutral other users and writing
``A ~ Bin(C, 1/2)`` for how many of them are in bucket 0 gives

    delta(eps) = E_C[ D_C ],   D_c = P_c(S) - e^eps Q_c(S),

evaluated for all c at once with the binomial survival function (scipy ``bdtrc``). By symmetry
of the pair, D(P||Q) = D(Q||P), so one direction suffices.

Speed-up with rigour: D_c is non-increasing in c (turning one neutral user into a clone is a
post-processing of the view, so data processing applies), so on a bucket ``[g_i, g_{i+1})`` of c
values D_c lies between D at its two ends. Weighting bucket masses by the left end gives an upper
bound, by the right end a lower bound; the mass of C outside the evaluated window is added to the
upper bound with D <= 1. Bucket width 1 is exact; the default caps the number of evaluated c at
``max_points`` whatever n is, which keeps one bound at n = 1e6 well under a second.

Parameters (p, beta, q) of a randomizer: ``p = e^eps`` bounds the likelihood ratio between two
inputs, ``beta`` bounds their total-variation distance, ``q`` bounds the variation ratio against
any third input. Then ``alpha = beta/(p-1)``, ``a0 = p alpha``, ``a1 = alpha`` and
``r = alpha p / q``. The FMT21 clone pair is the special case ``a0 = e^eps/(e^eps+1)``,
``a1 = 1/(e^eps+1)``, ``r = e^-eps / 2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats
from scipy.special import bdtrc

MECHANISMS = ("grr", "olh", "oue", "sue", "hadamard", "generic")


@dataclass(frozen=True)
class PairParams:
    """Dominating pair: target state probabilities (a0, a1) and clone rate r per bucket."""

    a0: float
    a1: float
    r: float

    @property
    def nu(self) -> float:
        """Probability that the target user is neutral (identical under both inputs)."""
        return max(0.0, 1.0 - self.a0 - self.a1)


@dataclass(frozen=True)
class VRParams:
    """Variation-ratio parameters (p, beta, q) of a local randomizer."""

    p: float
    beta: float
    q: float

    def pair(self) -> PairParams:
        """The dominating pair these parameters define."""
        alpha = self.beta / (self.p - 1.0)
        return PairParams(a0=self.p * alpha, a1=alpha, r=alpha * self.p / self.q)


def vr_parameters(
    eps: float,
    mechanism: str = "generic",
    *,
    k: int | None = None,
    g: int | None = None,
    d: int | None = None,
) -> VRParams:
    """(p, beta, q) of an eps-LDP randomizer (p = q = e^eps for all mechanisms here).

    beta is the total-variation distance between the outputs on two inputs:
    grr: (e^eps-1)/(e^eps+k-1); olh: (e^eps-1)/(e^eps+g-1) (collisions ignored: an upper
    bound); sue: (e^(eps/2)-1)/(e^(eps/2)+1) (two bits differ); oue and hadamard (one bit of a
    Hadamard row, half the rows differ): (e^eps-1)/(2(e^eps+1)); generic: (e^eps-1)/(e^eps+1),
    i.e. the FMT23 "stronger clone" (see the erratum caveat in ``protocols.accountant``).
    """
    if not eps > 0 or not math.isfinite(eps):
        raise ValueError(f"vr_parameters: local epsilon must be finite and > 0, got {eps}")
    e = math.exp(eps)
    if mechanism == "grr":
        if k is None or k < 2:
            raise ValueError(f"vr_parameters: mechanism 'grr' needs a domain size k >= 2, got {k}")
        beta = (e - 1) / (e + k - 1)
    elif mechanism == "olh":
        if g is None or g < 2:
            raise ValueError(f"vr_parameters: mechanism 'olh' needs a hash range g >= 2, got {g}")
        beta = (e - 1) / (e + g - 1)
    elif mechanism == "sue":
        s = math.exp(eps / 2)
        beta = (s - 1) / (s + 1)
    elif mechanism in ("oue", "hadamard"):
        beta = (e - 1) / (2 * (e + 1))
    elif mechanism == "generic":
        beta = (e - 1) / (e + 1)
    else:
        raise ValueError(f"vr_parameters: unknown mechanism {mechanism!r}; expected {MECHANISMS}")
    return VRParams(p=e, beta=beta, q=e)


def _sf_half(m: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Pr[Bin(c, 1/2) >= m] elementwise for integer arrays m, c."""
    out = np.where(m <= 0, 1.0, 0.0)
    mid = (m > 0) & (m <= c)
    if mid.any():
        out[mid] = bdtrc(m[mid] - 1, c[mid], 0.5)
    return out


def _divergence_at(
    c: np.ndarray, eps: float, pair: PairParams, n: int, *, clip: bool = True
) -> np.ndarray:
    """Contribution of clone count c to P(S) - e^eps Q(S), for an array of counts c.

    ``clip=False``: S is the optimal region of the joint view (a, t); the signed sum of these
    terms weighted by Pr[C = c] is the exact divergence. ``clip=True``: max(0, .) per c, i.e.
    the divergence when c is revealed to the observer: an upper bound, exact when the target is
    never neutral (then t = c + 1 reveals c anyway), and non-increasing in c.
    """
    e = math.exp(eps)
    a0, a1, r, nu = pair.a0, pair.a1, pair.r, pair.nu
    cf = c.astype(np.float64)
    denom = (a0 - a1) * (1.0 + e)

    def threshold(t: np.ndarray) -> np.ndarray:
        neutral = 0.0 if nu == 0.0 else nu * (n - t) / (1.0 - 2.0 * r)
        return (t * (e * a0 - a1) + r * (e - 1.0) * neutral) / denom

    def region_mass(thr: np.ndarray, shift: int) -> np.ndarray:
        # Pr[A + shift >= thr], A ~ Bin(c, 1/2)
        return _sf_half(np.ceil(thr).astype(np.int64) - shift, c)

    t1 = cf + 1.0  # target non-neutral
    s_plus = region_mass(threshold(t1), 1)
    s_same = region_mass(threshold(t1), 0)
    p_s = a0 * s_plus + a1 * s_same
    q_s = a1 * s_plus + a0 * s_same
    if nu > 0.0:
        s_neu = region_mass(threshold(cf), 0)  # target neutral: t = c
        p_s = p_s + nu * s_neu
        q_s = q_s + nu * s_neu
    d = p_s - e * q_s
    return np.maximum(d, 0.0) if clip else d


def pair_delta(
    eps: float,
    pair: PairParams,
    n: int,
    *,
    tail: float = 1e-20,
    max_points: int = 1500,
    exact_points: int = 40_000,
) -> tuple[float, float]:
    """(lower, upper) bounds on delta(eps) of the dominating pair with n users.

    ``tail`` is the mass of C ~ Bin(n-1, 2r) left outside the evaluated window (added to the
    upper bound). Without a neutral target state the per-c terms are divergences, monotone in c,
    and are bucketed to at most ``max_points`` evaluations. With a neutral state the exact
    signed sum is evaluated at every c when the window has at most ``exact_points`` counts;
    beyond that the upper bound reveals c to the observer (bucketed, rigorous but looser) and
    the lower bound is NaN (not available).
    """
    if n < 2:
        raise ValueError(f"pair_delta: need n >= 2 users, got {n}")
    if eps < 0:
        raise ValueError(f"pair_delta: eps must be >= 0, got {eps}")
    rate = min(1.0, 2.0 * pair.r)
    dist = stats.binom(n - 1, rate)
    lo = int(max(0, dist.ppf(tail)))
    hi = int(min(n - 1, dist.isf(tail)))
    mass_left = float(dist.cdf(lo - 1))
    mass_right = float(dist.sf(hi))
    if pair.nu > 0.0 and hi - lo + 1 <= exact_points:
        c = np.arange(lo, hi + 1, dtype=np.int64)
        signed = float(np.dot(dist.pmf(c), _divergence_at(c, eps, pair, n, clip=False)))
        e = math.exp(eps)
        upper = signed + mass_left + mass_right
        lower = max(0.0, signed - e * (mass_left + mass_right))
        return lower, upper
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    grid = np.arange(lo, hi + 1, width, dtype=np.int64)
    if grid[-1] != hi:
        grid = np.append(grid, hi)
    dvals = _divergence_at(grid, eps, pair, n, clip=True)
    cdf_before = dist.cdf(grid - 1)  # Pr[C < g]
    bucket_mass = np.maximum(np.diff(np.append(cdf_before, 1.0 - mass_right)), 0.0)
    # D non-increasing in c: a bucket's left end bounds it from above, the next point below
    upper = float(np.dot(bucket_mass, dvals) + mass_left + mass_right * dvals[-1])
    if pair.nu > 0.0:
        return math.nan, upper
    lower_d = dvals if width == 1 else np.append(dvals[1:], dvals[-1])
    return float(np.dot(bucket_mass, lower_d)), upper


def _bisect(pred: Callable[[float], bool], lo: float, hi: float, rel_tol: float) -> float:
    """Smallest x in [lo, hi] with pred(x) True, assuming pred monotone (False..True)."""
    while hi - lo > rel_tol * max(hi, 1e-12):
        mid = 0.5 * (lo + hi)
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _threshold_search(
    fn: Callable[[float], float], delta: float, lo: float, hi: float, rel_tol: float
) -> float:
    """Smallest x in [lo, hi] (to rel_tol) with fn(x) <= delta, fn non-increasing.

    Brent's method on log fn brackets the crossing in a few evaluations; the answer is then
    checked (and, if needed, moved up by bisection) so that fn(answer) <= delta holds.
    """

    def g(x: float) -> float:
        return math.log(max(fn(x), 1e-300)) - math.log(delta)

    if g(lo) <= 0:
        return lo
    x = optimize.brentq(g, lo, hi, xtol=1e-12, rtol=rel_tol / 4, maxiter=100)
    step = max(x * rel_tol / 2, 1e-12)
    left = x
    while fn(x) > delta:
        left, x = x, min(hi, x + step)
        step *= 2
        if x >= hi:
            break
    # left has fn > delta (or is the Brent point); tighten between left and x
    return _bisect(lambda y: fn(y) <= delta, min(left, x), x, rel_tol)


def pair_epsilon(
    eps_local: float,
    pair: PairParams,
    n: int,
    delta: float,
    *,
    lower: bool = True,
    rel_tol: float = 2e-5,
    max_points: int = 1500,
) -> tuple[float | None, float | None]:
    """(lower, upper) central epsilon of the pair at this delta; upper None = no amplification.

    Upper: an eps with delta_upper(eps) <= delta, within rel_tol of the smallest such.
    Lower: an eps with delta_lower(eps) > delta (a lower bound on the pair's epsilon), or None
    when the lower bound is not available.
    """
    tail = delta * 1e-6

    def d_up(x: float) -> float:
        return pair_delta(x, pair, n, tail=tail, max_points=max_points)[1]

    def d_lo(x: float) -> float:
        return pair_delta(x, pair, n, tail=tail, max_points=max_points)[0]

    top = eps_local * (1 - 1e-9)
    if d_up(top) > delta:
        up = None
    else:
        up = _threshold_search(d_up, delta, 0.0, top, rel_tol)
        if up >= top * (1 - 1e-6):
            up = None  # the bound gives nothing below eps_local
    low = None
    if lower:
        hi = eps_local if up is None else up
        first = d_lo(0.0)
        if math.isnan(first):
            low = None
        elif first > delta:
            x = _threshold_search(d_lo, delta, 0.0, hi, rel_tol)
            # step back to a point where delta_lower > delta
            while x > 0 and d_lo(x) <= delta:
                x = max(0.0, x - rel_tol * max(x, 1e-6))
            low = x
        else:
            low = 0.0
    return low, up


def pair_max_local_epsilon(
    eps_central: float,
    pair_of: Callable[[float], PairParams],
    n: int,
    delta: float,
    *,
    abs_tol: float = 1e-4,
    cap: float = 60.0,
    max_points: int = 1500,
) -> float:
    """Largest local eps whose pair (``pair_of(eps_local)``) gives eps_central at delta.

    Feasibility is ``delta_upper(eps_central) <= delta``, assumed monotone in eps_local.
    eps_local = eps_central is always feasible (no amplification needed).
    """
    tail = delta * 1e-6

    def ok(eps_l: float) -> bool:
        if eps_l <= eps_central:
            return True
        return (
            pair_delta(eps_central, pair_of(eps_l), n, tail=tail, max_points=max_points)[1] <= delta
        )

    lo, hi = eps_central, max(2 * eps_central, eps_central + 1.0)
    while ok(hi):
        lo, hi = hi, 2 * hi
        if hi > cap:
            return cap if ok(cap) else _last_true(ok, lo, cap, abs_tol)
    return _last_true(ok, lo, hi, abs_tol)


def _last_true(ok: Callable[[float], bool], lo: float, hi: float, abs_tol: float) -> float:
    """Largest x in [lo, hi] with ok(x), given ok(lo) True and monotone (True..False)."""
    while hi - lo > abs_tol:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def vr_epsilon(
    eps_local: float,
    n: int,
    delta: float,
    mechanism: str = "generic",
    *,
    k: int | None = None,
    g: int | None = None,
    d: int | None = None,
) -> tuple[float | None, float | None]:
    """(lower, upper) central epsilon by the variation-ratio bound; upper None = none."""
    params = vr_parameters(eps_local, mechanism, k=k, g=g, d=d)
    return pair_epsilon(eps_local, params.pair(), n, delta)


def vr_max_local_epsilon(
    eps_central: float,
    n: int,
    delta: float,
    mechanism: str = "generic",
    *,
    k: int | None = None,
    g: int | None = None,
    d: int | None = None,
) -> float:
    """Largest local epsilon that the variation-ratio bound amplifies to eps_central."""
    return pair_max_local_epsilon(
        eps_central,
        lambda e: vr_parameters(e, mechanism, k=k, g=g, d=d).pair(),
        n,
        delta,
    )
