"""Fast exact GPARV sums for the structured randomizers, conditioned on the crowd size.

For a blanket GPARV (``protocols.accountant.decomposition``) the number M of non-zero atoms
among the n trials is Bin(n, gamma), and given M the atoms are blanket draws. With
F(M) = E[(S_M)_+ | M], S_M the sum of M blanket draws' values,

    delta = (1/n) sum_M Pr[M] F(M),   and   F(M)/M is non-increasing in M,

because F(M)/M is the hockey-stick divergence of the pair (target + M-1 blanket draws), and one
more independent blanket draw is a post-processing (Balle et al. 2019, Lemma 5.3 and data
processing). So M can be bucketed rigorously: a bucket of crowd sizes is charged with F(m)/m at
its left end (upper bound) or its right end (lower bound), weighted by E[M; bucket]. Within a
crowd size the sum is exact: the count of one atom is enumerated over a window whose outside mass
(at most ``tail``) is charged with the largest value the sum can take (upper) or dropped (lower),
and the last atom is summed in closed form (:func:`positive_part_binomial`).

Inner models (values given a blanket draw, u = e^eps0-ratio, alpha = e^eps):

- ``"krr"``: (u, 1), (1, u) w.p. c each, (1, 1) w.p. 1 - 2c. S = (1-alpha) M + (u-1)(K0 -
  alpha K1) with (K0, K1) the counts of the first two corners; k-RR has c = 1/k.
- ``"bits"``: u0 = u^B0, u1 = u^B1 with B0, B1 independent Bern(rho) (unary encodings,
  Hadamard response): the same S with K0, K1 independent Bin(M, rho).

``fixed_three_atoms`` evaluates the exact delta of a GPARV with three atoms and no zero atom
(shuffled k-RR with every other user holding one value), enumerating one count exactly.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from protocols.accountant.gparv import _cdf, _sf, binomial_windows, positive_part_binomial


def _windows(n: np.ndarray, p: float, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] per entry of n with Pr[Bin(n,p) < lo], Pr[> hi] <= tail (verified)."""
    return binomial_windows(n, p, tail, z_extra=1.5, rounds=400)


