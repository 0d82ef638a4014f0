"""Distributed noise: the exact binomial divergence against brute force, calibration, the
Balcer-Cheu lemma, Polya differences (pmf, pure epsilon, tails) and the robust Split-Mix sum."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from protocols.distributed_noise import binomial as bn
from protocols.distributed_noise import polya
from protocols.distributed_noise.robust_splitmix import (
    decode_sum,
    encode_values,
    guarantee_at,
    robust_splitmix_parameters,
)


def _brute_delta(eps: float, m: int, p: float) -> float:
    pmf = stats.binom.pmf(np.arange(m + 1), m, p)
    a = np.concatenate([pmf, [0.0]])  # P(B = c), c = 0..m+1
    b = np.concatenate([[0.0], pmf])  # P(B = c - 1)
    return max(
        np.clip(a - math.exp(eps) * b, 0, None).sum(), np.clip(b - math.exp(eps) * a, 0, None).sum()
    )


@pytest.mark.parametrize("m,p,eps", [(50, 0.3, 0.5), (200, 0.05, 1.0), (1000, 0.5, 0.2)])
def test_binomial_delta_equals_brute_force(m, p, eps):
    assert bn.binomial_delta(eps, m, p) == pytest.approx(
        _brute_delta(eps, m, p), rel=1e-9, abs=1e-15
    )


def test_calibration_is_tight_and_lemma_is_looser():
    p = bn.calibrate_binomial_p(0.9, 1e-6, 10**5)
    assert bn.binomial_delta(0.9, 10**5, p) <= 1e-6 < bn.binomial_delta(0.9, 10**5, p * 0.98)
    mass = bn.bc_smooth_mass(0.9, 1e-6)
    d, why = bn.bc_smooth_delta(0.9, 10**5, mass / 10**5)
    assert why == "" and d == pytest.approx(1e-6, rel=1e-6)
    assert mass > 5 * 10**5 * p  # the lemma needs several times more noise than exact
    assert bn.binomial_delta(0.9, 10**5, mass / 10**5) < 1e-6  # and the lemma is sound here
    assert bn.binomial_epsilon(1e-6, 10**5, p) == pytest.approx(0.9, rel=1e-6)
    g, why = bn.bc_two_message_gamma(0.5, 1e-6, 10**6)
    assert g == pytest.approx(50 * math.log(2e6) / (0.25 * 1e6))
    assert bn.bc_two_message_gamma(0.5, 1e-6, 1000)[0] is None
    assert "gamma in (0, 1/2]" in bn.bc_smooth_delta(1.0, 100, 0.7)[1]


def test_polya_difference_is_discrete_laplace_at_r_1():
    a = math.exp(-0.7)
    k = np.arange(-5, 6)
    want = (1 - a) / (1 + a) * a ** np.abs(k)
    assert polya.nb_difference_pmf(1.0, a, k) == pytest.approx(want, rel=1e-9)
    assert polya.nb_difference_epsilon(1.0, a) == pytest.approx(0.7)
    assert polya.nb_difference_epsilon(3.0, a) == pytest.approx(0.7)  # more noise: still <= eps


def test_polya_epsilon_below_r_1_is_an_upper_bound_and_grows():
    a = math.exp(-0.9)
    e9, e5 = polya.nb_difference_epsilon(0.9, a), polya.nb_difference_epsilon(0.5, a)
    assert 0.9 < e9 < e5
    p = polya.nb_difference_pmf(0.5, a, np.arange(-60, 61))
    assert np.max(np.abs(np.diff(np.log(p)))) <= e5 + 1e-12


def test_polya_tail_bound():
    a = math.exp(-0.9)
    b = polya.nb_tail_bound(1.0, a, 30)
    sf = lambda t: 2 * a ** (t + 1) / (1 + a)  # noqa: E731 exact Pr[|SG| > t]
    assert sf(b) <= 2.0**-30 < sf(b - 2)
    assert polya.sg_variance(a) == pytest.approx(2 * a / (1 - a) ** 2)


def test_robust_splitmix_sum_and_reaccounting():
    p = robust_splitmix_parameters(2000, 0.9, gamma=0.9, delta_split=1e-9)
    assert p.min_users == 1800 and (1 + math.exp(0.9)) * 2.0**-p.sigma <= 1e-9
    rng = np.random.default_rng(1)
    v = rng.integers(0, 2, 2000)
    sh = encode_values(v, p, rng)
    assert sh.shape == (2000 * p.shares, 1) and sh.min() >= 0 and sh.max() < p.modulus
    est, bad = decode_sum(sh[rng.permutation(sh.shape[0])], p)
    assert bad == 0 and abs(est - v.sum()) < 40  # noise sd ~ 1.6
    eps, delta, _ = guarantee_at(p, 2000)
    assert eps == pytest.approx(0.9) and delta <= 1e-9
    eps_low, _, _ = guarantee_at(p, 1500)  # fewer than ceil(gamma N): less noise, larger eps
    assert eps_low > 0.9
    with pytest.raises(ValueError):
        guarantee_at(p, 2001)
    with pytest.raises(ValueError):
        encode_values(np.array([2]), p, rng)
