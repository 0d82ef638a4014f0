"""Exact privacy curve of shuffled k-ary randomized response, maximised over the other users.

Shuffled k-RR publishes the histogram of the n reports. For neighbouring datasets (target x0 vs
x1, the other n-1 users' values fixed), delta(eps) is the hockey-stick divergence of the two
histogram laws; the mechanism's curve is its maximum over the other users' values and over
both directions.

Homogeneous datasets (every other user holds one value z) have a closed form: the histogram of
the others is multinomial(n-1, R(z)), and (Balle et al. 2019, Lemma 5.3 with omega = R(z))
delta = (1/n) E[(sum_i G_i)_+] with G = (R(x0)(W) - e^eps R(x1)(W)) / R(z)(W), W ~ R(z). For
z = x0 or x1 the GPARV has three atoms (x0, x1, any other value); for a third value z it has four,
and merging "z" with the other values (the adversary ignores that distinction) gives a lower
bound with three atoms, exact for k = 3. Both directions are covered by z in {x0, x1, third}
(swapping x0 and x1 maps one direction onto the other).

Binary RR (k = 2): the others are described by the number a of them holding x0 = 1; the view is
the count of ones, with law Bern(p or q) + Bin(a, p) + Bin(n-1-a, q), and direction Q||P at a
equals direction P||Q at n-1-a. The homogeneous datasets are NOT always the worst (at small eps
a balanced dataset can be worse), so the maximum over a is searched, with a certificate:
branch and bound over intervals [l, u] of a, using that every dataset with a in [l, u] contains
l ones and n-1-u zeros plus u-l other users, and revealing those users' reports (independent of
the target) can only increase delta: delta_a <= delta(l ones, n-1-u zeros). The search starts
from the worst homogeneous epsilon eps_h (a lower bound: that dataset attains it) and certifies
eps_c = eps_h (1 + tau): every interval is either bounded below delta at eps_c or split down to
single datasets, evaluated exactly. A single dataset above delta raises eps_h (it becomes the
attaining dataset). The result is exact to the relative tolerance tau (reported).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from protocols.accountant.crowd import fixed_three_atoms
from protocols.accountant.search import bisect_last_true


def _pq(eps_local: float, k: int) -> tuple[float, float]:
    e = math.exp(eps_local)
    return e / (e + k - 1), 1.0 / (e + k - 1)


def homogeneous_delta(
    eps: float, eps_local: float, n: int, k: int, z: str, *, tail: float = 1e-18
) -> tuple[float, float]:
    """(lower, upper) delta(eps), direction P(x0) || Q(x1), every other user holding ``z``.

    ``z`` is "x0", "x1" or "third" (k >= 3; for k >= 4 a lower bound, see module docstring).
    """
    p, q = _pq(eps_local, k)
    if z == "x0":
        om = (p, q, (k - 2) * q)
    elif z == "x1":
        om = (q, p, (k - 2) * q)
    elif z == "third":
        if k < 3:
            raise ValueError("krr_exact: a third value needs k >= 3")
        om = (q, q, 1.0 - 2 * q)
    else:
        raise ValueError(f"krr_exact: z must be x0, x1 or third, got {z!r}")
    r0 = (p, q, 1.0 - p - q)
    r1 = (q, p, 1.0 - p - q)
    a = tuple(r0[i] / om[i] if om[i] > 0 else 0.0 for i in range(3))
    b = tuple(r1[i] / om[i] if om[i] > 0 else 0.0 for i in range(3))
    if k == 2:  # no third outcome
        a, b, om = (a[0], a[1], 0.0), (b[0], b[1], 0.0), (om[0], om[1], 0.0)
    return fixed_three_atoms(eps, n, a, b, om, tail=tail)


def worst_homogeneous(
    eps_local: float, n: int, delta: float, k: int
) -> tuple[float, str, float | None]:
    """(eps, dataset, upper-search epsilon) of the worst homogeneous dataset at this delta.

    Returns the largest lower-bound epsilon over z in {x0, x1, third} and the dataset name.
    """
    tail = delta * 1e-9
    best = (0.0, "none")
    for z in ("x0", "x1", "third") if k >= 3 else ("x0", "x1"):
        # largest eps whose lower delta still exceeds the target (bisection, lower side only)
        a, b = 0.0, eps_local
        if homogeneous_delta(a, eps_local, n, k, z, tail=tail)[0] <= delta:
            continue
        a = bisect_last_true(
            lambda x, z=z: homogeneous_delta(x, eps_local, n, k, z, tail=tail)[0] > delta,
            a,
            b,
            rel=1e-5,
        )
        if a > best[0]:
            best = (a, z)
    return best[0], best[1], None


# --- binary RR: delta of an arbitrary dataset and the certified search over datasets ------


def _window_pmf(m: int, p: float, tail: float) -> tuple[int, np.ndarray]:
    """(offset, pmf) of Bin(m, p) on a window leaving at most ``tail`` mass each side."""
    if m == 0:
        return 0, np.ones(1)
    dist = binom(m, p)
    sd = math.sqrt(max(m * p * (1 - p), 1.0))
    z = math.sqrt(2 * math.log(1 / tail)) + 2.0
    lo = max(0, int(math.floor(m * p - z * sd)))
    hi = min(m, int(math.ceil(m * p + z * sd)))
    while lo > 0 and dist.cdf(lo - 1) > tail:
        lo = max(0, lo - int(sd) - 1)
    while hi < m and dist.sf(hi) > tail:
        hi = min(m, hi + int(sd) + 1)
    ks = np.arange(lo, hi + 1)
    return lo, np.exp(dist.logpmf(ks))


def binary_dataset_delta(
    eps: float, eps_local: float, ones: int, zeros: int, *, tail: float = 1e-20
) -> float:
    """Upper bound (exact up to 4 tail masses) on delta(eps), direction target 1 || target 0,
    for binary RR with ``ones`` other users holding 1 and ``zeros`` holding 0."""
    p, q = _pq(eps_local, 2)
    o1, f1 = _window_pmf(ones, p, tail)
    o0, f0 = _window_pmf(zeros, q, tail)
    pi = np.convolve(f1, f0)  # law of the others' count of ones, from offset o1 + o0
    alpha = math.exp(eps)
    # view s = target + others: P(s) = p pi(s-1) + q pi(s); Q(s) = q pi(s-1) + p pi(s)
    prev = np.concatenate([[0.0], pi])
    cur = np.concatenate([pi, [0.0]])
    diff = (p - alpha * q) * prev - (alpha * p - q) * cur
    return float(np.maximum(diff, 0.0).sum()) + 4 * tail


@dataclass(frozen=True)
class BinaryExact:
    """Result of the certified search for binary RR."""

    lower: float  # attained by ``dataset``: the true epsilon is at least this
    upper: float  # certified: every dataset has delta <= target at this epsilon
    dataset: str
    evaluations: int


def _epsilon_of_dataset(eps_local: float, ones: int, zeros: int, delta: float) -> float:
    """Smallest eps (to 1e-7 relative) with the dataset's delta <= target (0 if already)."""
    if binary_dataset_delta(0.0, eps_local, ones, zeros) <= delta:
        return 0.0
    return bisect_last_true(
        lambda x: binary_dataset_delta(x, eps_local, ones, zeros) > delta, 0.0, eps_local, rel=1e-7
    )


