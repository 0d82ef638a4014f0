"""OLH: exact collision probability of the hash family, inverted-voting aggregation equals the
pairwise evaluation, and the textbook 1/g estimator is biased when c != 1/g."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from protocols.oracles.olh import (
    olh_default_g,
    olh_estimate,
    olh_family,
    olh_perturb,
    olh_support,
    olh_support_pairwise,
)
from protocols.rng import experiment_rng


@pytest.mark.parametrize("d,g", [(10, 4), (7, 3), (5, 9)])
def test_collision_probability_by_enumeration(d, g):
    """Enumerate every (a, b) of the family: every pair v != v' collides with probability c,
    and H(v) has the same marginal for every v."""
    fam = olh_family(d, g)
    a, b = np.meshgrid(np.arange(1, fam.P), np.arange(fam.P), indexing="ij")
    h = np.stack([fam.hash(a, b, v).ravel() for v in range(d)])
    for v, w in itertools.combinations(range(d), 2):
        assert np.mean(h[v] == h[w]) == pytest.approx(fam.collision, abs=1e-15)
    marg = np.stack([np.bincount(h[v], minlength=g) for v in range(d)])
    assert (marg == marg[0]).all()


@pytest.mark.parametrize("d,g", [(1024, 56), (37, 5), (5, 9), (300, 300)])
def test_voting_equals_pairwise(d, g):
    rng = experiment_rng(2, "olh-vote", d, g)
    fam = olh_family(d, g)
    rep = olh_perturb(rng.integers(0, d, 3000), fam, 2.0, rng)
    assert np.array_equal(olh_support(rep, fam), olh_support_pairwise(rep, fam))
    assert np.array_equal(olh_support(rep, fam, block=64), olh_support_pairwise(rep, fam))


def test_textbook_estimator_biased_when_collision_not_1_over_g():
    """d=3, g=8 -> P=11, c = 6/110 != 1/8: the 1/g estimator is off by many standard errors,
    the exact-collision estimator is not."""
    rng = experiment_rng(2, "olh-bias")
    fam = olh_family(3, 8)
    n, eps = 400_000, 1.0
    vals = np.repeat([0, 1, 2], [200_000, 120_000, 80_000])
    rep = olh_perturb(vals, fam, eps, rng)
    f = np.array([0.5, 0.3, 0.2])
    exact = olh_estimate(rep, eps, fam)
    p = math.exp(eps) / (math.exp(eps) + fam.g - 1)
    textbook = (olh_support(rep, fam) / n - 1 / fam.g) / (p - 1 / fam.g)
    se = 0.01  # > 3 standard errors of these estimates at n = 4e5
    assert np.abs(exact - f).max() < se
    # the textbook estimator converges to a biased value (computed from the exact q*)
    q_star = fam.collision * p + (1 - fam.collision) / (math.exp(eps) + fam.g - 1)
    biased_mean = (p * f + (1 - f) * q_star - 1 / fam.g) / (p - 1 / fam.g)
    assert np.abs(textbook - biased_mean).max() < se
    assert np.abs(biased_mean - f).max() > 5 * se


def test_default_g_and_family_validation():
    assert olh_default_g(4) == 56
    assert olh_family(42178, 56).P == 42179
    with pytest.raises(ValueError, match="prime"):
        olh_family(10, 4, prime=12)
    with pytest.raises(ValueError, match="d must"):
        olh_family(1, 4)


@pytest.mark.slow
def test_voting_equals_pairwise_large():
    rng = experiment_rng(2, "olh-vote-large")
    fam = olh_family(42178, 56)
    rep = olh_perturb(rng.integers(0, 42178, 20_000), fam, 4.0, rng)
    assert np.array_equal(olh_support(rep, fam), olh_support_pairwise(rep, fam))
