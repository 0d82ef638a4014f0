"""The decomposition bound's fast evaluation (distinct binomial tails evaluated once) gives the
same (lower, upper) brackets and central epsilons as the per-state evaluation it replaced.

Reference values: computed with the per-state code at commit 3a7368b (before the speed-up),
``decomposition_delta(eps, eps_local, n, mechanism, tail=1e-13, points=...)`` and
``decomposition_epsilon(eps_local, n, delta, mechanism)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from protocols.accountant.crowd import _bucket_masses, _Neutral, _neutral_grid, _Part, _ppb_sums
from protocols.accountant.decomposition import decomposition_delta, decomposition_epsilon
from protocols.accountant.gparv import _sf, positive_part_binomial

# (n, mechanism, kwargs, eps_local, eps, points, lower, upper)
DELTA_REF = [
    (1000, "grr", {"k": 10}, 4.0, 0.3, 2, 0.024698650657353514, 0.03576650763129942),
    (1000, "grr", {"k": 10}, 4.0, 0.3, 32, 0.02965100157518733, 0.02995422407853779),
    (1000, "grr", {"k": 10}, 2.0, 0.2, 2, 1.2946672641620396e-05, 0.00018277613168259611),
    (1000, "grr", {"k": 10}, 2.0, 0.2, 32, 5.032174970017953e-05, 5.4294732518740203e-05),
    (1000, "oue", {}, 4.0, 0.3, 2, 0.0014157466969676692, 0.0175950165604406),
    (1000, "oue", {}, 4.0, 0.3, 32, 0.011325487005625452, 0.011603611932360597),
    (1000, "oue", {}, 2.0, 0.2, 2, 1.2863522181577923e-06, 0.0002703930777090438),
    (1000, "oue", {}, 2.0, 0.2, 32, 4.4528055036135207e-05, 4.9171633101464686e-05),
    (1000, "sue", {}, 4.0, 0.3, 2, 0.0022957643503588154, 0.03758653410513693),
    (1000, "sue", {}, 4.0, 0.3, 32, 0.02567637862158034, 0.025929719068490793),
    (1000, "sue", {}, 2.0, 0.2, 2, 1.6609763690768028e-06, 0.0012092315354839441),
    (1000, "sue", {}, 2.0, 0.2, 32, 0.00011969906227218056, 0.00013795823585856332),
    (1000, "hadamard", {}, 4.0, 0.3, 2, 1.934745776391683e-05, 0.04105200868919196),
    (1000, "hadamard", {}, 4.0, 0.3, 32, 0.012125077801588467, 0.01287784172019086),
    (1000, "hadamard", {}, 2.0, 0.2, 2, 4.8994907147028875e-08, 0.002668076420735191),
    (1000, "hadamard", {}, 2.0, 0.2, 32, 4.5826233436593147e-05, 5.9341143844522834e-05),
    (1000, "olh", {"g": 5}, 4.0, 0.3, 2, 0.02985677097906395, 0.036778635456119146),
    (1000, "olh", {"g": 5}, 4.0, 0.3, 32, 0.03347307971755317, 0.03364208275577816),
    (1000, "olh", {"g": 5}, 2.0, 0.2, 2, 0.00011567596426894759, 0.0006693075293624036),
    (1000, "olh", {"g": 5}, 2.0, 0.2, 32, 0.0002818730179447211, 0.00029625945885375935),
    (20000, "grr", {"k": 10}, 4.0, 0.3, 2, 4.726781903912887e-08, 1.2060388218359241e-07),
    (20000, "grr", {"k": 10}, 4.0, 0.3, 32, 7.47979783359724e-08, 7.700873733097557e-08),
    (20000, "grr", {"k": 10}, 2.0, 0.2, 2, 2.49274971118927e-42, 4.444119792625961e-19),
    (20000, "grr", {"k": 10}, 2.0, 0.2, 32, 3.98788942004982e-40, 4.444119792625961e-19),
    (20000, "oue", {}, 4.0, 0.3, 2, 5.938194748145797e-13, 7.557737477207817e-11),
    (20000, "oue", {}, 4.0, 0.3, 32, 1.633818067125674e-11, 1.802486021449448e-11),
    (20000, "oue", {}, 2.0, 0.2, 2, 2.5181655642946934e-46, 4.681305856457567e-19),
    (20000, "oue", {}, 2.0, 0.2, 32, 5.94954657773344e-41, 4.681305856457567e-19),
    (20000, "sue", {}, 4.0, 0.3, 2, 2.5445945103206927e-10, 3.751211300331465e-07),
    (20000, "sue", {}, 4.0, 0.3, 32, 2.23047646567125e-08, 2.6496597167797465e-08),
    (20000, "sue", {}, 2.0, 0.2, 2, 9.1180224823858e-41, 3.8446464825994795e-19),
    (20000, "sue", {}, 2.0, 0.2, 32, 2.5680175142659064e-34, 3.8446464814744456e-19),
    (20000, "hadamard", {}, 4.0, 0.3, 2, 5.986816520378002e-18, 8.195516907855888e-07),
    (20000, "hadamard", {}, 4.0, 0.3, 32, 2.767387704711971e-11, 5.584337410981577e-11),
    (20000, "hadamard", {}, 2.0, 0.2, 2, 6.197055054184839e-51, 4.681305856867261e-19),
    (20000, "hadamard", {}, 2.0, 0.2, 32, 2.3923918565608437e-40, 4.68130585686691e-19),
    (20000, "olh", {"g": 5}, 4.0, 0.3, 2, 1.401626888514844e-07, 2.495081813332355e-07),
    (20000, "olh", {"g": 5}, 4.0, 0.3, 32, 1.8569237026906895e-07, 1.8900100507743147e-07),
    (20000, "olh", {"g": 5}, 2.0, 0.2, 2, 1.963656256999954e-30, 2.761216793717108e-19),
    (20000, "olh", {"g": 5}, 2.0, 0.2, 32, 4.62955605949514e-29, 2.7612167833829023e-19),
    (100000, "grr", {"k": 10}, 4.0, 0.08, 2, 3.47333617979694e-05, 4.1027671825210384e-05),
    (100000, "grr", {"k": 10}, 4.0, 0.08, 32, 3.766050136332357e-05, 3.786021125257167e-05),
    (100000, "grr", {"k": 10}, 2.0, 0.05, 2, 3.348697740624297e-16, 4.8752257029088435e-15),
    (100000, "grr", {"k": 10}, 2.0, 0.05, 32, 6.699477341680458e-16, 4.193909904893849e-15),
    (100000, "oue", {}, 4.0, 0.08, 2, 7.851381315924709e-07, 1.7733208226492278e-06),
    (100000, "oue", {}, 4.0, 0.08, 32, 1.268097722405111e-06, 1.2931229668984343e-06),
    (100000, "oue", {}, 2.0, 0.05, 2, 6.592543174630016e-17, 6.041089291859583e-15),
    (100000, "oue", {}, 2.0, 0.05, 32, 3.48123889206472e-16, 4.506472181303571e-15),
    (100000, "sue", {}, 4.0, 0.08, 2, 1.0645180786413643e-05, 4.673720715060461e-05),
    (100000, "sue", {}, 4.0, 0.08, 32, 2.2318668181143016e-05, 2.3288324472751162e-05),
    (100000, "sue", {}, 2.0, 0.05, 2, 5.8860693268496216e-15, 3.124849775528944e-13),
    (100000, "sue", {}, 2.0, 0.05, 32, 4.2394720694219444e-14, 4.897823876703978e-14),
    (100000, "hadamard", {}, 4.0, 0.08, 2, 1.3005545313730802e-07, 9.753932246974523e-06),
    (100000, "hadamard", {}, 4.0, 0.08, 32, 1.2290227211679452e-06, 1.401604369483861e-06),
    (100000, "hadamard", {}, 2.0, 0.05, 2, 1.5896173368265458e-17, 1.1241925961908696e-14),
    (100000, "hadamard", {}, 2.0, 0.05, 32, 3.4496163154760334e-16, 4.538147631003864e-15),
    (100000, "olh", {"g": 5}, 4.0, 0.08, 2, 5.253226371986109e-05, 5.825276924797779e-05),
    (100000, "olh", {"g": 5}, 4.0, 0.08, 32, 5.523365493669008e-05, 5.541372240415922e-05),
    (100000, "olh", {"g": 5}, 2.0, 0.05, 2, 1.5572810859755908e-12, 3.864622965016002e-12),
    (100000, "olh", {"g": 5}, 2.0, 0.05, 32, 2.4265700447758947e-12, 2.498034878570645e-12),
]

# (n, mechanism, kwargs, eps_local, delta, eps_central)
EPS_REF = [
    (2000, "grr", {"k": 4}, 3.0, 1e-06, 0.5194715753287544),
    (2000, "oue", {}, 3.0, 1e-06, 0.36807045531868887),
    (2000, "hadamard", {}, 3.0, 1e-06, 0.38741009111823843),
    (50000, "grr", {"k": 4}, 3.0, 1e-06, 0.09071302680276495),
    (50000, "oue", {}, 3.0, 1e-06, 0.06568377274037283),
    (50000, "hadamard", {}, 3.0, 1e-06, 0.065947142010502),
]


@pytest.mark.parametrize(("n", "mech", "kw", "eps_local", "eps", "points", "lo", "up"), DELTA_REF)
def test_decomposition_delta_matches_per_state_reference(
    n: int, mech: str, kw: dict, eps_local: float, eps: float, points: int, lo: float, up: float
) -> None:
    got_lo, got_up = decomposition_delta(eps, eps_local, n, mech, tail=1e-13, points=points, **kw)
    # rel 1e-7, not 1e-9: with scipy 1.17 / numpy 2.4 the grr (n = 1e5, eps_local = 2) upper
    # bounds near 5e-15 come out 8e-9 (relative) above the per-state reference, on the old code
    # as on the new (the binomial tails' last digits); both are upper bounds of the same delta
    assert got_up == pytest.approx(up, rel=1e-7, abs=1e-300)
    assert got_lo == pytest.approx(lo, rel=1e-6, abs=1e-300)


@pytest.mark.parametrize(("n", "mech", "kw", "eps_local", "delta", "eps"), EPS_REF)
def test_decomposition_epsilon_matches_per_state_reference(
    n: int, mech: str, kw: dict, eps_local: float, delta: float, eps: float
) -> None:
    """Same central epsilon within the forward search's own resolution (it locates the root from
    above to a relative 2e-5; the bucket masses, now exact to 1e-14 where the incomplete beta's
    differences were off by up to 1e-10, can move one bisection step: 50000/grr went from
    0.0907130 to 0.0907121), and certified there."""
    got = decomposition_epsilon(eps_local, n, delta, mech, **kw)
    assert got == pytest.approx(eps, rel=2e-5)
    up = decomposition_delta(got, eps_local, n, mech, tail=delta * 1e-7, points=32, **kw)[1]
    assert up <= delta


def _exact_bucket_masses(r: int, p: float, g: list[int], hi: int) -> list[float]:
    """Pr[g_j <= Bin(r, p) < g_{j+1}] (last: <= hi) in exact rational arithmetic (p's binary
    value)."""
    a, d = Fraction(p).as_integer_ratio()
    b = d - a
    num = {g[0]: math.comb(r, g[0]) * a ** g[0] * b ** (r - g[0])}
    for k in range(g[0], hi):  # C(r, k+1) a^(k+1) b^(r-k-1), exactly
        num[k + 1] = num[k] * (r - k) * a // ((k + 1) * b)
    den = d**r
    ends = [*g[1:], hi + 1]
    return [float(Fraction(sum(num[k] for k in range(x, y)), den)) for x, y in zip(g, ends)]


@pytest.mark.parametrize(
    ("r", "p", "points", "rtol"),
    [
        (2000, 0.3, 32, 1e-12),
        (1999, 0.0953, 32, 1e-12),
        (400, 0.5, 32, 1e-12),
        (2000, 0.3, 2, 1e-9),
    ],
)
def test_neutral_bucket_masses_are_exact(r: int, p: float, points: int, rtol: float) -> None:
    """The bucket masses agree with exact rational arithmetic, in the bulk and far in both
    tails: to 1e-12 from pmf ratios (one cumulative product per chunk of rows); to 1e-9 from
    the incomplete beta at the boundaries (few buckets in a wide window: 2 buckets, 381 counts),
    each boundary's probability taken from its own side of the median."""
    tab = _Neutral(np.array([r - 1, r, r + 1]), p, 1e-13, points)
    i = r - tab.r0
    g, mass = tab.at[1][i, :-1], tab.mass[0][i]
    assert np.array_equal(tab.mass[1][i, :-1], mass)
    want = _exact_bucket_masses(r, p, [int(x) for x in g], int(tab.at[1][i, -1]))
    live = [j for j in range(len(g)) if j == len(g) - 1 or g[j + 1] > g[j]]
    np.testing.assert_allclose(mass[live], np.array(want)[live], rtol=rtol, atol=0)
    if points > 2:
        assert min(np.array(want)[live]) < 1e-12  # the window reaches into the tails


