"""Exact privacy of a uniform blanket: the (eps, delta) of "one real hashed message + blanket".

Setting (the LWY protocol, :mod:`protocols.almost_single.lwy`). Messages live in a space Omega;
the message of a user holding x is uniform on A_x, a 1/g fraction of Omega (hashing: A_x = the
triples (a, b, H_ab(x)); identity, g = d: A_x = {x}); every user also sends K_i = floor(rho) +
Bernoulli(rho - floor(rho)) blanket messages uniform on Omega. Any two sets A_x, A_x' meet in a
fraction pcol/g of Omega (pcol: the family's collision probability; 0 for the identity).

Accountant (our derivation). Give the adversary, besides the shuffled messages, which messages
are the other users' real ones (a stronger view; the real one is its post-processing). What is
left is the target's message among T blanket messages, i.i.d. uniform on Omega, T independent of
the data. For a multiset S the probability of S under x is proportional to
N_x(S) = #(messages of S in A_x) (the target is any one of them, each as likely), so the privacy
loss of x against x' is ln(N_x/N_x'), exactly. Under x: N_x = 1 + B_x + B_both and
N_x' = C + B_x' + B_both, with C ~ Bernoulli(pcol) (the target's message also in A_x'), and the
blanket's hits H = B_x + B_x' + B_both ~ Bin(m floor(rho), pi) + Bin(m, frac pi),
pi = (2 - pcol)/g, split multinomially in the ratios (1 - pcol, 1 - pcol, pcol). Then

    delta(eps) = E[(1 - e^eps N_x'/N_x)_+]

is the exact hockey-stick divergence of the stronger view (the same in both directions), computed
here by summing that finite law (the tail beyond the summed range, and any mass of more than
the summed messages in both sets, is added to delta). For the
identity (pcol = 0) the stronger view equals the real one (others' real messages are values the
adversary knows), so delta is exact for the protocol (tests/test_lwy.py checks it by enumerating
the real histogram). LWY's own bound, mu = 32 ln(2/delta)/eps^2 blanket hits per bucket, is a
closed-form sufficient condition; ours is several times smaller.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom


def hits_law(m: int, rho: float, pi: float) -> tuple[np.ndarray, float]:
    """(pmf of the blanket's hits on A_x u A_x' over 0..h_max, mass beyond h_max)."""
    whole, frac = math.floor(rho), rho - math.floor(rho)
    mean = m * rho * pi
    hi = int(math.ceil(mean + 40 * math.sqrt(mean + 1) + 60))
    h = np.arange(hi + 1)
    a = binom.pmf(h, m * whole, pi) if whole else (h == 0).astype(np.float64)
    b = binom.pmf(h, m, frac * pi) if frac > 0 else (h == 0).astype(np.float64)
    law = np.convolve(a, b)[: hi + 1]
    return law, max(0.0, 1.0 - float(law.sum()))


def blanket_delta(eps: float, m: int, rho: float, g: int, pcol: float = 0.0) -> float:
    """delta(eps) of the target's message under the blanket of m users (module docstring)."""
    if not (eps >= 0 and rho >= 0 and g >= 2 and 0 <= pcol < 1 and m >= 1):
        raise ValueError(f"blanket_delta: bad arguments eps={eps}, m={m}, rho={rho}, g={g}")
    if rho == 0:
        return 1.0
    pi = (2 - pcol) / g
    law, tail = hits_law(int(m), float(rho), pi)
    e = math.exp(eps)
    r_both = pcol / (2 - pcol)
    h = np.arange(law.size)[:, None]
    bx = np.arange(law.size)[None, :]
    split = np.where(bx <= h, binom.pmf(bx, h, 0.5), 0.0)  # B_x | rest = h ~ Bin(h, 1/2)
    total = tail
    for bb in range(law.size):  # messages in both sets: rarely more than a few
        if bb >= 1:
            if pcol == 0:
                break
            left = float(law @ binom.sf(bb - 1, h[:, 0], r_both))  # P(B_both >= bb)
            if left < 1e-30:
                total += left  # counted as full loss
                break
        p_bb = binom.pmf(bb, h[:, 0], r_both) if pcol > 0 else np.ones(law.size)
        rest = h[bb:] - bb  # hits outside both sets, given bb in both
        n_x, n_y = 1 + bx + bb, rest - bx + bb  # n_y: target not in A_x'
        loss = np.maximum(0.0, 1 - e * n_y / n_x)
        if pcol > 0:
            loss = (1 - pcol) * loss + pcol * np.maximum(0.0, 1 - e * (n_y + 1) / n_x)
        p_bx = split[: law.size - bb]
        total += float((law * p_bb)[bb:] @ (p_bx * loss).sum(axis=1))
    return min(1.0, total)


def blanket_rate(eps: float, delta: float, m: int, g: int, pcol: float = 0.0) -> float:
    """Smallest rho (to 0.1% relative) with blanket_delta(eps, m, rho, g, pcol) <= delta."""
    lo, hi = 0.0, 1.0 / m
    while blanket_delta(eps, m, hi, g, pcol) > delta:
        lo, hi = hi, 2 * hi
        if hi > 256:
            raise ValueError(
                f"LWY: no blanket of <= 256 messages per user gives (eps={eps}, delta={delta}) "
                f"with {m} users and {g} buckets"
            )
    while hi - lo > 1e-3 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if blanket_delta(eps, m, mid, g, pcol) <= delta else (mid, hi)
    return hi


def blanket_epsilon(delta: float, m: int, rho: float, g: int, pcol: float = 0.0) -> float:
    """Smallest eps (to 1e-4) with blanket_delta(eps, ...) <= delta; ValueError if above 30."""
    if blanket_delta(30.0, m, rho, g, pcol) > delta:
        raise ValueError(f"the blanket of {m} users gives no eps <= 30 at delta = {delta}")
    lo, hi = 0.0, 30.0
    while hi - lo > 1e-4:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if blanket_delta(mid, m, rho, g, pcol) <= delta else (mid, hi)
    return hi
