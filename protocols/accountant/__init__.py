"""Privacy-amplification-by-shuffling accountant: forward (local -> central) and inverse.

Bounds (``bound=``):

- ``"balle"``: closed form of Balle et al. 2019 for k-RR (OLH with k = g), with its validity
  conditions; invalid (never a wrong number) outside them or for other mechanisms.
- ``"fmt21"``: numeric "hiding among the clones" bound (Feldman, McMillan, Talwar 2021), valid
  for any eps-LDP randomizer; evaluated exactly (tighter than the reference code's bucketing).
- ``"vr"``: variation-ratio bound (Wang et al., VLDB 2024) with the (p, beta, q) parameters of
  the mechanism actually run; gives an upper and a lower bound. ``mechanism="generic"`` equals
  the FMT23 "stronger clone" bound and carries the FMT23 erratum caveat.

The numeric bounds evaluate the hockey-stick divergence of the bound's dominating pair exactly
(checked against direct enumeration in the tests); ``lower`` is a lower bound on that pair's
epsilon. For k-RR the pair is realised by a dataset in which every other user holds a third
value (their counts of x and x' are exactly the pair's view), so there ``lower`` also bounds the
shuffled mechanism's true epsilon from below; for other mechanisms it bounds the analysis only.
Values agree with the published tables (anchors-dp.md §1.2-1.4) to 3 significant figures, except
that the exact FMT21 evaluation is tighter than the reference code's 100-wide bucketing (its
numbers are reproduced by ``fmt21_epsilon(..., step=100)``) and a few VR points at very small
delta are up to 1% below the reference code's (whose truncated series is slightly conservative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from protocols.accountant.balle import balle_epsilon, balle_max_local_epsilon
from protocols.accountant.fmt21 import fmt21_epsilon, fmt21_max_local_epsilon
from protocols.accountant.variation_ratio import MECHANISMS, vr_epsilon, vr_max_local_epsilon

BOUNDS = ("balle", "fmt21", "vr")

FMT23_ERRATUM = (
    "FMT23 erratum: the generic variation-ratio / stronger-clone bound relies on FMT23 "
    "Lemma 3.5, whose proof fails for some eps-LDP randomizers; the corrected paper claims it "
    "only for a restricted class of local randomizers. Use mechanism-specific parameters "
    "(grr/olh/oue/sue/hadamard) or bound='fmt21' for an unconditional generic bound."
)


@dataclass(frozen=True)
class Amplification:
    """Result of one amplification bound."""

    eps_central: float | None  # upper bound; None = no amplification / bound invalid here
    lower: float | None  # lower bound where the method gives one (variation-ratio), else None
    bound: str  # "balle" | "fmt21" | "vr"
    valid: bool
    reason: str  # why invalid, or caveats (e.g. FMT23 erratum for generic vr)


def _check(eps: float, name: str, n: int, delta: float, bound: str, mechanism: str) -> None:
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"accountant: {name} must be finite and > 0, got {eps}")
    if int(n) != n or n < 2:
        raise ValueError(f"accountant: n must be an integer >= 2, got {n}")
    if not 0 < delta < 1:
        raise ValueError(f"accountant: delta must lie in (0, 1), got {delta}")
    if bound not in BOUNDS:
        raise ValueError(f"accountant: unknown bound {bound!r}; expected one of {BOUNDS}")
    if mechanism not in MECHANISMS:
        raise ValueError(f"accountant: unknown mechanism {mechanism!r}; expected {MECHANISMS}")


def _balle_k(mechanism: str, k: int | None, g: int | None) -> tuple[int | None, str]:
    """Domain size the closed form applies with, or a reason it does not apply."""
    if mechanism == "grr":
        if k is None:
            raise ValueError("accountant: bound 'balle' with mechanism 'grr' needs k")
        return k, ""
    if mechanism == "olh":
        if g is None:
            raise ValueError("accountant: bound 'balle' with mechanism 'olh' needs g")
        return g, ""
    return None, f"the Balle closed form is k-RR specific; not valid for mechanism {mechanism!r}"


def amplify(
    eps_local: float,
    n: int,
    delta: float,
    *,
    bound: str = "vr",
    mechanism: str = "generic",
    k: int | None = None,
    g: int | None = None,
    d: int | None = None,
) -> Amplification:
    """Central (eps, delta) of n shuffled eps_local-LDP reports, by the chosen bound."""
    _check(eps_local, "eps_local", n, delta, bound, mechanism)
    return _amplify(float(eps_local), int(n), float(delta), bound, mechanism, k, g, d)


@lru_cache(maxsize=1024)
def _amplify(
    eps_local: float,
    n: int,
    delta: float,
    bound: str,
    mechanism: str,
    k: int | None,
    g: int | None,
    d: int | None,
) -> Amplification:
    """Cached body of ``amplify`` (arguments already validated)."""
    if bound == "balle":
        kk, why = _balle_k(mechanism, k, g)
        if kk is None:
            return Amplification(None, None, bound, False, why)
        eps_c, why = balle_epsilon(eps_local, n, delta, kk)
        return Amplification(eps_c, None, bound, eps_c is not None, why)
    if bound == "fmt21":
        eps_c = fmt21_epsilon(eps_local, n, delta)
        why = "" if eps_c is not None else "no amplification: bound is not below eps_local"
        return Amplification(eps_c, None, bound, eps_c is not None, why)
    low, up = vr_epsilon(eps_local, n, delta, mechanism, k=k, g=g, d=d)
    notes = [FMT23_ERRATUM] if mechanism == "generic" else []
    if up is None:
        notes.insert(0, "no amplification: bound is not below eps_local")
    return Amplification(up, low, bound, up is not None, "; ".join(notes))


def max_local_epsilon(
    eps_central: float,
    n: int,
    delta: float,
    *,
    bound: str = "vr",
    mechanism: str = "generic",
    k: int | None = None,
    g: int | None = None,
    d: int | None = None,
) -> float | None:
    """Largest eps_local whose shuffled reports are (eps_central, delta)-DP; None if infeasible.

    Numeric bounds never return less than eps_central (no amplification needed for that).
    """
    _check(eps_central, "eps_central", n, delta, bound, mechanism)
    args = (int(n), float(delta), bound, mechanism, k, g, d)
    eps_l = _max_local(float(eps_central), *args)
    # The inverse is a numeric search: never return a local epsilon whose forward bound
    # exceeds the target (step down by growing relative amounts until it does not).
    for i in range(60):
        if eps_l is None:
            return None
        amp = _amplify(eps_l, *args)
        if amp.valid and amp.eps_central is not None and amp.eps_central <= eps_central:
            return eps_l
        eps_l *= 1 - 1e-9 * 2**i
    return None


@lru_cache(maxsize=1024)
def _max_local(
    eps_central: float,
    n: int,
    delta: float,
    bound: str,
    mechanism: str,
    k: int | None,
    g: int | None,
    d: int | None,
) -> float | None:
    """Cached body of ``max_local_epsilon`` (arguments already validated)."""
    if bound == "balle":
        kk, _ = _balle_k(mechanism, k, g)
        if kk is None:
            return None
        return balle_max_local_epsilon(eps_central, n, delta, kk)
    if bound == "fmt21":
        return fmt21_max_local_epsilon(eps_central, n, delta)
    return vr_max_local_epsilon(eps_central, n, delta, mechanism, k=k, g=g, d=d)


__all__ = [
    "Amplification",
    "BOUNDS",
    "FMT23_ERRATUM",
    "MECHANISMS",
    "amplify",
    "max_local_epsilon",
]
