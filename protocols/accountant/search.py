"""Root finding shared by the numeric bounds: eps from delta (forward) and eps_local from a
target eps_central (inverse), on rigorous (lower, upper) delta brackets.

Forward: the reported upper epsilon is a point where the *upper* delta bound is <= delta (checked
there, not interpolated); the reported lower epsilon is a point where the *lower* delta bound is
still > delta. Inverse: the returned local epsilon is one at which the forward upper delta at the
target eps_central was evaluated and found <= delta, and never below eps_central (an eps-LDP
randomizer is (eps, 0)-DP after shuffling, by post-processing).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy import optimize

DeltaPair = Callable[[float], tuple[float, float]]


def _bisect(
    pred: Callable[[float], bool], lo: float, hi: float, rel: float, abs_tol: float
) -> tuple[float, float]:
    """The one bisection loop: shrink [lo, hi] (pred False at lo's side, True at hi's side)
    until it is at most max(abs_tol, rel * hi) wide."""
    while hi - lo > max(abs_tol, rel * max(hi, 1e-12)):
        mid = 0.5 * (lo + hi)
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def bisect_first_true(pred: Callable[[float], bool], lo: float, hi: float, rel: float) -> float:
    """Smallest x in [lo, hi] (to rel) with pred(x), pred monotone False..True, pred(hi) True."""
    return _bisect(pred, lo, hi, rel, 0.0)[1]


def bisect_last_true(
    pred: Callable[[float], bool], lo: float, hi: float, *, rel: float = 0.0, abs_tol: float = 0.0
) -> float:
    """Largest x in [lo, hi] (to rel or abs_tol) with pred(x), pred monotone True..False,
    pred(lo) True."""
    return _bisect(lambda x: not pred(x), lo, hi, rel, abs_tol)[0]


def epsilon_for_delta(
    delta_fn: DeltaPair,
    eps_local: float,
    delta: float,
    *,
    rel_tol: float = 2e-5,
    want_lower: bool = True,
    start: float | None = None,
) -> tuple[float | None, float | None]:
    """(lower, upper) central epsilon at this delta; upper None when no eps < eps_local works.

    ``delta_fn(eps)`` returns (lower, upper) bounds on delta(eps), both non-increasing in eps.
    """
    cache: dict[float, tuple[float, float]] = {}

    def both(x: float) -> tuple[float, float]:
        if x not in cache:
            cache[x] = delta_fn(x)
        return cache[x]

    top = eps_local * (1 - 1e-9)
    up: float | None = None
    if both(top)[1] <= delta:
        hi = top
        lo = 0.0
        # bracket from above by halving (from ``start``, a known admissible point, if given)
        if start is not None and start < top and both(start)[1] <= delta:
            hi = start
        x = hi * (0.9 if start is not None else 0.5)
        while x > 1e-9 and both(x)[1] <= delta:
            hi, x = x, x / 2
        lo = x if x > 1e-9 else 0.0

        def g(x: float) -> float:
            return math.log(max(both(x)[1], 1e-300)) - math.log(delta)

        if lo > 0.0 and g(lo) > 0 and g(hi) <= 0:
            try:
                guess = optimize.brentq(g, lo, hi, xtol=1e-13, rtol=rel_tol / 4, maxiter=60)
            except ValueError:
                guess = hi
            # a verified point at or above the root, and a failing point just below it
            x = min(hi, guess * (1 + rel_tol / 2))
            step = max(x * rel_tol, 1e-12)
            while both(x)[1] > delta and x < hi:
                x = min(hi, x + step)
                step *= 2
            hi = x
            below = hi * (1 - rel_tol)
            lo = below if below > lo and both(below)[1] > delta else lo
        up = bisect_first_true(lambda y: both(y)[1] <= delta, lo, hi, rel_tol)
        if up >= top * (1 - 1e-4):
            up = None
    low: float | None = None
    if want_lower:
        cap = eps_local if up is None else up
        if both(cap)[0] > delta:
            low = cap
        elif both(0.0)[0] > delta:
            # largest x with lower bound > delta: bisect on [0, cap]
            low = bisect_last_true(lambda y: both(y)[0] > delta, 0.0, cap, rel=rel_tol)
        else:
            low = 0.0
    return low, up


def max_local_for_target(
    ok: Callable[[float], bool],
    eps_central: float,
    *,
    cap: float = 40.0,
    abs_tol: float = 1e-4,
) -> float:
    """Largest eps_local in [eps_central, cap] with ok(eps_local), by doubling then bisection.

    ``ok(e)`` must be monotone (True..False) above eps_central; ``eps_central`` itself is always
    admissible and is returned when nothing larger is.
    """
    lo = eps_central
    hi = max(2 * eps_central, eps_central + 1.0)
    while hi < cap and ok(hi):
        lo, hi = hi, 2 * hi
    if hi >= cap:
        hi = cap
        if ok(cap):
            return cap
    return bisect_last_true(ok, lo, hi, abs_tol=abs_tol)
