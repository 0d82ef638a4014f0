"""Decomposition ("privacy blanket") bound of Su, Cheng and Wang (IEEE S&P 2026, arXiv
2504.07414), evaluated exactly for finite-support randomizers, and the generic worst case.

The blanket decomposition (Balle, Bell, Gascon, Nissim, CRYPTO 2019): for a randomizer R let
``gamma = sum_y inf_x R(x)(y)`` and ``omega(y) = inf_x R(x)(y) / gamma``; every user's report is
a draw from omega with probability gamma, else from a data-dependent residual. Revealing the
residual draws to the adversary can only help it, and then (Balle et al. Lemma 5.3; Su et al.
call the variable GPARV)

    delta(eps) <= (1/n) E[(G_1 + ... + G_n)_+],
    G = 0 w.p. 1 - gamma,  G = u0(W) - e^eps u1(W) w.p. gamma, W ~ omega,

with ``u_j(y) = R(x_j)(y) / inf_x R(x)(y)`` in [1, e^eps0] (x_0, x_1 the target's two inputs).
Su et al. prove the blanket is the optimal decomposition. The pair behind this bound does not
depend on the other users' data, so it is a dominating pair for every dataset (used by the PLD
composition in :mod:`protocols.accountant.compose`).

Mechanism-specific atoms (values of (u0, u1) given a blanket draw, with their probabilities):

- ``grr`` (k-RR): gamma = k/(e^eps0+k-1); (e^eps0, 1) and (1, e^eps0) w.p. 1/k each, (1, 1)
  w.p. (k-2)/k.
- ``olh`` (hash range g): as k-RR with k = g. Hash collisions between the two inputs would add
  the corner (e^eps0, e^eps0), which the convex-order argument below shows can only lower the
  bound, so collision probability 0 is the worst case for any hash family (stated in results).
- ``oue`` / ``sue`` (unary encodings): the bits at x_0 and x_1 of a blanket draw are independent
  Bern(q); u = e^eps0 when the bit is 1; gamma = (1-p)/(1-q) (p, q the bit probabilities).
- ``hadamard`` (one bit of a Hadamard row, this project's GFIM oracle): gamma = 2/(e^eps0+1), the
  four corners w.p. 1/4 each (columns agree on half the rows).
- ``generic`` (any eps0-LDP randomizer): the worst case over all randomizers (this module's
  lemma, proof in docs/accountant.md): by a mean-preserving spread, the law of (u0, u1) on
  [1, e^eps0]^2 can be pushed to the corners without lowering the bound; moving mass from the
  diagonal corners to the anti-diagonal ones is again a spread; and the resulting one-parameter
  family in gamma is largest at gamma = 2/(e^eps0+1). The worst case is binary randomized
  response: atoms e^eps0 - e^eps and 1 - e^(eps+eps0) w.p. 1/(e^eps0+1) each. This equals the
  FMT23 "stronger clone" and Wang et al.'s generic variation-ratio numbers, so those numbers are
  valid for every eps0-LDP randomizer (the FMT23 erratum concerns their proof, not this one).
"""

from __future__ import annotations

import math
from typing import Unpack

from protocols.accountant.crowd import split_delta
from protocols.accountant.gparv import Atoms
from protocols.accountant.mechanisms import MECHANISMS, Shape
from protocols.accountant.search import epsilon_for_delta, max_local_for_target

# the inverse certifies a slightly smaller central epsilon than asked (see
# ``decomposition_max_local_epsilon``): 5x the forward search's relative tolerance
INVERSE_MARGIN = 1e-4


def _corners(gamma: float, u: float, c11: float, c10: float, c01: float, c00: float) -> Atoms:
    """Blanket GPARV from corner probabilities (given a blanket draw) and gamma."""
    tot = c11 + c10 + c01 + c00
    if abs(tot - 1.0) > 1e-9:
        raise ValueError(f"corner probabilities must sum to 1, got {tot}")
    return Atoms(
        a=(u, u, 1.0, 1.0, 0.0),
        b=(u, 1.0, u, 1.0, 0.0),
        w=(gamma * c11, gamma * c10, gamma * c01, gamma * c00, 1.0 - gamma),
    )


