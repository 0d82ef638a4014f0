"""Privacy-amplification-by-shuffling accountant: forward (local -> central) and inverse.

Bounds (``bound=``), each result labelled with ``kind`` ("upper", "lower" or "exact"):

- ``"balle"``: closed form of Balle et al. 2019 for k-RR (OLH with k = g), with its validity
  conditions; invalid (never a wrong number) outside them or for other mechanisms.
- ``"fmt21"``: numeric "hiding among the clones" bound (Feldman, McMillan, Talwar 2021), valid
  for any eps-LDP randomizer; evaluated exactly (tighter than the reference code's bucketing).
- ``"vr"``: variation-ratio bound (Wang et al., VLDB 2024). Its dominating pair hides whether
  the target's report is "neutral"; that is only sound when there is no neutral state (binary
  corners: ``generic``, k-RR with k = 2). For mechanisms with a neutral state (k-RR with k >= 3,
  unary encodings, Hadamard, OLH) the argument fails (counterexample: n = 20, k = 3, eps_l = 3,
  delta = 1e-3: VR gave 2.79 where the exact delta at 2.79 is 0.028), so ``vr`` falls back to
  the decomposition bound and says so (``fallback``).
- ``"decomposition"``: the blanket decomposition bound (Su, Cheng, Wang 2025), exact for the
  mechanism's finite-support randomizer; ``generic`` is its worst case over all eps-LDP
  randomizers (binary RR, this package's lemma, docs/accountant.md).
- ``"exact"``: k-RR only. k = 2: the true privacy curve of shuffled binary RR, maximised over
  the other users' data by a certified search (``krr_exact``). k >= 3: the decomposition upper
  bound with the worst homogeneous dataset's exact value as lower bound (kind "upper").

``lower`` is always a lower bound on the *shuffled mechanism's* true epsilon, attained by the
dataset described in ``lower_dataset`` (None where no such statement is made).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from protocols.accountant.balle import balle_epsilon, balle_max_local_epsilon
from protocols.accountant.decomposition import (
    INVERSE_MARGIN,
    decomposition_delta,
    decomposition_epsilon,
    decomposition_max_local_epsilon,
)
from protocols.accountant.fmt21 import fmt21_epsilon, fmt21_max_local_epsilon
from protocols.accountant.krr_exact import binary_certify, binary_exact, worst_homogeneous
from protocols.accountant.search import max_local_for_target
from protocols.accountant.variation_ratio import MECHANISMS, vr_epsilon, vr_max_local_epsilon

BOUNDS = ("balle", "fmt21", "vr", "decomposition", "exact")

FMT23_ERRATUM = (
    "FMT23 erratum: the generic variation-ratio / stronger-clone bound relied on FMT23 "
    "Lemma 3.5, whose proof fails for some eps-LDP randomizers. The same numbers are proved "
    "here for every eps-LDP randomizer by the blanket decomposition and a convex-order "
    "argument (docs/accountant.md, Lemma G)."
)

THEOREMS = {
    "balle": "Balle, Bell, Gascon, Nissim, CRYPTO 2019: k-RR closed form (eps_c <= 1, blanket "
    "condition)",
    "fmt21": "Feldman, McMillan, Talwar, FOCS 2021: clone reduction, numeric evaluation",
    "vr": "Wang et al., VLDB 2024: variation-ratio pair with no neutral state",
    "decomposition": "Su, Cheng, Wang, IEEE S&P 2026 (arXiv 2504.07414): blanket decomposition "
    "GPARV; generic worst case: docs/accountant.md Lemma G",
    "exact": "exact privacy curve of shuffled binary RR, certified search over datasets "
    "(docs/accountant.md, section 'exact')",
}

# a neutral state exists unless the randomizer's corners are binary
_NEUTRAL_FREE = {"generic"}


@dataclass(frozen=True)
class Amplification:
    """Result of one amplification bound (fields after ``reason`` added with issue 18)."""

    eps_central: float | None  # the bound's value; None = nothing below eps_local / invalid
    lower: float | None  # lower bound on the mechanism's true epsilon (see lower_dataset)
    bound: str  # the bound requested
    valid: bool
    reason: str  # why invalid, caveats, fallbacks
    kind: str = "upper"  # "upper" | "lower" | "exact": what eps_central is
    lower_dataset: str | None = None  # neighbouring datasets attaining ``lower``
    theorem: str = ""  # what the value rests on
    fallback: str | None = None  # bound actually evaluated when the requested one cannot be


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


def _needs(mechanism: str, k: int | None, g: int | None) -> None:
    if mechanism == "grr" and (k is None or k < 2):
        raise ValueError(f"accountant: mechanism 'grr' needs a domain size k >= 2, got {k}")
    if mechanism == "olh" and (g is None or g < 2):
        raise ValueError(f"accountant: mechanism 'olh' needs a hash range g >= 2, got {g}")


def _neutral_free(mechanism: str, k: int | None) -> bool:
    return mechanism in _NEUTRAL_FREE or (mechanism == "grr" and k == 2)


def _route(bound: str, mechanism: str, k: int | None) -> str:
    """The one dispatch: which evaluator serves (bound, mechanism, k), forward and inverse alike.

    "balle", "fmt21", "vr" (no neutral state), "exact2" (binary RR's certified search), or
    "decomposition" (requested, or the fallback of vr / exact)."""
    if bound in ("balle", "fmt21"):
        return bound
    if bound == "vr" and _neutral_free(mechanism, k):
        return "vr"
    if bound == "exact" and mechanism == "grr" and k == 2:
        return "exact2"
    return "decomposition"


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


@lru_cache(maxsize=256)
def _krr_lower(eps_local: float, n: int, delta: float, k: int) -> tuple[float | None, str | None]:
    """Worst homogeneous dataset's epsilon (a true lower bound for shuffled k-RR)."""
    low, z, _ = worst_homogeneous(eps_local, n, delta, k)
    if low <= 0:
        return None, None
    what = {
        "x0": "every other user holds the target's value in the first dataset",
        "x1": "every other user holds the target's value in the second dataset",
        "third": "every other user holds a third value",
    }[z]
    if z == "third" and k >= 4:
        what += " (adversary merges the third values: a lower bound for that dataset)"
    return low, f"k-RR, k = {k}: {what}"


def _lower_for(
    eps_local: float, n: int, delta: float, mechanism: str, k: int | None
) -> tuple[float | None, str | None]:
    if mechanism == "grr" and k is not None:
        return _krr_lower(eps_local, n, delta, k)
    if mechanism == "generic":  # binary RR is an eps-LDP randomizer: its curve bounds below
        low, what = _krr_lower(eps_local, n, delta, 2)
        return low, None if what is None else f"binary RR (an eps-LDP randomizer); {what}"
    return None, None


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
    none_why = "no amplification: bound is not below eps_local (eps_local itself holds)"
    theorem = THEOREMS[bound]
    route = _route(bound, mechanism, k)
    if route == "balle":
        kk, why = _balle_k(mechanism, k, g)
        if kk is None:
            return Amplification(None, None, bound, False, why, theorem=theorem)
        eps_c, why = balle_epsilon(eps_local, n, delta, kk)
        return Amplification(eps_c, None, bound, eps_c is not None, why, theorem=theorem)
    if route == "fmt21":
        eps_c = fmt21_epsilon(eps_local, n, delta)
        why = "" if eps_c is not None else none_why
        return Amplification(eps_c, None, bound, eps_c is not None, why, theorem=theorem)
    _needs(mechanism, k, g)
    low, low_what = _lower_for(eps_local, n, delta, mechanism, k)
    if route == "vr":
        _, up = vr_epsilon(eps_local, n, delta, mechanism, k=k, g=g, d=d)
        notes = [FMT23_ERRATUM] if mechanism == "generic" else []
        if up is None:
            notes.insert(0, none_why)
        return Amplification(
            up, low, bound, up is not None, "; ".join(notes), "upper", low_what, theorem
        )
    if route == "exact2":
        res = binary_exact(eps_local, n, delta)
        dec = decomposition_epsilon(eps_local, n, delta, "grr", k=2)  # also valid: take the min
        best = min(res.upper, dec) if dec is not None else res.upper
        up = best if best < eps_local * (1 - 1e-4) else None
        rel = (best - res.lower) / res.lower if res.lower > 0 else math.inf
        kind = "exact" if rel <= 1.001e-3 else "upper"
        why = f"exact to a relative {rel:.1e} (certified over all datasets)"
        if up is None:
            why = none_why
        return Amplification(up, res.lower, bound, up is not None, why, kind, res.dataset, theorem)
    # decomposition (requested, or as the fallback of vr / exact)
    fallback = None
    notes: list[str] = []
    if bound == "vr":
        fallback = "decomposition"
        notes.append(
            f"the variation-ratio pair hides the neutral state of {mechanism!r}, which is "
            "unsound (it undercounts delta where amplification is weak); value from the "
            "decomposition bound"
        )
    elif bound == "exact":
        fallback = "decomposition"
        if mechanism == "grr":
            notes.append(
                "exact search over datasets is implemented for k = 2; for k >= 3 this is the "
                "decomposition upper bound, with the worst homogeneous dataset as lower bound"
            )
        else:
            notes.append(f"no exact accountant for {mechanism!r}; decomposition upper bound")
    if mechanism == "olh":
        notes.append("OLH taken with hash collision probability 0 (the worst case, any family)")
    up = decomposition_epsilon(eps_local, n, delta, mechanism, k=k, g=g, d=d)
    if up is None:
        notes.insert(0, none_why)
    if mechanism == "generic":
        notes.append("generic = worst case over all eps-LDP randomizers (Lemma G)")
    used = THEOREMS["decomposition"]
    return Amplification(
        up, low, bound, up is not None, "; ".join(notes), "upper", low_what, used, fallback
    )


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
    """Largest eps_local whose shuffled reports are (eps_central, delta)-DP by this bound.

    Never below eps_central: eps_central-LDP reports are (eps_central, 0)-DP after shuffling
    (post-processing), whatever n. None only when the bound does not apply to the mechanism
    (Balle's closed form outside k-RR/OLH).
    """
    _check(eps_central, "eps_central", n, delta, bound, mechanism)
    return _max_local(float(eps_central), int(n), float(delta), bound, mechanism, k, g, d)


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
    route = _route(bound, mechanism, k)
    if route == "balle":
        kk, _ = _balle_k(mechanism, k, g)
        if kk is None:
            return None
        v = balle_max_local_epsilon(eps_central, n, delta, kk)
        return eps_central if v is None or v < eps_central else v
    if route == "fmt21":
        return max(eps_central, fmt21_max_local_epsilon(eps_central, n, delta))
    _needs(mechanism, k, g)
    if route == "vr":
        return max(eps_central, vr_max_local_epsilon(eps_central, n, delta, mechanism, k=k))
    if route == "exact2":
        target = eps_central * (1.0 - INVERSE_MARGIN)  # see decomposition_max_local_epsilon

        def ok(e: float) -> bool:
            if e <= eps_central:
                return True
            # cheap sufficient check first (the decomposition bound is an upper bound)
            if decomposition_delta(target, e, n, "grr", k=2, tail=delta * 1e-7)[1] <= delta:
                return True
            return binary_certify(target, e, n, delta) is True

        return max_local_for_target(ok, eps_central)
    return decomposition_max_local_epsilon(eps_central, n, delta, mechanism, k=k, g=g, d=d)


__all__ = [
    "Amplification",
    "BOUNDS",
    "FMT23_ERRATUM",
    "MECHANISMS",
    "THEOREMS",
    "amplify",
    "max_local_epsilon",
]
