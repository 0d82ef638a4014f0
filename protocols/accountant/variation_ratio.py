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
from typing import Unpack

import numpy as np
from scipy import optimize, stats
from scipy.special import bdtrc

from protocols.accountant.mechanisms import MECHANISMS, Shape
from protocols.accountant.search import bisect_first_true, max_local_for_target


@dataclass(frozen=True)
class PairParams:
    """Dominating pair: target state probabilities (a0, a1) and clone rate r per bucket."""

    a0: float
    a1: float
    r: float

    @property
    def nu(self) -> float:
        """Probability that the target user is neutral (identical under both inputs)."""
        nu = 1.0 - self.a0 - self.a1
        return nu if nu > 1e-12 else 0.0  # rounding of a0 + a1 = 1 is not a neutral state


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


def _window(dist: stats.rv_discrete, top: int, tail: float) -> tuple[int, int]:
    """[lo, hi] with Pr[C < lo] <= tail and Pr[C > hi] <= tail.

    Starts from mean -/+ sqrt(2 ln(1/tail)) sd and widens until the exact binomial tails
    (cdf/sf, accurate far out) are below ``tail`` (scipy's ppf/isf are not, e.g.
    ``binom.isf(1e-18)`` may return the whole range).
    """
    mean, sd = float(dist.mean()), max(1.0, float(dist.std()))
    z = math.sqrt(2.0 * math.log(1.0 / tail))
    lo = int(max(0, math.floor(mean - z * sd)))
    hi = int(min(top, math.ceil(mean + z * sd)))
    step = max(1, int(sd / 2))
    while lo > 0 and dist.cdf(lo - 1) > tail:
        lo = max(0, lo - step)
    while hi < top and dist.sf(hi) > tail:
        hi = min(top, hi + step)
    return lo, hi


def _divergence_at(
    c: np.ndarray, eps: float, pair: PairParams, n: int, *, clip: bool = True
) -> np.ndarray:
    """Per clone count c, for an array of counts c.

    ``clip=False``: the contribution of c to P(S) - e^eps Q(S) with S the optimal region of the
    joint view (a, t); weighted by Pr[C = c] these sum to the exact divergence (single terms may
    be negative). ``clip=True``: the divergence when c is revealed to the observer (then t
    reveals whether the target is neutral, and the neutral part cancels): an upper bound on the
    joint one, equal to it when there is no neutral state, and non-increasing in c.
    """
    e = math.exp(eps)
    a0, a1, r, nu = pair.a0, pair.a1, pair.r, pair.nu
    cf = c.astype(np.float64)
    denom = (a0 - a1) * (1.0 + e)
    with_neutral = nu > 0.0 and not clip

    def threshold(t: np.ndarray) -> np.ndarray:
        neutral = nu * (n - t) / (1.0 - 2.0 * r) if with_neutral else 0.0
        return (t * (e * a0 - a1) + r * (e - 1.0) * neutral) / denom

    def region_mass(thr: np.ndarray, shift: int) -> np.ndarray:
        # Pr[A + shift >= thr], A ~ Bin(c, 1/2)
        return _sf_half(np.ceil(thr).astype(np.int64) - shift, c)

    thr1 = threshold(cf + 1.0)  # target non-neutral: t = c + 1
    s_plus = region_mass(thr1, 1)
    s_same = region_mass(thr1, 0)
    d = (a0 - e * a1) * s_plus + (a1 - e * a0) * s_same
    if with_neutral:
        s_neu = region_mass(threshold(cf), 0)  # target neutral: t = c
        d = d + (1.0 - e) * nu * s_neu
    return np.maximum(d, 0.0) if clip else d


def pair_delta(
    eps: float,
    pair: PairParams,
    n: int,
    *,
    tail: float = 1e-20,
    max_points: int = 1500,
) -> tuple[float, float]:
    """(lower, upper) bounds on delta(eps) of the dominating pair with n users.

    ``tail`` is the mass of C ~ Bin(n-1, 2r) left outside the evaluated window (added to the
    upper bound). Without a neutral target state the per-c terms are divergences, monotone in c,
    bucketed to at most ``max_points`` evaluations (exact when the window is smaller). With a
    neutral state the exact signed sum is evaluated at every c of the window (chunked).
    """
    if n < 2:
        raise ValueError(f"pair_delta: need n >= 2 users, got {n}")
    if eps < 0:
        raise ValueError(f"pair_delta: eps must be >= 0, got {eps}")
    rate = min(1.0, 2.0 * pair.r)
    dist = stats.binom(n - 1, rate)
    lo, hi = _window(dist, n - 1, tail)
    mass_left = float(dist.cdf(lo - 1))
    mass_right = float(dist.sf(hi))
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    grid = np.arange(lo, hi + 1, width, dtype=np.int64)
    if grid[-1] != hi:
        grid = np.append(grid, hi)
    dvals = _divergence_at(grid, eps, pair, n, clip=True)
    cdf_before = dist.cdf(grid - 1)  # Pr[C < g]
    bucket_mass = np.maximum(np.diff(np.append(cdf_before, 1.0 - mass_right)), 0.0)
    # D non-increasing in c: a bucket's left end bounds it from above, the next point below
    upper = float(np.dot(bucket_mass, dvals) + mass_left + mass_right * dvals[-1])
    lower_d = dvals if width == 1 else np.append(dvals[1:], dvals[-1])
    return float(np.dot(bucket_mass, lower_d)), upper


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
    return bisect_first_true(lambda y: fn(y) <= delta, min(left, x), x, rel_tol)


