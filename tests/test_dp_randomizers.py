"""Unbiasedness and exact variance of every frequency oracle, over R repetitions with fixed seeds.

Test statistics (per value v, R independent repetitions of the whole protocol):
- mean: z_v = (mean_R f_v - f_v) / sqrt(Var_v / R), required |z_v| < 4.5 for every v
  (two-sided level ~7e-6 per value);
- variance: (R - 1) s_v^2 / Var_v compared with the chi-square(R - 1) quantiles at 1e-5 and
  1 - 1e-5 (the estimators are sums of n independent terms, so close to normal).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from protocols.oracles.grr import grr_estimate_from_counts, grr_perturb, grr_variance
from protocols.oracles.hadamard_response import (
    hadamard_entry,
    hadamard_order,
    hr_estimate,
    hr_perturb,
    hr_variance,
)
from protocols.oracles.olh import (
    olh_estimate_from_support,
    olh_family,
    olh_perturb,
    olh_support,
    olh_variance,
)
from protocols.oracles.padding_sampling import (
    csr_from_lists,
    inclusion_moments,
    ps_grr_estimate,
    ps_grr_perturb,
    ps_grr_variance,
    ps_hadamard_estimate,
    ps_hadamard_perturb,
    ps_hadamard_variance,
)
from protocols.oracles.unary_encoding import (
    ue_estimate,
    ue_estimate_from_counts,
    ue_perturb,
    ue_sample_counts,
    ue_variance,
)
from protocols.rng import experiment_rng

Z_MAX = 4.5
P_TAIL = 1e-5


def check_mean_var(ests: np.ndarray, truth: np.ndarray, var: np.ndarray) -> None:
    """ests: (R, d) estimates; truth: expected value; var: exact variance per value."""
    R = ests.shape[0]
    z = (ests.mean(axis=0) - truth) / np.sqrt(var / R)
    assert np.abs(z).max() < Z_MAX, f"mean z-scores {z}"
    stat = (R - 1) * ests.var(axis=0, ddof=1) / var
    lo, hi = stats.chi2.ppf([P_TAIL, 1 - P_TAIL], R - 1)
    assert ((stat > lo) & (stat < hi)).all(), f"variance ratios {stat / (R - 1)}"


def population(n: int, freqs: np.ndarray) -> np.ndarray:
    """Exactly round(n f_v) users per value (fixed true counts)."""
    counts = np.round(np.asarray(freqs) * n).astype(int)
    counts[0] += n - counts.sum()
    return np.repeat(np.arange(len(freqs)), counts)


F6 = np.array([0.45, 0.25, 0.15, 0.1, 0.05, 0.0])


def test_grr_unbiased_exact_variance():
    """GRR, R=3000: z-test on the mean and chi-square on the variance (module docstring)."""
    rng = experiment_rng(1, "test", "grr")
    n, R, k, eps = 1000, 3000, 6, 3.0
    vals = population(n, F6)
    f = np.bincount(vals, minlength=k) / n
    rep = grr_perturb(np.tile(vals, R), k, eps, rng).reshape(R, n)
    counts = np.stack([np.bincount(r, minlength=k) for r in rep])
    est = grr_estimate_from_counts(counts.astype(float), eps, n)
    var = grr_variance(f, k, eps, n)
    check_mean_var(est, f, var)
    # the f-term matters here: the small-f approximation is off by > 30% for the top value
    approx = grr_variance(np.zeros(k), k, eps, n)
    assert var[0] / approx[0] > 1.3


@pytest.mark.parametrize("kind", ["oue", "sue"])
def test_unary_encoding_unbiased_exact_variance(kind):
    """OUE/SUE, R=2000, per-user bits and the direct count sampler: z-test and chi-square."""
    rng = experiment_rng(1, "test", kind)
    n, R, d, eps = 500, 2000, 6, 2.5
    vals = population(n, F6)
    f = np.bincount(vals, minlength=d) / n
    bits = ue_perturb(np.tile(vals, R), d, eps, rng, kind).reshape(R, n, d)
    est = np.stack([ue_estimate(b, eps, kind) for b in bits])
    check_mean_var(est, f, ue_variance(f, eps, n, kind))
    # the direct count sampler has the same law
    cnt = np.stack([ue_sample_counts(vals, d, eps, rng, kind) for _ in range(R)])
    check_mean_var(ue_estimate_from_counts(cnt, eps, n, kind), f, ue_variance(f, eps, n, kind))


@pytest.mark.parametrize("d,g", [(6, 5), (40, 7), (3, 8)])
def test_olh_unbiased_exact_variance(d, g):
    """OLH with the exact-collision estimator, R=2000 (incl. d < g): z-test and chi-square."""
    rng = experiment_rng(1, "test", "olh", d, g)
    n, R, eps = 600, 2000, 2.0
    freqs = np.zeros(d)
    freqs[: len(F6)] = F6[:d] / F6[:d].sum()
    vals = population(n, freqs)
    f = np.bincount(vals, minlength=d) / n
    fam = olh_family(d, g)
    reps = olh_perturb(np.tile(vals, R), fam, eps, rng).reshape(R, n, 3)
    est = np.stack([olh_estimate_from_support(olh_support(r, fam), eps, fam, n) for r in reps])
    check_mean_var(est, f, olh_variance(f, eps, fam, n))


def test_hadamard_unbiased_exact_variance_and_brute_force():
    """Hadamard response, R=2000: z-test and chi-square; FWHT equals the explicit sum."""
    rng = experiment_rng(1, "test", "hr")
    n, R, d, eps = 800, 2000, 6, 1.5
    m = hadamard_order(d)
    vals = population(n, F6)
    f = np.bincount(vals, minlength=d) / n
    reps = hr_perturb(np.tile(vals, R), m, eps, rng).reshape(R, n, 2)
    est = np.stack([hr_estimate(r, m, eps, d) for r in reps])
    check_mean_var(est, f, hr_variance(f, eps, n))
    # FWHT aggregation equals the explicit sum c/N sum_i H[j_i, v] s_i
    r = reps[0]
    c = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    brute = c * (hadamard_entry(r[:, 0:1], np.arange(d)[None, :]) * (2 * r[:, 1:2] - 1)).mean(0)
    assert np.allclose(est[0], brute)


def _sets(n: int, rng: np.random.Generator, d: int) -> list[list[int]]:
    sizes = rng.integers(0, 6, size=n)
    w = 1.0 / np.arange(1, d + 1)
    w /= w.sum()
    return [sorted(rng.choice(d, size=s, replace=False, p=w).tolist()) for s in sizes]


def test_padding_sampling_grr_and_hadamard_exact_variance():
    """PS-GRR and PS-Hadamard, R=1500: z-test and chi-square against ell * mean pi and the exact
    variance. With truncation (ell=3 < max size 5): E = ell * mean pi (under-counts truncated users)."""
    rng = experiment_rng(1, "test", "ps")
    d, n, R, ell, eps = 8, 500, 1500, 3, 2.0
    indptr, items = csr_from_lists(_sets(n, rng, d))
    m1, m2 = inclusion_moments(indptr, items, ell, d)
    ind_r = np.concatenate([[0], np.cumsum(np.tile(np.diff(indptr), R))])
    items_r = np.tile(items, R)
    g = ps_grr_perturb(ind_r, items_r, d, ell, eps, rng).reshape(R, n)
    est = np.stack([ps_grr_estimate(r, d, ell, eps) for r in g])
    check_mean_var(est, ell * m1, ps_grr_variance(m1, m2, d, ell, eps, n))
    m = hadamard_order(d)
    h = ps_hadamard_perturb(ind_r, items_r, m, ell, eps, rng).reshape(R, n, 2)
    est = np.stack([ps_hadamard_estimate(r, m, d, ell, eps) for r in h])
    check_mean_var(est, ell * m1, ps_hadamard_variance(m2, ell, eps, n))


def test_padding_sampling_unbiased_without_truncation():
    rng = experiment_rng(1, "test", "ps-untrunc")
    indptr, items = csr_from_lists(_sets(300, rng, 8))
    m1, _ = inclusion_moments(indptr, items, 5, 8)
    true_f = np.bincount(items, minlength=8) / 300
    assert np.allclose(5 * m1, true_f)


def test_bad_inputs_raise():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        ue_perturb(np.array([4]), 4, 1.0, rng)
    with pytest.raises(ValueError, match="kind"):
        ue_perturb(np.array([1]), 4, 1.0, rng, "rappor")
    fam = olh_family(10, 4)
    with pytest.raises(ValueError, match="malformed"):
        olh_support(np.array([[0, 1, 1]]), fam)
    with pytest.raises(ValueError, match="shape"):
        olh_support(np.zeros((3, 2), dtype=int), fam)
    with pytest.raises(ValueError, match="power of two"):
        hr_perturb(np.array([0]), 6, 1.0, rng)
    with pytest.raises(ValueError, match="indptr"):
        ps_grr_perturb(np.array([0, 3]), np.array([1, 2]), 4, 2, 1.0, rng)


@pytest.mark.slow
def test_olh_benchmark_setting_unbiased_exact_variance():
    """d = 1024, g = 56, eps = 4 (the benchmark setting), n = 20000, R = 400."""
    rng = experiment_rng(1, "test", "olh-slow")
    d, n, R, eps = 1024, 20_000, 400, 4.0
    w = 1.0 / np.arange(1, d + 1)
    vals = population(n, w / w.sum())
    f = np.bincount(vals, minlength=d) / n
    fam = olh_family(d, 56)
    est = np.stack(
        [
            olh_estimate_from_support(
                olh_support(olh_perturb(vals, fam, eps, rng), fam), eps, fam, n
            )
            for _ in range(R)
        ]
    )
    check_mean_var(est, f, olh_variance(f, eps, fam, n))