def blanket_atoms(
    eps_local: float,
    mechanism: str = "generic",
    *,
    k: int | None = None,
    g: int | None = None,
    d: int | None = None,
) -> Atoms:
    """The blanket GPARV of a mechanism (module docstring)."""
    if not eps_local > 0 or not math.isfinite(eps_local):
        raise ValueError(f"decomposition: local epsilon must be finite and > 0, got {eps_local}")
    e = math.exp(eps_local)
    if mechanism in ("grr", "olh"):
        kk = k if mechanism == "grr" else g
        if kk is None or kk < 2:
            what = "a domain size k" if mechanism == "grr" else "a hash range g"
            raise ValueError(f"decomposition: mechanism {mechanism!r} needs {what} >= 2")
        gamma = kk / (e + kk - 1)
        return _corners(gamma, e, 0.0, 1.0 / kk, 1.0 / kk, (kk - 2) / kk)
    if mechanism in ("oue", "sue"):
        if mechanism == "oue":
            p, q = 0.5, 1.0 / (e + 1.0)
        else:
            s = math.exp(eps_local / 2)
            p, q = s / (s + 1.0), 1.0 / (s + 1.0)
        gamma = (1 - p) / (1 - q)
        u = (p / q) / ((1 - p) / (1 - q))
        return _corners(gamma, u, q * q, q * (1 - q), (1 - q) * q, (1 - q) ** 2)
    if mechanism == "hadamard":
        return _corners(2.0 / (e + 1.0), e, 0.25, 0.25, 0.25, 0.25)
    if mechanism == "generic":
        return _corners(2.0 / (e + 1.0), e, 0.0, 0.5, 0.5, 0.0)
    raise ValueError(f"decomposition: unknown mechanism {mechanism!r}; expected {MECHANISMS}")


def corner_parameters(
    eps_local: float,
    mechanism: str = "generic",
    *,
    k: int | None = None,
    g: int | None = None,
) -> tuple[float, float, float, float]:
    """(u, w10, w11, w00): the blanket GPARV's corner probabilities (unconditional, so the
    zero atom has probability 1 - 2 w10 - w11 - w00)."""
    atoms = blanket_atoms(eps_local, mechanism, k=k, g=g)
    u = atoms.a[0]
    w11, w10, w01, w00, _ = atoms.w
    if abs(w10 - w01) > 1e-15:
        raise ValueError("decomposition: corner probabilities must be symmetric")
    return u, w10, w11, w00


def decomposition_delta(
    eps: float,
    eps_local: float,
    n: int,
    mechanism: str = "generic",
    *,
    k: int | None = None,
    g: int | None = None,
    d: int | None = None,
    tail: float = 1e-18,
    points: int = 32,
) -> tuple[float, float]:
    """(lower, upper) on the decomposition bound's delta at eps (rigorous bracket)."""
    u, w10, w11, w00 = corner_parameters(eps_local, mechanism, k=k, g=g)
    return split_delta(eps, n, u, w10, w11, w00, tail=tail, points=points)


def decomposition_epsilon(
    eps_local: float, n: int, delta: float, mechanism: str = "generic", **shape: Unpack[Shape]
) -> float | None:
    """Upper bound on the central epsilon (None: nothing below eps_local)."""
    tail = delta * 1e-7
    # the fine pass at the inverse's resolution (``decomposition_max_local_epsilon`` uses the
    # default 32 buckets): a coarser one stays rigorous but is looser (Hadamard at 5 buckets:
    # 0.66 where 32 give 0.50), so forward and inverse would disagree about the same eps_local
    fine = 32

    def coarse(x: float) -> tuple[float, float]:
        return decomposition_delta(x, eps_local, n, mechanism, **shape, tail=tail, points=2)

    def fn(x: float) -> tuple[float, float]:
        return decomposition_delta(x, eps_local, n, mechanism, **shape, tail=tail, points=fine)

    # a cheap rigorous pass (few buckets: looser but valid) brackets the answer for the fine one
    _, first = epsilon_for_delta(coarse, eps_local, delta, want_lower=False, rel_tol=1e-3)
    if first is None:  # the coarse pass is looser: at small n it may certify nothing below
        _, up = epsilon_for_delta(fn, eps_local, delta, want_lower=False)
        return up
    _, up = epsilon_for_delta(fn, eps_local, delta, want_lower=False, start=first)
    return up if up is not None else first


def decomposition_max_local_epsilon(
    eps_central: float, n: int, delta: float, mechanism: str = "generic", **shape: Unpack[Shape]
) -> float:
    """Largest eps_local (>= eps_central) whose decomposition bound meets (eps_central, delta).

    Certified at eps_central (1 - INVERSE_MARGIN): the forward bound locates its root from
    above to a relative 2e-5, so the statement ``amplify`` then gives for this eps_local never
    exceeds eps_central (a protocol states and gates that value)."""
    tail = delta * 1e-7
    target = eps_central * (1.0 - INVERSE_MARGIN)

    def ok(e: float) -> bool:
        if e <= eps_central:
            return True
        return decomposition_delta(target, e, n, mechanism, **shape, tail=tail)[1] <= delta

    return max_local_for_target(ok, eps_central)
