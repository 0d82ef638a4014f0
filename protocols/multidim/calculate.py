"""The paper's ``Calculate``: local budget from the closed-form Balle et al. k-RR shuffle bound.

Seed 000 (spec Sec. 2.3-2.4) uses, for n_eff users running k_eff-ary RR with eps_l and a shuffle,

    eps_c = sqrt(14 ln(2/delta) (e^{eps_l} + k_eff - 1) / (n_eff - 1))

and inverts it: X = eps_c^2 (n_eff - 1) / (14 ln(2/delta)), eps_l = ln(X - k_eff + 1).

The closed form is Balle, Bell, Gascon, Nissim (CRYPTO 2019), Corollary 5.3.1 (the blanket
theorem for k-RR): it holds only for eps_c <= 1 and when the blanket is large enough,
(n_eff - 1) eps_c >= 27 (e^{eps_l} + k_eff - 1). Outside these conditions :func:`calculate`
gives no local epsilon (``outside_theorem=True`` with the reason); the protocols then route the
calibration to the accountant and say so (:func:`protocols.multidim.common.local_budget`).
``n_eff`` is the number of users actually shuffled together: an integer (a group's guaranteed
size, never the fractional n/d).

Feasibility policies when the argument A = X - k_eff + 1 is small:

* ``strict`` (default): infeasible if A <= 1 (eps_l <= 0);
* ``paper_lenient``: the paper's Kosarak eps_c = 0.2 entries imply it ran negative eps_l. A
  negative or zero eps_l is no privacy guarantee (RR with eps_l < 0 is |eps_l|-LDP and the blanket
  decomposition behind the bound needs eps_l > 0), so it is an error here too: the policy is kept
  by name for the reproduction's policy table and now behaves like ``strict``;
* ``fallback`` (not in the paper): eps_l = max(eps_c, ln A), always feasible, since eps_c-LDP
  reports remain eps_c-DP after shuffling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from protocols.accountant.balle import blanket_capacity, blanket_epsilon, blanket_epsilon_of_mass

POLICIES = ("strict", "paper_lenient", "fallback")


@dataclass(frozen=True)
class LocalBudget:
    """Result of ``calculate``: the local epsilon (None if infeasible) and how it was obtained."""

    eps_local: float | None
    feasible: bool
    policy: str
    argument: float  # X - k_eff + 1 (e^{eps_l} before the policy is applied)
    reason: str
    outside_theorem: bool = False  # the closed form's conditions fail (route to the accountant)
    bound: str = "balle19-closed-form"  # what certifies eps_local


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
    return blanket_capacity(eps_c, n_eff, delta)


def eps_c_from_local(eps_l: float, delta: float, n_eff: float, k_eff: int) -> float:
    """Forward closed-form bound: central epsilon of n_eff shuffled k_eff-RR reports at eps_l."""
    if k_eff < 2:
        raise ValueError(f"eps_c_from_local: k_eff must be >= 2, got {k_eff}")
    _check_common(1.0, delta, n_eff, "eps_c_from_local")
    return blanket_epsilon(eps_l, n_eff, delta, k_eff)


def theorem_conditions(eps_c: float, eps_l: float, n_eff: float, k_eff: int) -> str:
    """Empty when Balle et al.'s closed form holds at (eps_c, eps_l), else why it does not."""
    if eps_c > 1.0:
        return f"eps_c = {eps_c:g} > 1 lies outside Balle et al.'s theorem (eps_c <= 1)"
    if (n_eff - 1) * eps_c < 27.0 * (math.exp(eps_l) + k_eff - 1):
        return (
            "Balle et al.'s blanket condition (n-1) eps_c >= 27 (e^eps_l + k - 1) fails "
            f"(n_eff = {n_eff:g}, k = {k_eff}, eps_l = {eps_l:.4g})"
        )
    return ""


def calculate(
    eps_c: float, delta: float, n_eff: float, k_eff: int, policy: str = "strict"
) -> LocalBudget:
    """The paper's Calculate(eps_c, delta, ...) with a feasibility policy (module docstring)."""
    if policy not in POLICIES:
        raise ValueError(f"calculate: policy must be one of {POLICIES}, got {policy!r}")
    if k_eff < 2:
        raise ValueError(f"calculate: k_eff must be >= 2, got {k_eff}")
    a = balle_x(eps_c, delta, n_eff) - k_eff + 1
    solved = math.log(a) if a > 0 else None
    if eps_c > 1.0:
        return LocalBudget(
            None, False, policy, a, theorem_conditions(eps_c, 0.0, n_eff, k_eff), True
        )
    if solved is not None and solved > 0:
        why = theorem_conditions(eps_c, solved, n_eff, k_eff)
        if why:
            return LocalBudget(None, False, policy, a, why, True)
    if policy == "fallback":
        if solved is None or solved < eps_c:
            return LocalBudget(
                eps_c, True, policy, a, "fallback to eps_l = eps_c (no amplification)",
                bound="pure LDP (eps_l = eps_c)",
            )  # fmt: skip
        return LocalBudget(solved, True, policy, a, "closed-form Balle bound")
    if a <= 1.0:
        return LocalBudget(
            None, False, policy, a,
            f"X - k + 1 = {a:.4g} <= 1: eps_l = ln(X - k + 1) <= 0 is no privacy guarantee "
            f"({policy})",
        )  # fmt: skip
    return LocalBudget(solved, True, policy, a, "closed-form Balle bound")


def closed_form_eps_local(eps_c: float, delta: float, n_eff: float, k_eff: int) -> float | None:
    """The paper's printed number ln(X - k_eff + 1) (None if X - k_eff + 1 <= 0), with no
    condition checked and no guarantee attached: for tables that reproduce the paper's own
    (negative and eps_c > 1 entries included). Never use it to calibrate a run."""
    a = balle_x(eps_c, delta, n_eff) - k_eff + 1
    return math.log(a) if a > 0 else None


def calculate_eps_local(
    eps_c: float, delta: float, n_eff: float, k_eff: int, policy: str = "strict"
) -> float | None:
    """Local epsilon from ``calculate`` (None when infeasible under ``policy``)."""
    return calculate(eps_c, delta, n_eff, k_eff, policy).eps_local


def feasibility_threshold(delta: float, n_eff: float, k_eff: float) -> float:
    """Smallest eps_c with X > k_eff (eps_l > 0 under the strict policy)."""
    _check_common(1.0, delta, n_eff, "feasibility_threshold")
    return blanket_epsilon_of_mass((n_eff - 1) / k_eff, delta)