def test_last_count_sums_equal_positive_part_binomial() -> None:
    """The banded, chunked sums of the last count equal the elementwise closed form, including
    states whose k* is clipped (x > 0: every K counts; x < -h t: nothing positive)."""
    rng = np.random.default_rng(11)
    t = np.arange(1, 400)
    h, coef = 7.5, -0.4
    n_states = 3000
    idx = np.sort(rng.integers(0, t.size, size=n_states))
    at = np.sort(rng.integers(0, 60, size=(40, 9)), axis=1)
    mass = rng.random((40, 9))
    ri = rng.integers(0, 40, size=n_states)
    s = rng.normal(-h * t[idx] / 2.0, 3.0 * h * np.sqrt(t[idx]))
    s[:50] = np.abs(s[:50]) + 1e3  # clipped to k* = 0
    s[50:100] = -h * (t[idx[50:100]] + 5.0)  # beyond t + 1
    w = rng.random(n_states)
    got = _ppb_sums([_Part(s, w, idx, at, mass, ri, coef)], t, h, 0.5)[0]
    x = s[:, None] + coef * at[ri]
    want = positive_part_binomial(x.ravel(), h, np.repeat(t[idx], at.shape[1]), 0.5)
    assert got == pytest.approx(float(((w[:, None] * mass[ri]).ravel()) @ want), rel=1e-12)