def _lower_search(
    d_lo: Callable[[float], float], delta: float, hi: float, rel_tol: float
) -> float | None:
    """Largest x (to rel_tol) with d_lo(x) > delta in [0, hi], given d_lo(hi) <= delta.

    The lower and upper delta bounds are close, so the bracket [hi (1 - 1e-3), hi] is tried
    first; None when the lower bound is not available (NaN).
    """
    if d_lo(hi) > delta:
        return hi  # the lower bound already exceeds delta at the top of the range
    near = hi * (1 - 1e-3)
    v = d_lo(near)
    if math.isnan(v):
        return None
    if v > delta:
        left = near
    elif d_lo(0.0) > delta:
        left = 0.0
    else:
        return 0.0

    def g(x: float) -> float:
        return math.log(max(d_lo(x), 1e-300)) - math.log(delta)

    x = optimize.brentq(g, left, hi, xtol=1e-12, rtol=rel_tol / 4, maxiter=100)
    x = max(left, x * (1 - rel_tol / 2))
    while x > left and d_lo(x) <= delta:
        x = max(left, x - rel_tol * x)
    return x


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
    cache: dict[float, tuple[float, float]] = {}

    def both(x: float) -> tuple[float, float]:
        if x not in cache:
            cache[x] = pair_delta(x, pair, n, tail=tail, max_points=max_points)
        return cache[x]

    def d_up(x: float) -> float:
        return both(x)[1]

    def d_lo(x: float) -> float:
        return both(x)[0]

    top = eps_local * (1 - 1e-9)
    up: float | None = None
    if d_up(top) <= delta:
        # bracket around a closed-form guess (strong-clone style), then Brent on log delta
        e0 = math.exp(eps_local)
        guess = math.log1p(
            (e0 - 1) / (e0 + 1) * math.sqrt(16 * math.log(4 / delta) / (2 * pair.r * (n - 1)))
        )
        x_hi = min(top, max(guess, 1e-12))
        x_lo = 0.0
        while d_up(x_hi) > delta:
            x_lo, x_hi = x_hi, min(top, 2 * x_hi)
        if x_lo == 0.0:
            x_lo = x_hi / 2
            while x_lo > 1e-9 and d_up(x_lo) <= delta:
                x_hi, x_lo = x_lo, x_lo / 2
            if x_lo <= 1e-9:
                x_lo = 0.0
        up = _threshold_search(d_up, delta, x_lo, x_hi, rel_tol)
        if up >= top * (1 - 1e-4):
            up = None  # within the search tolerance of eps_local: no amplification
    low = None
    if lower:
        low = _lower_search(d_lo, delta, eps_local if up is None else up, rel_tol)
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

    Feasibility is ``delta_upper(eps_central (1 - 1e-4)) <= delta``, assumed monotone in
    eps_local: certified a hair below the target, so that the forward bound (a root located
    from above to a relative 2e-5) states at most eps_central for the result. eps_local =
    eps_central is always feasible (no amplification needed).
    """
    tail = delta * 1e-6
    target = eps_central * (1.0 - 1e-4)

    def ok(eps_l: float) -> bool:
        if eps_l <= eps_central:
            return True
        return pair_delta(target, pair_of(eps_l), n, tail=tail, max_points=max_points)[1] <= delta

    return max_local_for_target(ok, eps_central, cap=cap, abs_tol=abs_tol)


def vr_epsilon(
    eps_local: float, n: int, delta: float, mechanism: str = "generic", **shape: Unpack[Shape]
) -> tuple[float | None, float | None]:
    """(lower, upper) central epsilon by the variation-ratio bound; upper None = none."""
    params = vr_parameters(eps_local, mechanism, **shape)
    return pair_epsilon(eps_local, params.pair(), n, delta)


def vr_max_local_epsilon(
    eps_central: float, n: int, delta: float, mechanism: str = "generic", **shape: Unpack[Shape]
) -> float:
    """Largest local epsilon that the variation-ratio bound amplifies to eps_central."""
    return pair_max_local_epsilon(
        eps_central,
        lambda e: vr_parameters(e, mechanism, **shape).pair(),
        n,
        delta,
    )
