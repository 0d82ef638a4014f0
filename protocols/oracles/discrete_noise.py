"""Exact integer noise: Bernoulli(exp(-gamma)) and discrete Laplace by Canonne, Kamath, Steinke 2020.

"The Discrete Gaussian for Differential Privacy" (NeurIPS 2020), Algorithms 1 and 2: sampling
Bernoulli(exp(-gamma)) for a rational gamma and the discrete Laplace distribution
Pr[Z = z] proportional to exp(-|z|/scale) for a rational scale, using only uniform integers and
integer comparisons. No floating-point number touches the noise, so none of Mironov's (CCS 2012)
floating-point attacks apply; the output law is exactly the ideal one given uniform integers
from the generator (numpy's ``Generator.integers`` is exact: Lemire's rejection method).

Vectorized: every loop of the algorithms runs over the still-undecided elements at once. The
generator is the caller's: a CSPRNG-seeded one in networked runs (:func:`protocols.rng.secure_rng`),
a seeded one only in reproducible simulations (whose noise is then known to whoever holds the
seed).

OpenDP (``opendp``, Rust, CKS20 samplers) was evaluated first: exact and maintained, but it draws
from its own unseedable generator (reproductions could not be seeded) and its Python entry point
takes lists (about 1.5e5 samples per second here against several 1e6 for this numpy version),
too slow for the reproductions' millions of draws.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

MAX_DENOMINATOR = 1 << 24  # rational approximation of a real scale (always rounded up)


def rational_scale(scale: float | Fraction, max_den: int = MAX_DENOMINATOR) -> tuple[int, int]:
    """(s, t) with s/t >= scale (more noise, never less), t <= max_den: the scale actually used."""
    f = Fraction(scale)
    if not f > 0:
        raise ValueError(f"discrete noise: scale must be > 0, got {scale}")
    if f.denominator <= max_den and f.numerator < (1 << 62):
        return f.numerator, f.denominator
    t = max_den
    s = math.ceil(f * t)
    if s >= (1 << 62):
        raise ValueError(f"discrete noise: scale {scale} is too large")
    return s, t


def _bernoulli_exp_frac(num: np.ndarray, den: int, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(-num/den)) elementwise for 0 <= num <= den (CKS20 Algorithm 1, gamma <= 1)."""
    num = np.asarray(num, dtype=np.int64)
    k = np.ones(num.shape, dtype=np.int64)
    active = np.ones(num.shape, dtype=bool)
    while True:
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        a = rng.integers(0, den * k[idx]) < num[idx]  # Bernoulli(gamma / K), exactly
        k[idx[a]] += 1
        active[idx[~a]] = False
    return (k % 2) == 1


def bernoulli_exp(num: np.ndarray, den: int, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) elementwise, num >= 0 integers, den >= 1 (CKS20 Alg. 1)."""
    num = np.asarray(num, dtype=np.int64)
    if den < 1 or (num.size and num.min() < 0):
        raise ValueError("bernoulli_exp: need num >= 0 and den >= 1")
    alive = np.ones(num.shape, dtype=bool)
    rem = num // den
    while True:
        idx = np.flatnonzero(alive & (rem > 0))
        if idx.size == 0:
            break
        ok = _bernoulli_exp_frac(np.ones(idx.size, dtype=np.int64), 1, rng)  # exp(-1)
        alive[idx[~ok]] = False
        rem[idx] -= 1
    idx = np.flatnonzero(alive)
    alive[idx] = _bernoulli_exp_frac(num[idx] % den, den, rng)
    return alive


def discrete_laplace(
    scale: float | Fraction, size: int | tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """Exact discrete Laplace: Pr[Z = z] proportional to exp(-|z|/scale') (CKS20 Algorithm 2),
    with scale' = s/t the rational :func:`rational_scale` of ``scale`` (scale' >= scale)."""
    # CKS20 Algorithm 2 samples Lap_Z(t'/s') with integers (s', t'): here t' = s, s' = t.
    t, s = rational_scale(scale)
    shape = (size,) if isinstance(size, int) else tuple(size)
    total = int(np.prod(shape)) if shape else 1
    out = np.empty(total, dtype=np.int64)
    todo = np.arange(total)
    while todo.size:
        m = todo.size
        u = rng.integers(0, t, size=m)
        d = bernoulli_exp(u, t, rng)
        v = np.zeros(m, dtype=np.int64)
        act = d.copy()
        while True:
            idx = np.flatnonzero(act)
            if idx.size == 0:
                break
            a = _bernoulli_exp_frac(np.ones(idx.size, dtype=np.int64), 1, rng)
            v[idx[a]] += 1
            act[idx[~a]] = False
        y = (u + t * v) // s
        b = rng.integers(0, 2, size=m)
        ok = d & ~((b == 1) & (y == 0))
        out[todo[ok]] = (1 - 2 * b[ok]) * y[ok]
        todo = todo[~ok]
    return out.reshape(shape)


def discrete_laplace_pmf(z: np.ndarray, scale: float | Fraction) -> np.ndarray:
    """Pr[Z = z] of :func:`discrete_laplace` (at the rational scale actually used)."""
    s, t = rational_scale(scale)
    a = math.exp(-t / s)
    return (1 - a) / (1 + a) * a ** np.abs(np.asarray(z, dtype=np.float64))


def discrete_laplace_variance(scale: float | Fraction) -> float:
    """Variance of :func:`discrete_laplace`: 2a/(1-a)^2, a = exp(-1/scale')."""
    s, t = rational_scale(scale)
    a = math.exp(-t / s)
    return 2 * a / (1 - a) ** 2