def test_positive_part_binomial_tabulated_tails_equal_elementwise() -> None:
    """The tabulated tails are the elementwise ones (random states, repeated and spread n)."""
    rng = np.random.default_rng(7)
    for spread in (50, 10**6):
        n = rng.integers(1, spread + 2, size=3000).astype(np.float64)
        s = rng.normal(0.0, 30.0, size=n.size)
        h, p = 7.5, 0.3
        got = positive_part_binomial(s, h, n, p)
        kstar = np.clip(np.floor(-s / h) + 1.0, 0.0, n + 1.0)
        want = np.maximum(
            s * _sf(kstar, n, p) + h * n * p * _sf(kstar - 1.0, np.maximum(n - 1.0, 0.0), p), 0.0
        )
        np.testing.assert_array_equal(got, want)


def test_bucket_masses_rows_far_apart_equal_rows_alone() -> None:
    """Rows sharing a chunk whose windows are far apart (the pmf from the chunk's first count
    overflows, or underflows before a row's window) give each row's own masses."""
    r = np.array([60, 2000, 3000, 3100, 3101])
    lo = np.array([0, 900, 2900, 3100, 1400])
    hi = np.array([40, 1100, 3000, 3100, 1700])
    g = _neutral_grid(lo, hi, 8)
    inside = np.full(r.size, 0.5)
    together = _bucket_masses(r, lo, hi, g, 0.5, inside)
    for i in range(r.size):
        s = slice(i, i + 1)
        alone = _bucket_masses(r[s], lo[s], hi[s], g[s], 0.5, inside[s])
        np.testing.assert_allclose(together[i], alone[0], rtol=1e-11, atol=0)
        assert together[i].sum() == pytest.approx(0.5, rel=1e-14)
        assert (together[i] > 0).any()


def test_one_bucket_grid_is_refused() -> None:
    """A one-point grid would be the window's top alone (no rigorous charge): refused."""
    with pytest.raises(ValueError, match="points must be >= 2"):
        decomposition_delta(0.1, 4.0, 1000, "hadamard", points=1)
