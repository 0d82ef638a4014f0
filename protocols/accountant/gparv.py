"""Exact hockey-stick divergence of a "generalized privacy amplification random variable" sum.

Every decomposition bound in this package (and the exact value of shuffled k-RR on a dataset in
which all other users hold the same value) reduces to

    delta(eps) = (1/n) E[ (G_1 + ... + G_n)_+ ],   G_i i.i.d., finitely many atoms,

(Balle et al. 2019, Lemma 5.3 form; Su, Cheng, Wang 2025, "GPARV"). Atom j has probability
``w_j`` and value ``a_j - e^eps b_j`` (affine in e^eps). The counts of the atoms are
multinomial(n, w), so the expectation is a finite sum over counts. It is evaluated here by
conditioning, never by an FFT of the whole distribution:

- the largest non-positive atom ("rest") is absorbed: S = g_r n + sum_j (g_j - g_r) c_j;
- the other atoms but one are *outer* dimensions, processed so that each one is an extreme
  (largest or smallest value) among the atoms not yet processed. Then the conditional
  expectation F(c_1..c_j) is monotone in c_j (coupling: one more count of atom j replaces a
  count of some later atom, which changes S by g_j - g_later, of one sign). Each outer count
  ranges over a window of its conditional binomial law; inside the window, buckets of counts
  are charged with F at the bucket's worse end (upper bound) and its better end (lower bound);
  outside the window the mass (at most ``tail`` each side) is charged with the largest value
  F can take (upper) or dropped (lower). Width-1 buckets are exact;
- the last positive atom is summed in closed form: for K ~ Bin(N, pi) and h > 0,
  E[(S + h K)_+] = S Pr[K >= k*] + h N pi Pr[Bin(N - 1, pi) >= k* - 1], k* = floor(-S/h) + 1
  (scipy's regularized incomplete beta, accurate far into the tails).

So ``gparv_delta`` returns a rigorous (lower, upper) pair, equal when every window is narrower
than ``points``. Hand-written: no maintained library evaluates shuffle amplification (see
docs/accountant.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import bdtr, bdtrc


@dataclass(frozen=True)
class Atoms:
    """Law of G: atom j has probability ``w[j]`` and value ``a[j] - e^eps * b[j]``."""

    a: tuple[float, ...]
    b: tuple[float, ...]
    w: tuple[float, ...]

    def __post_init__(self) -> None:
        if not (len(self.a) == len(self.b) == len(self.w)) or not self.a:
            raise ValueError("Atoms: a, b and w must be non-empty and of equal length")
        if min(self.w) < 0 or abs(sum(self.w) - 1.0) > 1e-9:
            raise ValueError(f"Atoms: probabilities must be >= 0 and sum to 1, got {self.w}")

    def values(self, eps: float) -> np.ndarray:
        """Atom values at this eps."""
        return np.asarray(self.a) - math.exp(eps) * np.asarray(self.b)

    def merged(self, eps: float) -> tuple[np.ndarray, np.ndarray]:
        """(values, probabilities) at eps with equal values merged and zero-probability
        atoms dropped."""
        vals = self.values(eps)
        w = np.asarray(self.w, dtype=np.float64)
        keep = w > 0
        vals, w = vals[keep], w[keep]
        key = np.round(vals, 12)
        uniq, inv = np.unique(key, return_inverse=True)
        out_v = np.array([vals[inv == i].mean() for i in range(uniq.size)])
        out_w = np.bincount(inv, weights=w, minlength=uniq.size)
        return out_v, out_w


def _sf(k: np.ndarray, n: np.ndarray, p: float | np.ndarray) -> np.ndarray:
    """Pr[Bin(n, p) >= k] elementwise (k, n integer arrays; n may be 0)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.rint(np.asarray(n, dtype=np.float64)).astype(np.int64)
    k, n, p = np.broadcast_arrays(k, n, np.asarray(p, dtype=np.float64))
    out = np.where(k <= 0, 1.0, 0.0)
    mid = (k > 0) & (k <= n)
    if mid.any():
        out[mid] = bdtrc(k[mid] - 1, n[mid], p[mid])
    return out


def _cdf(k: np.ndarray, n: np.ndarray, p: float | np.ndarray) -> np.ndarray:
    """Pr[Bin(n, p) <= k] elementwise."""
    k = np.asarray(k, dtype=np.float64)
    n = np.rint(np.asarray(n, dtype=np.float64)).astype(np.int64)
    k, n, p = np.broadcast_arrays(k, n, np.asarray(p, dtype=np.float64))
    out = np.where(k >= n, 1.0, 0.0)
    mid = (k >= 0) & (k < n)
    if mid.any():
        out[mid] = bdtr(k[mid], n[mid], p[mid])
    return out


