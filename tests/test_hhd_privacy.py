"""HHD's privacy statement by exact enumeration (issue 41 item 4): the law of the whole shuffled
multiset of a tiny HHD (two users, one dummy each, every message kept with probability p_f, the
level public in the message) for two neighbouring values of the target, against the (eps, delta)
that ``HHD.guarantee`` states (per-level FE1 accountant at n' users and delta/2, plus the
probability that the target's level has fewer than n' users)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.almost_single.blanket import blanket_delta
from protocols.almost_single.modhash import collision_probability, fe1_hash
from protocols.heavy_hitters.hhd import HHD, HHDParameters

DROPPED = -1


def _level_states(prefix: int, q: int, b: int, pf: float, offset: int):
    """(codes (k, 2), probabilities) of one user's (real, dummy) at one level: each message
    kept with probability pf, coded offset + ((u - 1) q + v) b + w, or DROPPED."""
    u, v = np.meshgrid(np.arange(1, q), np.arange(q), indexing="ij")
    u, v = u.ravel(), v.ravel()
    real = np.append(offset + ((u - 1) * q + v) * b + fe1_hash(u, v, prefix, q, b), DROPPED)
    p_real = np.append(np.full(u.size, pf / u.size), 1 - pf)
    dummy = np.append(offset + np.arange((q - 1) * q * b), DROPPED)
    p_dummy = np.append(np.full(dummy.size - 1, pf / (dummy.size - 1)), 1 - pf)
    codes = np.stack(np.meshgrid(real, dummy, indexing="ij"), -1).reshape(-1, 2)
    return codes, np.outer(p_real, p_dummy).ravel()


def _user_states(x: int, p: HHDParameters):
    """One user's (codes, probabilities): a uniform level l in s..t-1, FE1 of x >> (t - l)."""
    codes, probs, offset = [], [], 0
    for level in range(p.s, p.t):
        q = p.q(level)
        c, pr = _level_states(x >> (p.t - level), q, p.b, p.pf, offset)
        codes.append(c)
        probs.append(pr / (p.t - p.s))
        offset += (q - 1) * q * p.b
    return np.concatenate(codes), np.concatenate(probs)


def _law(x: int, other: int, p: HHDParameters) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the shuffled multiset (kept messages) of the target x and one other user:
    (sorted multiset keys, their probabilities)."""
    ct, pt = _user_states(x, p)
    co, po = _user_states(other, p)
    rows = np.concatenate(
        [np.repeat(ct, co.shape[0], axis=0), np.tile(co, (ct.shape[0], 1))], axis=1
    )
    rows.sort(axis=1)  # the multiset; DROPPED sorts first and only counts the dropped
    key = ((rows[:, 0] + 1) * 1024 + rows[:, 1] + 1) * 1024 + rows[:, 2] + 1
    key = key * 1024 + rows[:, 3] + 1
    keys, inv = np.unique(key, return_inverse=True)
    return keys, np.bincount(inv, np.outer(pt, po).ravel())


def _aligned(
    lx: tuple[np.ndarray, np.ndarray], ly: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The two laws' probabilities over the union of their supports."""
    keys = np.union1d(lx[0], ly[0])
    px, py = np.zeros(keys.size), np.zeros(keys.size)
    px[np.searchsorted(keys, lx[0])] = lx[1]
    py[np.searchsorted(keys, ly[0])] = ly[1]
    return px, py


def _divergence(pxy: tuple[np.ndarray, np.ndarray], eps: float) -> float:
    """The hockey-stick divergence of two aligned laws at eps, the larger direction."""
    (px, py), e = pxy, math.exp(eps)
    return float(max(np.maximum(px - e * py, 0).sum(), np.maximum(py - e * px, 0).sum()))


def _tiny(levels: tuple[int, ...], t: int, pf: float) -> HHDParameters:
    """Two users, hash range b = 2, one dummy each (rho = mu b / n' = 1), filter pf."""
    s = t - len(levels)
    return HHDParameters(
        n=2, B=1 << t, phi=0.5, s=s, t=t, b=2, pf=pf, fen=1, mu=0.5, Delta=1, primes=levels
    )


def test_one_level_enumeration_meets_the_stated_guarantee():
    """One level (q = 5): HHD is FE1 on the prefix; the statement is the per-level accountant at
    n' = 1 and delta/2 (the level is never short). Unfiltered (p_f = 1) the enumeration can fail
    (at eps = 0 it exceeds delta/2); filtering (p_f = 1/2) is post-processing: never worse."""
    p = _tiny((5,), 2, 1.0)
    assert p.rho == 1.0
    g = HHD.from_parameters(p, eps_c=1.0, delta=0.64).guarantee(2)
    assert g.note.endswith("P[short level] 0")
    lx, ly = _law(0, 2, p), _law(3, 2, p)  # prefixes 0 and 1 against the other's 1
    assert lx[1].sum() == pytest.approx(1.0) and ly[1].sum() == pytest.approx(1.0)
    law = _aligned(lx, ly)
    real = _divergence(law, g.eps)
    assert real <= g.delta / 2  # the accountant's half of delta
    assert real <= blanket_delta(g.eps, 1, p.rho, p.b, collision_probability(5, p.b)) + 1e-12
    assert _divergence(law, 0.0) > g.delta / 2  # the enumeration can fail
    f = _tiny((5,), 2, 0.5)
    assert HHD.from_parameters(f, eps_c=1.0, delta=0.64).guarantee(2).eps == g.eps
    filtered = _aligned(_law(0, 2, f), _law(3, 2, f))
    for eps in (0.0, 0.3, g.eps, 1.0):
        assert _divergence(filtered, eps) <= _divergence(law, eps) + 1e-12


def test_two_levels_enumeration_meets_the_stated_guarantee():
    """Levels 1 and 2 (q = 3, 5) of B = 8: the target's level is public; with two users the
    target's level is short (no other user there) with probability 1/2, which the statement
    adds to delta."""
    p = _tiny((3, 5), 3, 0.5)
    proto = HHD.from_parameters(p, eps_c=1.0, delta=0.9)
    g = proto.guarantee(2)
    assert "P[short level] 0.5" in g.note
    lx, ly = _law(0, 3, p), _law(7, 3, p)  # different prefixes at both levels
    law = _aligned(lx, ly)
    real = _divergence(law, g.eps)
    assert real <= g.delta
    assert real <= g.delta - 0.5  # within the accountant's part alone, the short level aside
    assert _divergence(law, 0.0) > real  # eps matters