def _binom_pmf(k: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    """Binomial pmf in log space (accurate far in the tails)."""
    from scipy.special import gammaln

    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    ok = (k >= 0) & (k <= n)
    kk = np.where(ok, k, 0.0)
    if p <= 0.0:
        return np.where(ok & (kk == 0), 1.0, 0.0)
    if p >= 1.0:
        return np.where(ok & (kk == n), 1.0, 0.0)
    lp = (
        gammaln(n + 1)
        - gammaln(kk + 1)
        - gammaln(n - kk + 1)
        + kk * math.log(p)
        + (n - kk) * math.log1p(-p)
    )
    return np.where(ok, np.exp(lp), 0.0)


def _neutral_grid(lo: np.ndarray, hi: np.ndarray, points: int) -> np.ndarray:
    """(rows, P) non-decreasing integer grid from lo to hi per row (duplicates allowed)."""
    width = int((hi - lo).max()) + 1
    m = max(1, min(points, width))
    frac = np.linspace(0.0, 1.0, m)
    g = lo[:, None] + np.floor(frac[None, :] * (hi - lo)[:, None] + 1e-9).astype(np.int64)
    g[:, -1] = hi
    return np.maximum.accumulate(g, axis=1)


# elements per temporary array in the chunked loops: under glibc's 128 KiB mmap threshold, so
# temporaries reuse heap memory instead of page-faulting fresh mappings (measured: a chunk of
# 16384 float64 made the last count's sum several times slower than 8192 on the 2-core machine)
_CHUNK = 8192


def _pmf_segments(
    r: np.ndarray, lo: np.ndarray, hi: np.ndarray, g: np.ndarray, p: float
) -> np.ndarray:
    """(rows, m + 1): sums of the pmf of Bin(r, p) over [g_j, g_{j+1}) (the m-th ends at hi),
    then [hi + 1, ...) (to drop), up to a common factor: the rows share one range of counts
    from k0 = min(lo), the pmf there set to 1 and cumulated by the ratios
    pmf(k+1)/pmf(k) = (r - k) p / ((k + 1)(1 - p))."""
    rows, m = g.shape
    k0, k1 = int(lo.min()), int(hi.max()) + 1  # counts k0 .. k1 (k1: an end)
    k = np.arange(k0, k1, dtype=np.float64)
    ratio = r[:, None] - k[None, :]
    ratio *= (p / (1.0 - p)) / (k + 1.0)
    np.maximum(ratio, 0.0, out=ratio)  # counts beyond r
    pm = np.empty((rows, k1 - k0 + 1))
    pm[:, 0] = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        np.cumprod(ratio, axis=1, out=pm[:, 1:])
    if not np.isfinite(pm).all():  # pmf(mode)/pmf(k0) beyond the float range: log space
        with np.errstate(divide="ignore"):
            np.cumsum(np.log(ratio), axis=1, out=pm[:, 1:])
        pm[:, 0] = 0.0
        pm -= pm.max(axis=1, keepdims=True)
        np.exp(pm, out=pm)
    idx = np.empty((rows, m + 1), dtype=np.int64)
    idx[:, :m] = g
    idx[:, m] = hi + 1
    idx += (np.arange(rows) * (k1 - k0 + 1) - k0)[:, None]
    return np.add.reduceat(pm.ravel(), idx.ravel()).reshape(rows, m + 1)


# a window wider than this many counts per bucket boundary is cheaper by the incomplete beta at
# the boundaries (~1.3 us each) than by the pmf of every count (~12 ns each)
_BETA_WIDTH = 60


def _beta_masses(
    r: np.ndarray, lo: np.ndarray, hi: np.ndarray, g: np.ndarray, p: float, inside: np.ndarray
) -> np.ndarray:
    """As :func:`_bucket_masses`, from the incomplete beta at the bucket boundaries: Pr[N < b]
    at a boundary up to the median, Pr[N >= b] above it (no difference of numbers near 1;
    the incomplete beta itself is good to ~1e-10 relative at these n)."""
    rows, m = g.shape
    b = np.concatenate([g, hi[:, None] + 1], axis=1)  # bucket j: [b_j, b_{j+1})
    rr = np.broadcast_to(r[:, None], b.shape)
    low = b <= np.floor(r * p)[:, None]
    val = np.empty(b.shape)
    val[low] = _cdf(b[low] - 1, rr[low], p)  # Pr[N < b]
    val[~low] = _sf(b[~low], rr[~low], p)  # Pr[N >= b]
    a, z, la, lz = val[:, :-1], val[:, 1:], low[:, :-1], low[:, 1:]
    out = np.where(la & lz, z - a, np.where(~la & ~lz, a - z, 1.0 - a - z))
    np.maximum(out, 0.0, out=out)
    tot = out.sum(axis=1)
    out *= np.where(tot > 0, inside / np.where(tot > 0, tot, 1.0), 0.0)[:, None]
    return out


def _bucket_masses(
    r: np.ndarray, lo: np.ndarray, hi: np.ndarray, g: np.ndarray, p: float, inside: np.ndarray
) -> np.ndarray:
    """(rows, m) Pr[g_j <= N < g_{j+1}] (the last bucket ends at hi) for N ~ Bin(r, p), rows
    scaled to sum to ``inside`` (each row's mass from the incomplete beta). Built from pmf
    ratios (:func:`_pmf_segments`), no incomplete beta per count; the scaling cancels the
    unknown first pmf, and a bucket's mass (a sum of positive terms) keeps full relative
    accuracy even far in a tail. Chunks of rows whose windows nearly coincide (consecutive r)
    share one range of counts; a row whose mass underflowed in its chunk is redone alone."""
    rows, m = g.shape
    if int((hi - lo).max()) + 1 > _BETA_WIDTH * (m + 1):  # few buckets, wide windows
        return _beta_masses(r, lo, hi, g, p, inside)
    out = np.empty((rows, m + 1))
    step = max(1, _CHUNK // (int((hi - lo).max()) + 2))
    a = 0
    while a < rows:
        b = min(a + step, rows)
        while b - a > 1 and (int(hi[a:b].max()) - int(lo[a:b].min()) + 2) * (b - a) > 2 * _CHUNK:
            b = a + (b - a) // 2
        out[a:b] = _pmf_segments(r[a:b], lo[a:b], hi[a:b], g[a:b], p)
        a = b
    out = out[:, :m]
    out[:, :-1][g[:, 1:] == g[:, :-1]] = 0.0  # empty bucket (reduceat gives one term)
    tot = out.sum(axis=1)
    for i in np.flatnonzero(~(tot > 1e-200)):
        out[i] = _pmf_segments(r[i : i + 1], lo[i : i + 1], hi[i : i + 1], g[i : i + 1], p)[0, :m]
        out[i, :-1][g[i, 1:] == g[i, :-1]] = 0.0
        tot[i] = out[i].sum()
    out *= np.where(tot > 0, inside / np.where(tot > 0, tot, 1.0), 0.0)[:, None]
    return out


class _Neutral:
    """Buckets of a neutral count N ~ Bin(r, p) for every r in the range of a set of states
    (the states of both passes): window [lo, hi] (outside mass <= tail each side, verified),
    grid g (``points`` columns, duplicates allowed: a unit grid where the window is narrower),
    bucket masses Pr[g_j <= N < g_{j+1}] (the last bucket ends at hi) and the mass below lo.
    F is non-increasing in N, so per pass (0: lower, 1: upper) ``at`` charges a bucket at its
    last count (lower) or its first (upper, plus a column for the mass above hi, kept at hi:
    F <= F(hi) there); a row of ``at`` is non-decreasing."""

    def __init__(self, r: np.ndarray, p: float, tail: float, points: int) -> None:
        self.r0 = int(r.min())
        ur = np.arange(self.r0, int(r.max()) + 1)
        lo, hi = _windows(ur, p, tail)
        g = _neutral_grid(lo, hi, points)
        self.below = _cdf(lo - 1, ur, p)
        above = _sf(hi + 1, ur, p)
        mass = _bucket_masses(ur, lo, hi, g, p, 1.0 - self.below - above)
        last = np.maximum(np.concatenate([g[:, 1:] - 1, g[:, -1:]], axis=1), g)
        self.at = (last, np.concatenate([g, hi[:, None]], axis=1))
        self.mass = (mass, np.concatenate([mass, above[:, None]], axis=1))


class _Part(NamedTuple):
    """States whose last count is summed by :func:`_ppb_sums`: partial sums s, weights w, row
    of T ``idx``; the last count's values ``at`` and masses (table rows ``ri``), coefficient."""

    s: np.ndarray
    w: np.ndarray
    idx: np.ndarray
    at: np.ndarray
    mass: np.ndarray
    ri: np.ndarray
    coef: float


def _ppb_sums(parts: list[_Part], t: np.ndarray, h: float, p: float) -> list[float]:
    """sum over states and buckets of w mass E[(x + h K)_+], x = s + coef at, K ~ Bin(t[idx],
    p), per part. Same values as :func:`positive_part_binomial` (up to rounding): the sum over
    k >= k* of (x + h k) pmf(k), k* = floor(-x/h) + 1 clipped to [0, t + 1]. The k* of one t
    span a narrow band (x is monotone along a row, so a row's ends bound it); per t, Pr[K >= k]
    and E[K; K >= k] are tabulated over the band (shared by the parts) from the incomplete
    beta beyond it and the pmf ratios inside it. The (states, buckets) arrays are formed chunk
    by chunk (cache-sized, no state array for the last count)."""
    if not any(q.s.size for q in parts):
        return [0.0] * len(parts)
    ilo = min(int(q.idx.min()) for q in parts if q.s.size)
    tu = t[ilo : max(int(q.idx.max()) for q in parts if q.s.size) + 1]
    tuf = tu.astype(np.float64)
    kmin = np.full(tu.size, np.iinfo(np.int64).max, dtype=np.int64)
    kmax = np.full(tu.size, -1, dtype=np.int64)
    clipped = []
    for q in parts:
        if not q.s.size:
            clipped.append(False)
            continue
        ends = q.s[:, None] + q.coef * q.at[q.ri][:, [0, -1]]
        raw = np.floor(ends / -h) + 1.0
        tq = tuf[q.idx - ilo][:, None]
        clipped.append(bool((raw < 0).any() or (raw > tq + 1.0).any()))
        kend = np.clip(raw, 0.0, tq + 1.0).astype(np.int64)
        np.minimum.at(kmin, q.idx - ilo, kend.min(axis=1))
        np.maximum.at(kmax, q.idx - ilo, kend.max(axis=1))
    unused = kmax < 0  # rows of T no state uses
    kmin[unused], kmax[unused] = 0, 0
    top = np.minimum(kmax, tu)
    lo = np.minimum(kmin, tu)
    inband = np.maximum(top - kmin + 1, 0)
    beyond0 = _sf(kmax + 1, tu, p)  # Pr[K > kmax]
    beyond1 = tuf * p * _sf(kmax, np.maximum(tuf - 1.0, 0.0), p)  # E[K; K > kmax]
    # the band's mass, from the side where it is not a difference of numbers near 1
    below = _cdf(kmin - 1, tu, p)
    band = np.where(below < 0.5, _cdf(top, tu, p) - below, _sf(kmin, tu, p) - beyond0)
    width = int((top - lo).max()) + 1
    kk = lo[:, None] + np.arange(width)[None, :]
    pm = _bucket_masses(tu, lo, lo + width - 1, kk, p, np.ones(tu.size))  # pmf at each k
    pm[np.arange(width)[None, :] >= inband[:, None]] = 0.0
    tot = pm.sum(axis=1)
    pm *= np.where(tot > 0, np.maximum(band, 0.0) / np.where(tot > 0, tot, 1.0), 0.0)[:, None]
    # one more column: k* beyond the band (t + 1: nothing positive) reads zeros
    s0 = np.zeros((tu.size, width + 1))
    he1 = np.zeros((tu.size, width + 1))
    s0[:, :width] = np.cumsum(pm[:, ::-1], axis=1)[:, ::-1] + beyond0[:, None]
    he1[:, :width] = h * (np.cumsum((pm * kk)[:, ::-1], axis=1)[:, ::-1] + beyond1[:, None])
    s0, he1 = s0.ravel(), he1.ravel()
    out = []
    for q, clip in zip(parts, clipped, strict=True):
        if not q.s.size:
            out.append(0.0)
            continue
        rb = (q.idx - ilo) * (width + 1)
        off = (rb + 1 - lo[q.idx - ilo]).astype(np.float64)
        step = max(1, _CHUNK // q.at.shape[1])
        total = 0.0
        for a in range(0, q.s.size, step):
            b = min(a + step, q.s.size)
            x = q.at[q.ri[a:b]].astype(np.float64)
            x *= q.coef
            x += q.s[a:b, None]
            col = np.divide(x, -h)
            np.floor(col, out=col)
            col += off[a:b, None]
            if clip:  # k* clipped to 0 (then lo = 0) or beyond t + 1 (the zero column)
                np.clip(col, rb[a:b, None], rb[a:b, None] + width, out=col)
            k = col.astype(np.intp)
            val = s0.take(k)
            val *= x
            val += he1.take(k)
            np.maximum(val, 0.0, out=val)
            m = q.mass[q.ri[a:b]]
            m *= q.w[a:b, None]
            total += float(np.vdot(m, val))
        out.append(total)
    return out


def split_delta(
    eps: float,
    n: int,
    u: float,
    w10: float,
    w11: float,
    w00: float,
    *,
    tail: float = 1e-18,
    points: int = 12,
    skip_rel: float = 1e-7,
) -> tuple[float, float]:
    """(lower, upper) on (1/n) E[(sum of n i.i.d. corner GPARVs)_+].

    Corner atoms: (u, 1) and (1, u) w.p. ``w10`` each (values u - a, 1 - a u, a = e^eps),
    (u, u) w.p. ``w11`` (value u (1 - a)), (1, 1) w.p. ``w00`` (value 1 - a), zero otherwise.
    The count T of the two informative corners is enumerated exactly; given T the first of them
    is Bin(T, 1/2) (closed form) and the neutral corners, whose values are small multiples of
    1 - a, are bucketed (monotone: they only lower the sum). Both passes (lower: a bucket at its
    last count; upper: at its first, plus the mass above the window) share the neutral counts'
    tables; the last neutral count is summed without state arrays (:func:`_ppb_sums`).
    """
    if points < 2:  # a grid holds both window ends (one point would be hi alone)
        raise ValueError(f"split_delta: points must be >= 2, got {points}")
    alpha = math.exp(eps)
    if alpha >= u or w10 <= 0:
        return 0.0, 0.0
    gmax = u - alpha
    h = (1.0 + alpha) * (u - 1.0)
    pt = 2.0 * w10
    nn = np.array([n])
    tlo, thi = _windows(nn, pt, tail)
    t0 = np.arange(int(tlo[0]), int(thi[0]) + 1, dtype=np.int64)
    t0 = t0[t0 > 0]
    if t0.size == 0:
        return 0.0, 0.0
    w_t = _binom_pmf(t0, np.full(t0.shape, n), pt)
    base = t0 * (1.0 - alpha * u)
    rest = 1.0 - pt
    p11 = w11 / rest if rest > 0 else 0.0
    p00 = w00 / (rest - w11) if rest - w11 > 0 else 0.0
    row_max = positive_part_binomial(base, h, t0, 0.5)  # neutral counts 0: the largest F
    # rows whose largest possible contribution is negligible are charged with it (upper) and
    # dropped (lower) instead of being bucketed; the rest are evaluated
    contrib = w_t * row_max
    cut = skip_rel * float(contrib.max()) if contrib.size else 0.0
    rows = np.flatnonzero(contrib >= cut)
    skipped = float(contrib.sum() - contrib[rows].sum())
    stages = [(c, p) for c, p in ((u * (1.0 - alpha), p11), (1.0 - alpha, p00)) if p > 0.0]
    # per pass (0: lower, 1: upper): partial sums, remaining trials, weights, row of T
    state = [(base[rows].astype(np.float64), n - t0[rows], w_t[rows], rows) for _ in (0, 1)]
    charge = [0.0, skipped]
    zero = np.zeros(rows.size, dtype=np.int64)
    parts = [_Part(s, w, i, np.zeros((1, 1)), np.ones((1, 1)), zero, 0.0) for s, _, w, i in state]
    for j, (coef, p) in enumerate(stages):
        table = _Neutral(np.concatenate([state[0][1], state[1][1]]), p, tail, points)
        for up in (0, 1):
            s, r, w, idx = state[up]
            ri = r - table.r0
            if up:
                charge[1] += float((w * table.below[ri]) @ row_max[idx])
            if j == len(stages) - 1:  # the last count: summed by _ppb_sums
                parts[up] = _Part(s, w, idx, table.at[up], table.mass[up], ri, coef)
                continue
            at, mass = table.at[up][ri], table.mass[up][ri]
            w2 = (w[:, None] * mass).ravel()
            keep = w2 > 0
            state[up] = (
                (s[:, None] + coef * at).ravel()[keep],
                (r[:, None] - at).ravel()[keep],
                w2[keep],
                np.repeat(idx, at.shape[1])[keep],
            )
    lower, upper_v = _ppb_sums(parts, t0, h, 0.5)
    lower, upper_v = lower + charge[0], upper_v + charge[1]
    # outside the T window: T < lo: F <= T gmax <= lo gmax; T > hi: F <= n gmax
    upper_v += float(_cdf(tlo - 1, nn, pt)[0]) * float(tlo[0]) * gmax
    upper_v += float(_sf(thi + 1, nn, pt)[0]) * n * gmax
    return max(lower, 0.0) / n, upper_v / n


def fixed_three_atoms(
    eps: float,
    n: int,
    values_a: tuple[float, float, float],
    values_b: tuple[float, float, float],
    probs: tuple[float, float, float],
    *,
    tail: float = 1e-18,
) -> tuple[float, float]:
    """(lower, upper) on (1/n) E[(sum_j g_j C_j)_+], C ~ Mult(n, probs), g_j = a_j - e^eps b_j.

    At most one atom may be positive. The largest non-positive atom is absorbed, the other
    non-positive one is enumerated exactly over its window, the positive one summed in closed
    form.
    """
    alpha = math.exp(eps)
    g = [a - alpha * b for a, b in zip(values_a, values_b, strict=True)]
    w = list(probs)
    pos = [i for i in range(3) if g[i] > 0 and w[i] > 0]
    if not pos:
        return 0.0, 0.0
    if len(pos) > 1:
        raise ValueError("fixed_three_atoms: at most one positive atom is supported")
    ip = pos[0]
    rest_idx = [i for i in range(3) if i != ip]
    ir = max(rest_idx, key=lambda i: g[i])
    ineg = [i for i in rest_idx if i != ir][0]
    g_r, h_pos, h_neg = g[ir], g[ip] - g[ir], g[ineg] - g[ir]
    gmax = g[ip]
    nn = np.array([n])
    if w[ineg] <= 0:
        val = positive_part_binomial(np.array([g_r * n]), h_pos, nn, w[ip] / (w[ip] + w[ir]))
        v = float(val[0]) / n
        return v, v
    lo, hi = _windows(nn, w[ineg], tail)
    j = np.arange(int(lo[0]), int(hi[0]) + 1)
    pmf = _binom_pmf(j, np.full(j.shape, n), w[ineg])
    p_in = w[ip] / (w[ip] + w[ir]) if w[ip] + w[ir] > 0 else 0.0
    val = positive_part_binomial(g_r * n + h_neg * j, h_pos, n - j, p_in)
    exact = float(pmf @ val)
    charge = float(_cdf(lo - 1, nn, w[ineg])[0] + _sf(hi + 1, nn, w[ineg])[0]) * gmax * n
    return exact / n, (exact + charge) / n
