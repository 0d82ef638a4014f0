"""Exact privacy of PRHR's shuffled messages against the noise blanket (our analysis).

Setting (:mod:`protocols.multi_freq.prhr`). Every user sends one tuple uniform on C_x^tau (its
value's codeword, tau coordinates) and rho tuples uniform on [2^L]^tau. Neighbours differ in one
user's value, x or x'. The other users' value tuples do not depend on it: handing them to the
adversary can only help it, so the view is dominated by the target's tuple plus the N = users*rho
noise tuples (every user's noise, the target's included: it is input-free).

With A = C_x^tau and A' = C_x'^tau (|A| = |A'| = 2^(L-1)tau, |A n A'| = 2^(L-2)tau), let a, b, c
count the tuples in A \\ A', A' \\ A and A n A'. Given (a, b, c) the tuples are uniform in each
region under both hypotheses, so (a, b, c) is sufficient, and with q = 2^-tau - 4^-tau (noise in
A \\ A', and in A' \\ A), r = 4^-tau (noise in A n A'), w = (1 - 2^-tau)^2 (elsewhere),
e = N + 1 - a - b - c:

    P_x(a, b, c)  = 2^tau (a + c) N! / (a! b! c! e!) q^(a+b) r^c w^e,
    P_x'(a, b, c) = 2^tau (b + c) N! / (a! b! c! e!) q^(a+b) r^c w^e,

so the privacy loss is ln((a + c)/(b + c)). delta(eps) = sum_(a,b,c) [P_x - e^eps P_x']_+ is
summed exactly over a window of ``z`` standard deviations in a, b and c; the mass outside it is
added in full, so the value is an upper bound equal to the exact delta up to ~e^-z^2/2 (and
float rounding, ~1e-12; N!/e! is summed as a falling factorial, not from log-gammas). The loss
is symmetric in (a, b), so both directions give the same delta. tests/test_prhr_privacy.py checks
the formula against a brute-force enumeration of the whole shuffled multiset at small n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import gammaln


@dataclass(frozen=True)
class LossTable:
    """Outcomes (a, b, c) of the dominating view sorted by privacy loss, with suffix sums."""

    loss: np.ndarray  # ln((a+c)/(b+c)) ascending; +inf where P_x' = 0
    tail_p: np.ndarray  # tail_p[i] = sum of P_x over outcomes i.. (same order)
    tail_q: np.ndarray  # the same for P_x'
    outside: float  # P_x mass outside the window (counted in full)

    def delta(self, eps: float) -> float:
        """delta(eps) = sum over loss > eps of (P_x - e^eps P_x') + the mass outside."""
        i = int(np.searchsorted(self.loss, eps, side="right"))
        if i >= self.loss.size:
            return min(1.0, self.outside)
        d = float(self.tail_p[i] - math.exp(eps) * self.tail_q[i])
        return min(1.0, max(0.0, d) + self.outside)


def _window(mean: float, z: float, hi: int) -> np.ndarray:
    """Counts within z standard deviations (Poisson-like: sd = sqrt(mean), at least 1/2)."""
    sd = math.sqrt(max(mean, 0.25))
    return np.arange(max(0, int(mean - z * sd) - 2), min(hi, int(math.ceil(mean + z * sd)) + 2) + 1)


@lru_cache(maxsize=64)
def loss_table(noise: int, tau: int, z: float = 10.0) -> LossTable:
    """The (a, b, c) outcomes of the target tuple plus ``noise`` uniform tuples (module doc)."""
    if int(noise) != noise or noise < 0 or int(tau) != tau or tau < 1:
        raise ValueError(f"PRHR accountant: need noise >= 0 and tau >= 1, got {noise}, {tau}")
    n_ = int(noise)
    h = 2.0**-tau
    q, r = h - h * h, h * h
    lq, lr, lw = math.log(q), math.log(r), 2 * math.log1p(-h)
    a = _window(n_ * q + 1, z, n_ + 1)
    b = _window(n_ * q, z, n_ + 1)
    c = _window(n_ * r + 1, z, n_ + 1)
    A, B, C = np.meshgrid(a, b, c, indexing="ij")
    A, B, C = A.ravel(), B.ravel(), C.ravel()
    E = n_ + 1 - A - B - C
    ok = (E >= 0) & (A + C > 0)
    A, B, C, E = A[ok], B[ok], C[ok], E[ok]
    # N!/E! as a falling factorial of length S - 1 (S = a + b + c): gammaln(N + 1) -
    # gammaln(E + 1) would lose ~1e-6 of every probability to rounding at N ~ 1e9
    k = A + B + C - 1
    steps = np.log1p(-np.arange(int(k.max()), dtype=np.float64) / max(n_, 1))
    falling = np.concatenate([[0.0], np.cumsum(steps)])[k] + k * math.log(max(n_, 1))
    log_k = (
        falling
        - gammaln(A + 1.0)
        - gammaln(B + 1.0)
        - gammaln(C + 1.0)
        + (A + B) * lq
        + C * lr
        + E * lw
    )
    log_p = tau * math.log(2.0) + np.log((A + C).astype(np.float64)) + log_k
    with np.errstate(divide="ignore"):
        log_q = tau * math.log(2.0) + np.log((B + C).astype(np.float64)) + log_k
    loss = log_p - log_q
    order = np.argsort(loss, kind="stable")
    p, pq = np.exp(log_p[order]), np.exp(log_q[order])
    tail_p = np.cumsum(p[::-1])[::-1]
    tail_q = np.cumsum(pq[::-1])[::-1]
    outside = max(0.0, 1.0 - float(p.sum()))
    return LossTable(loss[order], tail_p, tail_q, outside)


def prhr_delta(eps: float, users: int, rho: int, tau: int) -> float:
    """delta(eps) of PRHR with ``users`` users each sending ``rho`` noise tuples of length tau."""
    if not eps >= 0:
        raise ValueError(f"PRHR accountant: eps must be >= 0, got {eps}")
    return loss_table(int(users) * int(rho), int(tau)).delta(float(eps))


def prhr_epsilon(
    delta: float, users: int, rho: int, tau: int, eps_max: float = 30.0
) -> float | None:
    """Smallest eps (to 1e-6) with delta(eps) <= delta; None if even eps_max does not."""
    if not 0 < delta < 1:
        raise ValueError(f"PRHR accountant: delta must lie in (0, 1), got {delta}")
    t = loss_table(int(users) * int(rho), int(tau))
    if t.delta(eps_max) > delta:
        return None
    lo, hi = 0.0, eps_max
    if t.delta(0.0) <= delta:
        return 0.0
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if t.delta(mid) <= delta else (mid, hi)
    return hi