def binary_exact(
    eps_local: float, n: int, delta: float, *, tau: float = 1e-4, budget: int = 4000
) -> BinaryExact:
    """Exact epsilon of shuffled binary RR (module docstring): lower is attained by a dataset,
    upper is certified for all datasets; upper = lower (1 + tau) unless tau had to grow."""
    # start: the worst homogeneous dataset (a = n-1 in direction 1||0 covers both directions)
    lower = _epsilon_of_dataset(eps_local, n - 1, 0, delta)
    worst = f"every other user holds the target's value in P (a = {n - 1})"
    low0 = _epsilon_of_dataset(eps_local, 0, n - 1, delta)
    if low0 > lower:
        lower, worst = low0, "every other user holds the target's value in Q (a = 0)"
    evals = 2
    while True:
        eps_c = min(eps_local, lower * (1 + tau)) if lower > 0 else 1e-9
        stack = [(0, n - 1)]
        raised = False
        while stack:
            lo_a, hi_a = stack.pop()
            evals += 1
            d = binary_dataset_delta(eps_c, eps_local, lo_a, n - 1 - hi_a)
            if d <= delta:
                continue
            if lo_a == hi_a:  # a single dataset above delta: it raises the lower bound
                e = _epsilon_of_dataset(eps_local, lo_a, n - 1 - lo_a, delta)
                if e > lower:
                    lower, worst = e, f"{lo_a} other users hold the target's P value"
                raised = True
                break
            mid = (lo_a + hi_a) // 2
            stack.append((lo_a, mid))
            stack.append((mid + 1, hi_a))
            if evals > budget:
                break
        if raised:
            continue
        if evals > budget and stack:
            tau *= 10
            evals = 2
            if tau > 0.1:
                return BinaryExact(lower, eps_local, worst, evals)
            continue
        return BinaryExact(lower, eps_c, worst, evals)


def binary_certify(
    eps: float, eps_local: float, n: int, delta: float, *, budget: int = 4000
) -> bool | None:
    """True when every dataset of shuffled binary RR has delta(eps) <= delta (certified by the
    branch and bound above), False when one dataset exceeds it, None when the budget ran out."""
    stack = [(0, n - 1)]
    evals = 0
    while stack:
        lo_a, hi_a = stack.pop()
        evals += 1
        if binary_dataset_delta(eps, eps_local, lo_a, n - 1 - hi_a) <= delta:
            continue
        if lo_a == hi_a:
            return False
        if evals > budget:
            return None
        mid = (lo_a + hi_a) // 2
        stack.extend([(lo_a, mid), (mid + 1, hi_a)])
    return True
