"""Exact privacy noise (issue 21 item 5): CKS20 discrete Laplace, the central baselines on a
grid, and Split-Mix's Polya shares with a stated distance from the ideal law."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from protocols.oracles.central import laplace_grid, laplace_mechanism
from protocols.oracles.discrete_noise import bernoulli_exp, discrete_laplace, discrete_laplace_pmf
from protocols.summation.polya import polya_table, sample_polya


def test_bernoulli_exp_rate() -> None:
    rng = np.random.default_rng(0)
    for num, den in ((3, 10), (25, 10), (0, 1)):
        b = bernoulli_exp(np.full(200_000, num), den, rng)
        p = np.exp(-num / den)
        assert abs(b.mean() - p) < 5 * np.sqrt(p * (1 - p) / b.size) + 1e-12


def test_discrete_laplace_matches_its_pmf() -> None:
    rng = np.random.default_rng(1)
    z = discrete_laplace(1.5, 400_000, rng)
    ks = np.arange(-8, 9)
    obs = np.array([(z == k).sum() for k in ks] + [(np.abs(z) > 8).sum()])
    pmf = discrete_laplace_pmf(ks, 1.5)
    exp = np.append(pmf, 1 - pmf.sum()) * z.size
    assert ((obs - exp) ** 2 / exp).sum() < stats.chi2.ppf(1 - 1e-5, len(obs) - 1)


def test_central_laplace_outputs_lie_on_the_grid() -> None:
    """No floating-point Laplace: every output is an exact multiple of the stated grid."""
    rng = np.random.default_rng(2)
    g = laplace_grid(2.0)
    y = laplace_mechanism(np.array([10.0, 0.3, 7.25] * 1000), 2.0, 0.5, rng)
    assert np.all(y / g == np.round(y / g))


def test_polya_table_law_and_distance() -> None:
    t = polya_table(3, 1.0, 4)
    assert t.tv_bound < 1e-25
    x = sample_polya(t, 400_000, np.random.default_rng(3))
    ks = np.arange(10)
    pmf = stats.nbinom.pmf(ks, 1 / 3, 1 - np.exp(-1 / 4))
    obs = np.array([(x == k).sum() for k in ks] + [(x >= 10).sum()])
    exp = np.append(pmf, 1 - pmf.sum()) * x.size
    assert ((obs - exp) ** 2 / exp).sum() < stats.chi2.ppf(1 - 1e-5, len(obs) - 1)


def test_splitmix_delta_includes_the_sampler() -> None:
    from protocols.summation.split_mix import splitmix_parameters

    p = splitmix_parameters(5000, 1.0, 1e-6, min_users=4000)
    assert p.delta_sampler > 0 and p.delta_total <= 1e-6
    assert p.n_min == 4000 and p.shares >= splitmix_parameters(5000, 1.0, 1e-6).shares
    with pytest.raises(ValueError, match="min_users"):
        splitmix_parameters(5000, 1.0, 1e-6, min_users=6000)
