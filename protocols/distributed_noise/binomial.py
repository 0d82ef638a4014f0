"""A count plus binomial noise: exact privacy, the Balcer-Cheu smoothness lemma, calibration.

Setting. The analyzer sees C = S + B where S is a count with sensitivity 1 (replace-one
neighbours change one user's bit, so S moves by at most 1) and B ~ Bin(M, p) is noise the users
sent as Bernoulli(p) messages (M noise slots). C is the whole view (all messages are identical
"1"s), so the mechanism's privacy is exactly the divergence between B and B + 1:

    delta(eps) = max( sum_c [P(B=c) - e^eps P(B=c-1)]_+ , sum_c [P(B=c-1) - e^eps P(B=c)]_+ ).

``binomial_delta`` evaluates it over a window of 60 standard deviations around the mean and adds
twice the mass outside the window (each neglected term is at most max(P(c), P(c-1))), so the
value is a rigorous upper bound and equal to the true delta up to ~1e-300 rounding.

Balcer-Cheu (ITC 2020, "Separating local & shuffled DP via histograms", Lemma on binomial
smoothness, as stated in their paper and transcribed in ``abiswas3/differentialprivacy``
``ShufflePrivacy/Readme.md``): for gamma in [0, 1/2], alpha in [0, 1] and shifts k <= alpha gamma
M / 2, Bin(M, gamma) is (eps, delta, k)-smooth with eps = ln((1+alpha)/(1-alpha)) and
delta = exp(-alpha^2 gamma M/8) + exp(-alpha^2 gamma M/(8 + 2 alpha)). Their binary-sum protocol
(Cnt_2M) instantiates it as 1 - p = 50 ln(2/delta)/(eps^2 n) for eps, delta in (0, 1] and
n >= 100 ln(2/delta)/eps^2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

from protocols.catalogue.common import Guarantee


def _check(eps: float, m: int, p: float) -> None:
    if not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"binomial noise: eps must be finite and >= 0, got {eps}")
    if int(m) != m or m < 0:
        raise ValueError(f"binomial noise: M must be an integer >= 0, got {m}")
    if not 0 <= p <= 1:
        raise ValueError(f"binomial noise: p must lie in [0, 1], got {p}")


def binomial_delta(eps: float, m: int, p: float) -> float:
    """Exact delta(eps) of C = S + Bin(M, p) for a sensitivity-1 count S (module docstring)."""
    _check(eps, m, p)
    if m == 0 or p in (0.0, 1.0):
        return 1.0  # deterministic noise: the count is revealed
    mean, sd = m * p, math.sqrt(m * p * (1 - p))
    lo = max(0, int(math.floor(mean - 60 * sd - 10)))
    hi = min(m, int(math.ceil(mean + 60 * sd + 10)))
    c = np.arange(lo, hi + 2)  # P(B = c) for c in [lo, hi + 1] and P(B = c - 1)
    logp = stats.binom.logpmf(c, m, p)
    logp_prev = stats.binom.logpmf(c - 1, m, p)
    pc, pprev = np.exp(logp), np.exp(logp_prev)
    ee = math.exp(eps)
    d1 = np.clip(pc - ee * pprev, 0.0, None).sum()
    d2 = np.clip(pprev - ee * pc, 0.0, None).sum()
    outside = float(stats.binom.cdf(lo - 1, m, p) + stats.binom.sf(hi + 1, m, p))
    return float(min(1.0, max(d1, d2) + 2.0 * outside))


def binomial_epsilon(delta: float, m: int, p: float, eps_max: float = 50.0) -> float | None:
    """Smallest eps with ``binomial_delta(eps) <= delta`` (None if even eps_max does not)."""
    if not 0 < delta < 1:
        raise ValueError(f"binomial noise: delta must lie in (0, 1), got {delta}")
    f = lambda e: binomial_delta(e, m, p) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    if f(eps_max) > 0:
        return None
    e = optimize.brentq(f, 0.0, eps_max, xtol=1e-10, rtol=1e-10)
    while f(e) > 0:
        e *= 1 + 1e-9
    return float(e)


def calibrate_binomial_p(eps: float, delta: float, m: int, p_max: float = 0.5) -> float | None:
    """Smallest p in (0, p_max] with ``binomial_delta(eps, M, p) <= delta`` (None if none)."""
    if not (eps > 0 and 0 < delta < 1):
        raise ValueError(f"binomial noise: need eps > 0 and delta in (0, 1), got {eps}, {delta}")
    f = lambda lp: binomial_delta(eps, m, math.exp(lp)) - delta  # noqa: E731
    hi = math.log(p_max)
    if m < 1 or f(hi) > 0:
        return None
    lo = math.log(1e-300)
    lo = max(lo, math.log(0.1 / m))  # variance M p < 0.1 is never enough for delta < 1
    if f(lo) <= 0:
        return math.exp(lo)
    lp = optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12)
    p = math.exp(lp)
    while binomial_delta(eps, m, p) > delta:
        p = min(p_max, p * (1 + 1e-9))
    return p


# -- Balcer & Cheu's binomial smoothness -----------------------------------------------------


def bc_smooth_delta(eps: float, m: int, gamma: float) -> tuple[float | None, str]:
    """(delta, reason): Balcer-Cheu's delta for Bin(M, gamma) noise at shift 1, or None with the
    violated condition (gamma <= 1/2, alpha gamma M >= 2)."""
    _check(eps, m, gamma)
    if not 0 < gamma <= 0.5:
        return None, f"lemma needs gamma in (0, 1/2], got {gamma:.4g}"
    alpha = math.tanh(eps / 2)  # (e^eps - 1)/(e^eps + 1)
    if alpha * gamma * m < 2:
        return None, f"lemma needs alpha gamma M >= 2, got {alpha * gamma * m:.4g}"
    t = alpha * alpha * gamma * m
    return math.exp(-t / 8) + math.exp(-t / (8 + 2 * alpha)), ""


def bc_smooth_mass(eps: float, delta: float) -> float:
    """Smallest gamma M with Balcer-Cheu's delta <= target (the lemma's noise 'mass')."""
    if not (eps > 0 and 0 < delta < 1):
        raise ValueError(f"bc_smooth_mass: need eps > 0 and delta in (0, 1), got {eps}, {delta}")
    alpha = math.tanh(eps / 2)

    def f(t: float) -> float:
        return math.exp(-t / 8) + math.exp(-t / (8 + 2 * alpha)) - delta

    t = optimize.brentq(f, 1e-9, 1e6)
    while f(t) > 0:
        t *= 1 + 1e-12
    return max(t / alpha**2, 2 / alpha)


def bc_two_message_gamma(eps: float, delta: float, n: int) -> tuple[float | None, str]:
    """Balcer-Cheu's binary-sum parameter 1 - p = 50 ln(2/delta)/(eps^2 n), with its conditions."""
    if not (0 < eps <= 1 and 0 < delta <= 1):
        return None, f"Balcer-Cheu needs eps, delta in (0, 1], got {eps:g}, {delta:g}"
    need = 100.0 * math.log(2 / delta) / eps**2
    if n < need:
        return None, f"Balcer-Cheu needs n >= 100 ln(2/delta)/eps^2 = {need:.0f}, got {n}"
    return 50.0 * math.log(2 / delta) / (eps**2 * n), ""


def binomial_reaccounted(delta: float, users: int, trials: int, p: float) -> Guarantee:
    """The guarantee re-accounted at ``users`` received users whose binomial noise is
    ``trials`` Bernoulli(``p``) draws in all (exact binomial epsilon at ``delta``)."""
    eps = binomial_epsilon(delta, trials, p)
    if eps is None:
        raise ValueError(f"binomial noise of {users} users gives no finite epsilon")
    return Guarantee(eps, delta, "exact-binomial", "upper", f"re-accounted at {users}")
