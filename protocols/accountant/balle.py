"""Balle, Bell, Gascon, Nissim 2019 ("privacy blanket"): closed form for shuffled k-RR.

``eps_c = sqrt(14 ln(2/delta) (e^eps_l + k - 1) / (n - 1))``, obtained from the blanket
probability ``gamma = k/(e^eps_l + k - 1) = 14 k ln(2/delta) / ((n-1) eps_c^2)``. The theorem
also needs ``eps_c <= 1`` and ``gamma >= 27 k / ((n-1) eps_c)``, i.e.
``(n-1) eps_c >= 27 (e^eps_l + k - 1)``. Outside these conditions the functions report
"invalid" rather than a number. The formula is k-RR specific (OLH uses it with k = g, as in the
HP-SDP paper's Theorem 1).
"""

from __future__ import annotations

import math

BLANKET_CONST = 14.0  # the constant of the blanket bound, 14 ln(2/delta)


def blanket_epsilon(eps_local: float, n: float, delta: float, k: float) -> float:
    """The closed form itself, unchecked: ``sqrt(14 ln(2/delta) (e^eps_l + k - 1) / (n - 1))``."""
    return math.sqrt(
        BLANKET_CONST * math.log(2.0 / delta) * (math.exp(eps_local) + k - 1) / (n - 1)
    )


def blanket_capacity(eps_central: float, n: float, delta: float) -> float:
    """``eps_c^2 (n - 1) / (14 ln(2/delta))``: the e^eps_l + k - 1 the bound allows at eps_c."""
    return eps_central**2 * (n - 1) / (BLANKET_CONST * math.log(2.0 / delta))


def blanket_mass_needed(eps_central: float, delta: float) -> float:
    """``14 ln(2/delta) / eps_c^2``: the blanket mass (expected uniform messages) eps_c needs."""
    return BLANKET_CONST * math.log(2.0 / delta) / eps_central**2


def blanket_epsilon_of_mass(mass: float, delta: float) -> float:
    """``sqrt(14 ln(2/delta) / mass)``: the eps_c a blanket of ``mass`` uniform messages gives."""
    return math.sqrt(BLANKET_CONST * math.log(2.0 / delta) / mass)


def _check(n: int, delta: float, k: int) -> None:
    if n < 2:
        raise ValueError(f"balle: need n >= 2 users, got {n}")
    if not 0 < delta < 1:
        raise ValueError(f"balle: delta must lie in (0, 1), got {delta}")
    if k < 2:
        raise ValueError(f"balle: k-RR domain size k must be >= 2, got {k}")


def balle_conditions(eps_central: float, eps_local: float, n: int, k: int) -> str:
    """Empty string when the closed form's conditions hold, else the reason they fail."""
    if eps_central > 1.0:
        return f"closed form gives eps_c = {eps_central:.4g} > 1, outside the theorem (eps_c <= 1)"
    if (n - 1) * eps_central < 27.0 * (math.exp(eps_local) + k - 1):
        return "blanket condition gamma >= 27k/((n-1) eps_c) fails"
    return ""


def balle_epsilon(eps_local: float, n: int, delta: float, k: int) -> tuple[float | None, str]:
    """(eps_c, reason): eps_c None with the reason when the closed form is not valid."""
    _check(n, delta, k)
    if not eps_local > 0:
        raise ValueError(f"balle: local epsilon must be > 0, got {eps_local}")
    eps_c = blanket_epsilon(eps_local, n, delta, k)
    why = balle_conditions(eps_c, eps_local, n, k)
    if why:
        return None, why
    if eps_c >= eps_local:
        return None, "no amplification: closed form is not below the local epsilon"
    return eps_c, ""


def balle_max_local_epsilon(eps_central: float, n: int, delta: float, k: int) -> float | None:
    """Largest eps_l with closed form <= eps_central (conditions checked); None if infeasible.

    Inverts ``e^eps_l = eps_c^2 (n-1) / (14 ln(2/delta)) - k + 1``.
    """
    _check(n, delta, k)
    if not 0 < eps_central <= 1.0:
        return None
    x = blanket_capacity(eps_central, n, delta) - k + 1
    if x <= 1.0:
        return None
    eps_l = math.log(x)
    if balle_conditions(eps_central, eps_l, n, k):
        return None
    return eps_l
