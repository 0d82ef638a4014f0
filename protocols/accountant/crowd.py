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

import numpy as np

from protocols.accountant.gparv import _cdf, _sf, positive_part_binomial


def _windows(n: np.ndarray, p: float, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] per entry of n with Pr[Bin(n,p) < lo], Pr[> hi] <= tail (verified)."""
    n = np.asarray(n, dtype=np.int64)
    mean = n * p
    sd = np.sqrt(np.maximum(n * p * (1 - p), 1.0))
    z = math.sqrt(2.0 * math.log(1.0 / tail)) + 1.5
    lo = np.clip(np.floor(mean - z * sd), 0, n).astype(np.int64)
    hi = np.clip(np.ceil(mean + z * sd), 0, n).astype(np.int64)
    step = np.maximum(1, (sd / 2).astype(np.int64))
    # widen each end until its outside mass is <= tail; only the entries still failing are
    # re-evaluated (an entry that passed keeps its end)
    act = np.flatnonzero(lo > 0)
    for _ in range(400):
        act = act[(lo[act] > 0) & (_cdf(lo[act] - 1, n[act], p) > tail)]
        if act.size == 0:
            break
        lo[act] = np.maximum(lo[act] - step[act], 0)
    act = np.flatnonzero(hi < n)
    for _ in range(400):
        act = act[(hi[act] < n[act]) & (_sf(hi[act] + 1, n[act], p) > tail)]
        if act.size == 0:
            break
        hi[act] = np.minimum(hi[act] + step[act], n[act])
    return lo, hi


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


def _bucket(
    s: np.ndarray, r: np.ndarray, coef: float, p: float, tail: float, points: int, upper: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Branch states (partial sum s, remaining trials r) over a neutral count N ~ Bin(r, p)
    whose atoms have value ``coef`` <= 0: F is non-increasing in N, so a bucket is charged at
    its left end (upper) or at the next grid point (lower; exact on a unit grid). Above the
    window F <= F(hi) (kept at hi, upper only). Returns (s, r, mass, parent, below) with
    ``below[i]`` the mass of state i's count under its window (the caller charges it).
    """
    # everything but the partial sums depends only on r: evaluate it once per distinct r
    ur, inv = np.unique(r, return_inverse=True)
    ulo, uhi = _windows(ur, p, tail)
    ug = _neutral_grid(ulo, uhi, points)
    ubefore = _cdf(ug - 1, ur[:, None], p)
    uabove = _sf(uhi + 1, ur, p)
    unxt = np.concatenate([ubefore[:, 1:], (1.0 - uabove)[:, None]], axis=1)
    mass = np.maximum(unxt - ubefore, 0.0)[inv]
    hi, g, above = uhi[inv], ug[inv], uabove[inv]
    rr = r[:, None]
    if upper:
        at = g
    else:  # the bucket's last count (the final bucket is the single count hi)
        at = np.maximum(np.concatenate([g[:, 1:] - 1, g[:, -1:]], axis=1), g)
    parent = np.repeat(np.arange(s.size), g.shape[1])
    new_s = (s[:, None] + coef * at).ravel()
    new_r = (rr - at).ravel()
    new_m = mass.ravel()
    if upper:
        new_s = np.concatenate([new_s, s + coef * hi])
        new_r = np.concatenate([new_r, r - hi])
        new_m = np.concatenate([new_m, above])
        parent = np.concatenate([parent, np.arange(s.size)])
    below = _cdf(ulo - 1, ur, p)[inv]
    return new_s, new_r, new_m, parent, below


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
    1 - a, are bucketed (monotone: they only lower the sum).
    """
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
    out = []
    for upper in (False, True):
        s, r, w = base[rows].astype(np.float64), n - t0[rows], w_t[rows].copy()
        idx = rows.copy()  # row (value of T) of each state
        charge = skipped if upper else 0.0
        for coef, p in ((u * (1.0 - alpha), p11), (1.0 - alpha, p00)):
            if p <= 0.0:
                continue
            s, r, m, parent, below = _bucket(s, r, coef, p, tail, points, upper)
            if upper:
                charge += float((w * below) @ row_max[idx])
            w = w[parent] * m
            idx = idx[parent]
            keep = w > 0
            s, r, w, idx = s[keep], r[keep], w[keep], idx[keep]
        val = positive_part_binomial(s, h, t0[idx], 0.5)
        out.append(float(w @ val) + charge)
    lower, upper_v = out
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
