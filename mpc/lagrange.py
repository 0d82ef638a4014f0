"""Lagrange interpolation weights over a prime field: the one home of the formula.

Both Shamir sharing over the MPC field (:mod:`mpc.shamir`) and threshold decryption over the
group order (:mod:`mpc.threshold`) weight shares by the same coefficients; only the modulus and
the interpolation point differ.
"""

from __future__ import annotations

from collections.abc import Sequence


def lagrange_weights(xs: Sequence[int], x0: int, modulus: int) -> list[int]:
    """``lambda_j`` with ``f(x0) = sum_j lambda_j f(xs[j]) (mod modulus)`` for every polynomial f
    of degree < len(xs); ``modulus`` prime and the points distinct mod it (the callers check,
    each naming what it interpolates)."""
    out = []
    for j, xj in enumerate(xs):
        num, den = 1, 1
        for k, xk in enumerate(xs):
            if k != j:
                num = num * (x0 - xk) % modulus
                den = den * (xj - xk) % modulus
        out.append(num * pow(den, -1, modulus) % modulus)
    return out