def positive_part_binomial(s: np.ndarray, h: float, n: np.ndarray, p: float) -> np.ndarray:
    """E[(s + h K)_+] for K ~ Bin(n, p), h > 0, elementwise over arrays s and n."""
    s = np.asarray(s, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if h <= 0:
        raise ValueError("positive_part_binomial: h must be > 0")
    kstar = np.floor(-s / h) + 1.0
    kstar = np.clip(kstar, 0.0, n + 1.0)
    if p <= 0.0:
        return np.maximum(s, 0.0)
    tail, tail1 = _tails_dedup(kstar, n, p)
    val = s * tail + h * n * p * tail1
    return np.maximum(val, 0.0)


def _tails_dedup(kstar: np.ndarray, n: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(Pr[Bin(n, p) >= k*], Pr[Bin(n - 1, p) >= k* - 1]) elementwise, each distinct (n, k*)
    pair evaluated once: the states of the decomposition bound share few of them (k* spans a
    handful of counts per n), and the incomplete beta dominates the cost. Same values as
    evaluating every element."""
    kstar, n = np.broadcast_arrays(kstar, n)
    if kstar.size == 0 or np.ndim(p) != 0:
        return _sf(kstar, n, p), _sf(kstar - 1.0, np.maximum(n - 1.0, 0.0), p)
    ni = np.rint(n).astype(np.int64).ravel()
    ki = kstar.astype(np.int64).ravel()
    nmin = int(ni.min())
    span = int(ni.max()) - nmin + 1
    if span > ni.size:  # n too spread to tabulate: evaluate elementwise
        return _sf(kstar, n, p), _sf(kstar - 1.0, np.maximum(n - 1.0, 0.0), p)
    rid = ni - nmin
    kmin = np.full(span, np.iinfo(np.int64).max, dtype=np.int64)
    kmax = np.full(span, -1, dtype=np.int64)
    np.minimum.at(kmin, rid, ki)
    np.maximum.at(kmax, rid, ki)
    width = np.where(kmax >= 0, kmax - np.minimum(kmin, kmax) + 1, 0)
    offset = np.concatenate([[0], np.cumsum(width)[:-1]])
    rows = np.repeat(np.arange(span), width)
    ktab = kmin[rows] + (np.arange(rows.size) - offset[rows])
    ntab = (rows + nmin).astype(np.float64)
    ktab = ktab.astype(np.float64)
    t0 = _sf(ktab, ntab, p)
    t1 = _sf(ktab - 1.0, np.maximum(ntab - 1.0, 0.0), p)
    at = offset[rid] + (ki - kmin[rid])
    return t0[at].reshape(kstar.shape), t1[at].reshape(kstar.shape)


def binomial_windows(
    n: np.ndarray, p: float, tail: float, *, z_extra: float, rounds: int
) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] per entry of n with Pr[Bin(n,p) < lo] <= tail and Pr[> hi] <= tail (verified).

    Starts at mean -/+ (sqrt(2 ln(1/tail)) + ``z_extra``) sd and widens each end by sd/2 for at
    most ``rounds`` steps; only the entries still failing are re-evaluated (an entry that passed
    keeps its end). The one home of the window of the GPARV and crowd accountants."""
    n = np.asarray(n, dtype=np.int64)
    mean = n * p
    sd = np.sqrt(np.maximum(n * p * (1 - p), 1.0))
    z = math.sqrt(2.0 * math.log(1.0 / tail)) + z_extra
    lo = np.clip(np.floor(mean - z * sd), 0, n).astype(np.int64)
    hi = np.clip(np.ceil(mean + z * sd), 0, n).astype(np.int64)
    step = np.maximum(1, (sd / 2).astype(np.int64))
    act = np.flatnonzero(lo > 0)
    for _ in range(rounds):
        act = act[(lo[act] > 0) & (_cdf(lo[act] - 1, n[act], p) > tail)]
        if act.size == 0:
            break
        lo[act] = np.maximum(lo[act] - step[act], 0)
    act = np.flatnonzero(hi < n)
    for _ in range(rounds):
        act = act[(hi[act] < n[act]) & (_sf(hi[act] + 1, n[act], p) > tail)]
        if act.size == 0:
            break
        hi[act] = np.minimum(hi[act] + step[act], n[act])
    return lo, hi


def _grid(lo: np.ndarray, hi: np.ndarray, points: int) -> np.ndarray:
    """(states, P) integer grid from lo to hi inclusive per state (duplicates allowed)."""
    width = int((hi - lo).max()) + 1
    m = min(points, width)
    if m <= 1:
        return lo[:, None].copy()
    frac = np.linspace(0.0, 1.0, m)
    g = lo[:, None] + np.floor(frac[None, :] * (hi - lo)[:, None] + 1e-9).astype(np.int64)
    g[:, -1] = hi
    # width-1 windows narrower than points: exact unit grid (np.maximum.accumulate keeps order)
    return np.maximum.accumulate(g, axis=1)


def gparv_delta(
    eps: float,
    atoms: Atoms,
    n: int,
    *,
    tail: float = 1e-18,
    points: int = 400,
) -> tuple[float, float]:
    """(lower, upper) on delta(eps) = (1/n) E[(G_1 + ... + G_n)_+] (module docstring)."""
    if n < 1:
        raise ValueError(f"gparv_delta: n must be >= 1, got {n}")
    vals, w = atoms.merged(eps)
    if not (vals > 0).any():
        return 0.0, 0.0
    gmax = float(vals.max())
    nonpos = vals <= 0
    if nonpos.any():
        r = int(np.flatnonzero(nonpos)[np.argmax(vals[nonpos])])
    else:  # every atom positive: then the sum is positive, E = n E[G]
        mean = float(vals @ w)
        return mean, mean
    g_r = float(vals[r])
    others = [j for j in range(vals.size) if j != r]
    # order: repeatedly take an extreme of the remaining atoms (min if negative, else max);
    # the last one processed must be positive (closed form).
    order: list[int] = []
    remaining = list(others)
    while len(remaining) > 1:
        lo_j = min(remaining, key=lambda j: vals[j])
        hi_j = max(remaining, key=lambda j: vals[j])
        pick = lo_j if vals[lo_j] - g_r < 0 else hi_j
        # keep a positive atom for the closed form
        if pick == hi_j and sum(vals[j] > 0 for j in remaining) == 1:
            pick = lo_j
        order.append(pick)
        remaining.remove(pick)
    last = remaining[0]
    if vals[last] <= g_r:  # no positive atom left relative to rest: nothing positive
        return 0.0, 0.0
    # state arrays: remaining trials, partial sum, weights (upper, lower)
    n_rem = np.array([n], dtype=np.int64)
    s_up = np.array([g_r * n])
    s_lo = s_up.copy()
    n_lo = n_rem.copy()
    w_up = np.ones(1)
    w_lo = np.ones(1)
    extra_up = 0.0  # charged mass outside windows (already multiplied by the bound on F)
    p_rem = 1.0
    for j in order:
        h = float(vals[j] - g_r)
        pj = float(w[j]) / p_rem if p_rem > 0 else 0.0
        pj = min(max(pj, 0.0), 1.0)
        decreasing = h < 0
        # upper branch
        s_up, n_rem, w_up, add = _expand(s_up, n_rem, w_up, h, pj, tail, points, decreasing, True)
        extra_up += add * gmax * n
        s_lo, n_lo, w_lo, _ = _expand(s_lo, n_lo, w_lo, h, pj, tail, points, decreasing, False)
        p_rem -= float(w[j])
    h_last = float(vals[last] - g_r)
    p_last = float(w[last]) / p_rem if p_rem > 0 else 0.0
    p_last = min(max(p_last, 0.0), 1.0)
    up = float(w_up @ positive_part_binomial(s_up, h_last, n_rem, p_last)) + extra_up
    lo = float(w_lo @ positive_part_binomial(s_lo, h_last, n_lo, p_last))
    return max(lo, 0.0) / n, up / n


def _expand(
    s: np.ndarray,
    n_rem: np.ndarray,
    w: np.ndarray,
    h: float,
    p: float,
    tail: float,
    points: int,
    decreasing: bool,
    upper: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Branch every state over the conditional count c ~ Bin(n_rem, p) of one outer atom.

    Returns new (s, n_rem, weights) and, for the upper branch, the total weight left outside
    the windows on the side where F is largest (to be charged with the maximum of F).
    """
    keep = w > 0
    s, n_rem, w = s[keep], n_rem[keep], w[keep]
    if p <= 0.0 or s.size == 0:
        return s, n_rem, w, 0.0
    lo, hi = binomial_windows(n_rem, p, tail, z_extra=1.0, rounds=200)
    g = _grid(lo, hi, points)  # (states, m)
    nn = n_rem[:, None]
    before = _cdf(g - 1, nn, p)  # Pr[C < g_i]
    after_hi = _sf(hi + 1, n_rem, p)  # Pr[C > hi]
    below_lo = _cdf(lo - 1, n_rem, p)  # Pr[C < lo]
    nxt = np.concatenate([before[:, 1:], (1.0 - after_hi)[:, None]], axis=1)
    mass = np.maximum(nxt - before, 0.0)  # bucket [g_i, g_{i+1})
    # F monotone in c: decreasing -> worst at the left end; increasing -> at the right end
    if decreasing == upper:
        at = g
    else:
        # the bucket's last count: g_{i+1} - 1 (the final bucket is the single count hi)
        at = np.maximum(np.concatenate([g[:, 1:] - 1, g[:, -1:]], axis=1), g)
    new_s = (s[:, None] + h * at).ravel()
    new_n = (nn - at).ravel()
    new_w = (w[:, None] * mass).ravel()
    add = 0.0
    if upper:
        # outside mass on the side where F is larger: charge with max F (caller multiplies)
        side = below_lo if decreasing else after_hi
        add = float(w @ side)
        # the other side: F there is at most F at the window end -> charge with that end
        other = after_hi if decreasing else below_lo
        end = hi if decreasing else lo
        new_s = np.concatenate([new_s, s + h * end])
        new_n = np.concatenate([new_n, n_rem - end])
        new_w = np.concatenate([new_w, w * other])
    return new_s, new_n, new_w, add
