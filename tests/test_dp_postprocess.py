"""Post-processing: sort-based simplex projection is the least-squares optimum, the iterative
Norm-Sub reaches it, non-negativity clip; central mechanisms' noise laws; seeding scheme."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from protocols.oracles.central import (
    geometric_mechanism,
    geometric_variance,
    laplace_mechanism,
    laplace_variance,
)
from protocols.oracles.grr import grr_probabilities, grr_sample_counts
from protocols.oracles.postprocess import nonnegative, norm_add, norm_mul, norm_sub, project_simplex
from protocols.rng import experiment_rng, secure_randbelow, secure_rng, spawn_rngs


def test_projection_matches_norm_sub_and_is_optimal():
    rng = experiment_rng(4, "pp")
    for _ in range(300):
        d = int(rng.integers(1, 50))
        f = rng.normal(1 / d, 0.3, size=d)
        a, b = project_simplex(f), norm_sub(f)
        assert np.allclose(a, b, atol=1e-12)
        assert a.min() >= 0 and a.sum() == pytest.approx(1.0)
        # variational inequality: <f - a, y - a> <= 0 for feasible y (a is the projection)
        y = rng.dirichlet(np.ones(d), size=20)
        assert ((y - a) @ (f - a) <= 1e-10).all()


def test_projection_batch_total_and_fixed_points():
    rng = experiment_rng(4, "pp-batch")
    f = rng.normal(0, 1, size=(7, 12))
    out = project_simplex(f, total=3.0)
    assert np.allclose(out.sum(axis=1), 3.0)
    for i in range(7):
        assert np.allclose(out[i], norm_sub(f[i], total=3.0))
    p = np.array([0.2, 0.3, 0.5])
    assert np.allclose(project_simplex(p), p)
    assert np.array_equal(nonnegative([-1.0, 2.0]), [0.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        project_simplex(np.array([np.nan, 1.0]))


def test_laplace_and_geometric_noise_laws():
    """Laplace: KS test against Lap(Delta/eps); geometric: chi-square against the exact pmf."""
    rng = experiment_rng(4, "central")
    x = laplace_mechanism(np.zeros(200_000), 2.0, 0.5, rng)
    assert stats.kstest(x, stats.laplace(scale=4.0).cdf).pvalue > 1e-4
    assert x.var() == pytest.approx(laplace_variance(2.0, 0.5), rel=0.03)
    z = geometric_mechanism(np.zeros(400_000, dtype=np.int64), 1, 1.0, rng)
    alpha = math.exp(-1.0)
    ks = np.arange(-8, 9)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(ks)
    obs = np.array([(z == k).sum() for k in ks] + [(np.abs(z) > 8).sum()])
    exp = np.append(pmf, 1 - pmf.sum()) * z.size
    chi = ((obs - exp) ** 2 / exp).sum()
    assert chi < stats.chi2.ppf(1 - 1e-5, len(obs) - 1)
    assert z.var() == pytest.approx(geometric_variance(1, 1.0), rel=0.03)
    with pytest.raises(ValueError, match="integers"):
        geometric_mechanism(np.zeros(3), 1, 1.0, rng)


def test_seeding_scheme_reproducible_and_independent():
    a = experiment_rng(7, "seed002", "rep", 3).integers(0, 2**62, 4)
    b = experiment_rng(7, "seed002", "rep", 3).integers(0, 2**62, 4)
    c = experiment_rng(7, "seed002", "rep", 4).integers(0, 2**62, 4)
    d = experiment_rng(8, "seed002", "rep", 3).integers(0, 2**62, 4)
    assert np.array_equal(a, b) and not np.array_equal(a, c) and not np.array_equal(a, d)
    kids = spawn_rngs(7, 3, "users")
    assert len({int(k.integers(0, 2**62)) for k in kids}) == 3
    # string keys are stable across processes (BLAKE2b, not Python's salted hash)
    assert experiment_rng(0, "x").integers(0, 2**62) == experiment_rng(0, "x").integers(0, 2**62)
    with pytest.raises(ValueError, match="non-negative"):
        experiment_rng(-1)
    s1, s2 = secure_rng(), secure_rng()
    assert s1.integers(0, 2**62) != s2.integers(0, 2**62)
    r = secure_randbelow(10, 100)
    assert r.min() >= 0 and r.max() < 10


def test_norm_add_and_norm_mul():
    f = np.array([0.7, -0.2, 0.3, 0.4])
    assert norm_add(f).sum() == pytest.approx(1.0)
    assert np.allclose(np.diff(norm_add(f) - f), 0)
    m = norm_mul(f)
    assert m.sum() == pytest.approx(1.0) and m[1] == 0 and m[0] / m[2] == pytest.approx(7 / 3)
    assert np.allclose(norm_mul(np.array([-1.0, -2.0])), [0.5, 0.5])


def test_grr_sample_counts_law():
    """Mean of the sampled histogram: n_v p + (n - n_v) q (z-test over 2000 draws)."""
    rng = experiment_rng(4, "grr-counts")
    true = np.array([500, 300, 150, 50])
    draws = np.stack([grr_sample_counts(true, 1.0, rng) for _ in range(2000)])
    assert (draws.sum(axis=1) == true.sum()).all()
    p, q = grr_probabilities(4, 1.0)
    mean = true * p + (true.sum() - true) * q
    var = true * p * (1 - p) + (true.sum() - true) * q * (1 - q)
    z = (draws.mean(axis=0) - mean) / np.sqrt(var / 2000)
    assert np.abs(z).max() < 4.5
