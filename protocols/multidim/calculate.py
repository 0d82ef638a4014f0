"""The paper's ``Calculate``: local budget from the closed-form Balle et al. k-RR shuffle bound.

Seed 000 (spec Sec. 2.3-2.4) uses, for n_eff users running k_eff-ary RR with eps_l and a shuffle,

    eps_c = sqrt(14 ln(2/delta) (e^{eps_l} + k_eff - 1) / (n_eff - 1))

and inverts it: X = eps_c^2 (n_eff - 1) / (14 ln(2/delta)), eps_l = ln(X - k_eff + 1).

Feasibility policies when the argument A = X - k_eff + 1 is small:

* ``strict`` (default): infeasible if A <= 1 (eps_l <= 0);
* ``paper_lenient``: infeasible only if A <= 0 (negative eps_l allowed, as the paper's Kosarak
  eps_c = 0.2 entries suggest). For reproduction only: RR with eps_l < 0 is |eps_l|-LDP and the
  blanket decomposition behind the bound needs eps_l >= 0, so no central guarantee follows
  (a warning is issued);
* ``fallback`` (not in the paper): eps_l = max(eps_c, ln A), always feasible, since eps_c-LDP
  reports remain eps_c-DP after shuffling.

The bound is stated by Balle et al. for eps_c <= 1; larger eps_c triggers a warning.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

POLICIES = ("strict", "paper_lenient", "fallback")


@dataclass(frozen=True)
class LocalBudget:
    """Result of ``calculate``: the local epsilon (None if infeasible) and how it was obtained."""

    eps_local: float | None
    feasible: bool
    policy: str
    argument: float  # X - k_eff + 1 (e^{eps_l} before the policy is applied)
    reason: str


def _check_common(eps_c: float, delta: float, n_eff: float, where: str) -> None:
    if not (eps_c > 0 and math.isfinite(eps_c)):
        raise ValueError(f"{where}: eps_c must be a positive finite number, got {eps_c}")
    if not 0 < delta < 1:
        raise ValueError(f"{where}: delta must lie in (0, 1), got {delta}")
    if not n_eff > 1:
        raise ValueError(f"{where}: the shuffled population n_eff must exceed 1, got {n_eff}")


def balle_x(eps_c: float, delta: float, n_eff: float) -> float:
    """X = eps_c^2 (n_eff - 1) / (14 ln(2/delta)), the blanket size the bound allows."""
    _check_common(eps_c, delta, n_eff, "balle_x")
    return eps_c**2 * (n_eff - 1) / (14 * math.log(2 / delta))


def eps_c_from_local(eps_l: float, delta: float, n_eff: float, k_eff: int) -> float:
    """Forward closed-form bound: central epsilon of n_eff shuffled k_eff-RR reports at eps_l."""
    if k_eff < 2:
        raise ValueError(f"eps_c_from_local: k_eff must be >= 2, got {k_eff}")
    _check_common(1.0, delta, n_eff, "eps_c_from_local")
    return math.sqrt(14 * math.log(2 / delta) * (math.exp(eps_l) + k_eff - 1) / (n_eff - 1))


def calculate(
    eps_c: float, delta: float, n_eff: float, k_eff: int, policy: str = "strict"
) -> LocalBudget:
    """The paper's Calculate(eps_c, delta, ...) with a feasibility policy (module docstring)."""
    if policy not in POLICIES:
        raise ValueError(f"calculate: policy must be one of {POLICIES}, got {policy!r}")
    if k_eff < 2:
        raise ValueError(f"calculate: k_eff must be >= 2, got {k_eff}")
    if eps_c > 1:
        warnings.warn(
            f"calculate: eps_c={eps_c} > 1 lies outside the Balle et al. bound's validity range",
            stacklevel=2,
        )
    a = balle_x(eps_c, delta, n_eff) - k_eff + 1
    solved = math.log(a) if a > 0 else None
    if policy == "fallback":
        if solved is None or solved < eps_c:
            return LocalBudget(
                eps_c, True, policy, a, "fallback to eps_l = eps_c (no amplification)"
            )
        return LocalBudget(solved, True, policy, a, "closed-form Balle bound")
    limit = 1.0 if policy == "strict" else 0.0
    if a <= limit:
        return LocalBudget(
            None, False, policy, a, f"X - k + 1 = {a:.4g} <= {limit:g}: no local epsilon ({policy})"
        )
    if solved is not None and solved < 0:
        warnings.warn(
            f"calculate: eps_l = {solved:.4g} < 0 under paper_lenient: RR is then |eps_l|-LDP and "
            "the shuffle bound gives no guarantee (reproduction only)",
            stacklevel=2,
        )
        return LocalBudget(solved, True, policy, a, "negative eps_l: no central guarantee")
    return LocalBudget(solved, True, policy, a, "closed-form Balle bound")


def calculate_eps_local(
    eps_c: float, delta: float, n_eff: float, k_eff: int, policy: str = "strict"
) -> float | None:
    """Local epsilon from ``calculate`` (None when infeasible under ``policy``)."""
    return calculate(eps_c, delta, n_eff, k_eff, policy).eps_local


def feasibility_threshold(delta: float, n_eff: float, k_eff: float) -> float:
    """Smallest eps_c with X > k_eff (eps_l > 0 under the strict policy)."""
    _check_common(1.0, delta, n_eff, "feasibility_threshold")
    return math.sqrt(k_eff * 14 * math.log(2 / delta) / (n_eff - 1))
