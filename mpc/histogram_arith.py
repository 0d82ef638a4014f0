"""Arithmetic of the MPC shuffler's histogram output mode, on Shamir shares over GF(2^31 - 1).

Counting in MPC without comparisons: for a domain {0, .., k-1}, a shared value v and its shared
powers v^0 .. v^(k-1) (``parties.mpc_shuffle.secure_ops.secure_powers``), the Lagrange basis
polynomial L_j (1 at j, 0 at the other domain points) is a public linear combination of the
powers, so every server computes its share of [v == j] = L_j(v) locally, and of the count of j
over the in-domain rows by summing (``counts_from_power_sums``). A value outside the domain is
detected by the domain polynomial prod_j (v - j), zero exactly on the domain
(``domain_polynomial``, ``eval_on_powers``). Everything here is linear in the shares: local
work for each server, no communication.

Domain check and its soundness: per shuffled row and repetition i the servers open
y_i = sum_c r_{i,c} z_c, where z_c = prod_j (v_c - j) for component c and every r_{i,c} is a
fresh secret uniform field element (the sum of inputs of the first t+1 servers). An in-domain
row has every z_c = 0, so y_i = 0; a row with some z_c != 0 gives y_i uniform in GF(p), so
y_i = 0 with probability exactly 1/p, independently for each repetition. A bad row therefore
passes all ``DOMAIN_CHECK_REPETITIONS`` = 3 checks with probability p^-3 = (2^31 - 1)^-3 <
2^-92 (``domain_check_soundness_bits``), and n rows hold an undetected bad row with
probability below n 2^-92, under 2^-64 for n < 2^28. This holds whatever a (malicious) client
chose, as long as one of the t+1 servers that input the masks follows the protocol. The
opened y_i reveal only which shuffled rows are bad.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mpc.shamir import PRIME

DOMAIN_CHECK_REPETITIONS = 3  # independent masked openings per row: soundness p^-3 < 2^-92


def domain_check_soundness_bits(repetitions: int = DOMAIN_CHECK_REPETITIONS) -> float:
    """-log2 of the probability that one out-of-domain row passes every repetition."""
    if repetitions < 1:
        raise ValueError(f"domain check: need at least one repetition, got {repetitions}")
    return repetitions * math.log2(PRIME)


def poly_from_roots(roots: Sequence[int]) -> list[int]:
    """Coefficients (low to high) of prod (x - r) mod PRIME."""
    c = [1]
    for r in roots:
        nxt = [0] * (len(c) + 1)
        for i, ci in enumerate(c):
            nxt[i] = (nxt[i] - r * ci) % PRIME
            nxt[i + 1] = (nxt[i + 1] + ci) % PRIME
        c = nxt
    return c


def domain_polynomial(k: int) -> list[int]:
    """Coefficients of prod_{j < k} (x - j): zero exactly on the domain {0, .., k-1}."""
    if k < 1:
        raise ValueError(f"domain_polynomial: domain size must be >= 1, got {k}")
    return poly_from_roots(range(k))


def lagrange_basis(k: int) -> np.ndarray:
    """``C[j, d]``: coefficient of x^d in the polynomial that is 1 at j and 0 at 0..k-1 \\ j."""
    out = np.zeros((k, k), dtype=np.int64)
    for j in range(k):
        num = poly_from_roots([r for r in range(k) if r != j])
        den = 1
        for r in range(k):
            if r != j:
                den = den * (j - r) % PRIME
        inv = pow(den, PRIME - 2, PRIME)
        out[j] = [c * inv % PRIME for c in num]
    return out


def eval_on_powers(coeffs: Sequence[int], powers: Sequence[np.ndarray]) -> np.ndarray:
    """Shares of p(v) = sum_d coeffs[d] v^d from shares of the powers v^0 .. v^deg (linear)."""
    if len(powers) < len(coeffs):
        raise ValueError(f"eval_on_powers: {len(powers)} powers for degree {len(coeffs) - 1}")
    acc = np.zeros_like(powers[0])
    for d, c in enumerate(coeffs):
        acc = (acc + powers[d] * int(c)) % PRIME
    return acc


def counts_from_power_sums(sums: np.ndarray, k: int) -> np.ndarray:
    """Shares of the per-component counts ``(width, k)`` from shares of the power sums
    ``sums[d] = sum over rows of v^d`` (shape ``(k, width)``), through the Lagrange basis."""
    if sums.shape[0] != k:
        raise ValueError(f"counts_from_power_sums: {sums.shape[0]} power sums for domain {k}")
    basis = lagrange_basis(k)
    c = np.zeros((sums.shape[1], k), dtype=np.int64)
    for d in range(k):
        c = (c + sums[d][:, None] * basis[:, d][None, :]) % PRIME
    return c
