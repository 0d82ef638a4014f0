"""Polya (negative binomial) noise shares sampled by inversion with a 128-bit fixed-point table.

Split-Mix's distributed noise: each user adds Polya(r, a) - Polya(r, a), r = 1/n_min, so any
n >= n_min users' shares sum to a discrete Laplace of parameter a plus independent extra noise.
Polya(r, a) has Pr[X = k] = Gamma(k + r)/(k! Gamma(r)) a^k (1 - a)^r. numpy's
``negative_binomial`` draws it through floating-point gamma and Poisson variates, with no stated
distance from the ideal law. Here:

1. the probabilities are computed in decimal arithmetic at 60 significant digits (``decimal``:
   a = exp(-eps/p) correctly rounded, p_0 = (1 - a)^r, p_{k+1} = p_k a (k + r)/(k + 1)) up to the
   first T with tail mass 1 - F_{T-1} < 2^-100;
2. the CDF is rounded down to 128-bit fixed point, C_k = floor(2^128 F_k);
3. a sample is the number of k < T with C_k <= U for a uniform 128-bit U (two uniform 64-bit
   words from the caller's generator; the second is drawn only when the first ties a table word).

The sampled law has CDF C_k / 2^128 on k < T and puts the rest of the mass on T, so its total
variation distance from Polya(r, a) is at most (T + 1) 2^-128 + 2^-100 + 10^-50 (decimal
rounding): :attr:`PolyaTable.tv_bound`. Split-Mix adds (1 + e^eps) 2 n tv_bound to its delta
(the 2n shares of n users are within 2n tv_bound of ideal ones, and a mechanism within total
variation eta of an (eps, delta)-DP one is (eps, delta + (1 + e^eps) eta)-DP).
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

DIGITS = 60
TAIL_BITS = 100
FIXED_BITS = 128
MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class PolyaTable:
    """Inversion table of Polya(1/r_den, exp(-eps/precision)) (module docstring)."""

    r_den: int
    epsilon: float
    precision: int
    hi: np.ndarray  # uint64: high words of C_k, k < T
    lo: np.ndarray  # uint64: low words of C_k
    tv_bound: float

    @property
    def length(self) -> int:
        return int(self.hi.size)


@lru_cache(maxsize=16)
def polya_table(r_den: int, epsilon: float, precision: int) -> PolyaTable:
    """The table for shape r = 1/r_den and a = exp(-epsilon/precision)."""
    if r_den < 1 or precision < 1 or not epsilon > 0:
        raise ValueError("polya_table: need r_den >= 1, precision >= 1, epsilon > 0")
    ctx = decimal.Context(prec=DIGITS)
    D = decimal.Decimal
    a = ctx.exp(ctx.divide(-D(epsilon), D(precision)))
    r = ctx.divide(D(1), D(r_den))
    p = ctx.power(ctx.subtract(D(1), a), r)
    cum = D(0)
    tail_limit = D(2) ** -TAIL_BITS
    scale = D(2) ** FIXED_BITS
    words: list[int] = []
    k = 0
    while True:
        cum = ctx.add(cum, p)
        words.append(int(ctx.multiply(cum, scale).to_integral_value(decimal.ROUND_FLOOR)))
        if ctx.subtract(D(1), cum) < tail_limit:
            break
        p = ctx.divide(ctx.multiply(ctx.multiply(p, a), ctx.add(D(k), r)), D(k + 1))
        k += 1
        if k > 50_000_000:
            raise ValueError("polya_table: the table would exceed 5e7 entries")
    c = [min(w, (1 << FIXED_BITS) - 1) for w in words]
    hi = np.array([w >> 64 for w in c], dtype=np.uint64)
    lo = np.array([w & MASK64 for w in c], dtype=np.uint64)
    tv = (len(c) + 1) * 2.0**-FIXED_BITS + 2.0**-TAIL_BITS + 1e-50
    return PolyaTable(int(r_den), float(epsilon), int(precision), hi, lo, tv)


def sample_polya(table: PolyaTable, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws from the table's law: #{k : C_k <= U}, U uniform on [0, 2^128)."""
    u_hi = rng.integers(0, MASK64, size=size, dtype=np.uint64, endpoint=True)
    x = np.searchsorted(table.hi, u_hi, side="right").astype(np.int64)
    first = np.searchsorted(table.hi, u_hi, side="left")
    tie = np.flatnonzero(first != x)  # some C_k share U's high word: compare low words
    if tie.size:
        u_lo = rng.integers(0, MASK64, size=tie.size, dtype=np.uint64, endpoint=True)
        for j, i in enumerate(tie):
            a, b = int(first[i]), int(x[i])
            x[i] = a + int(np.searchsorted(table.lo[a:b], u_lo[j], side="right"))
    return x


def polya_difference_shares(table: PolyaTable, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` users' noise shares Polya(r, a) - Polya(r, a)."""
    return sample_polya(table, count, rng) - sample_polya(table, count, rng)
