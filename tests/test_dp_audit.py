"""Privacy audit: every randomizer passes with 1e6 samples per input, GRR comes close to its
claimed epsilon, and deliberately broken randomizers are caught."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.oracles.olh import olh_family
from protocols.oracles.privacy_audit import (
    audit_counts,
    audit_randomizer,
    clopper_pearson,
    grr_sampler,
    hadamard_sampler,
    max_log_ratio,
    olh_sampler,
    ue_sampler,
)
from protocols.rng import experiment_rng

N = 1_000_000


@pytest.mark.parametrize("k,eps", [(4, 1.0), (2, 0.5), (16, 2.0)])
def test_grr_audit_passes_and_is_close(k, eps):
    rng = experiment_rng(3, "audit", "grr", k)
    s, n_ev = grr_sampler(k, eps)
    r = audit_randomizer(s, 0, 1, n_ev, eps, n_samples=N, rng=rng)
    assert r.passed
    assert r.eps_lower > 0.95 * eps  # close: within 5% at 1e6 samples


@pytest.mark.parametrize(
    "name",
    ["oue", "sue", "olh", "hadamard"],
)
def test_other_randomizers_pass(name):
    rng = experiment_rng(3, "audit", name)
    eps = 1.0
    if name in ("oue", "sue"):
        s, n_ev = ue_sampler(8, eps, name, 2, 5)
    elif name == "olh":
        s, n_ev = olh_sampler(olh_family(16, 4), eps, 2, 5)
    else:
        s, n_ev = hadamard_sampler(8, eps, 2, 5)
    r = audit_randomizer(s, 2, 5, n_ev, eps, n_samples=N, rng=rng)
    assert r.passed, r
    assert r.eps_lower > 0.9 * eps  # these event maps capture the worst-case ratio


def _broken_grr(k: int, eps: float):
    """Bug: keep probability computed as if k were 2, spreading the rest over k-1 values."""

    def sample(v, m, rng):
        p = math.exp(eps) / (math.exp(eps) + 1)
        keep = rng.random(m) < p
        return np.where(keep, v, (v + rng.integers(1, k, m)) % k)

    return sample


def _broken_oue(d: int, eps: float, x: int, xp: int):
    """Bug (cf. pure-LDP #11 style): other bits use q = 1/(e^(2 eps)+1)."""

    def sample(v, m, rng):
        bits = rng.random((m, d)) < 1 / (math.exp(2 * eps) + 1)
        bits[:, v] = rng.random(m) < 0.5
        return 2 * bits[:, x].astype(np.int64) + bits[:, xp]

    return sample


def test_broken_randomizers_are_caught():
    rng = experiment_rng(3, "audit", "broken")
    r = audit_randomizer(_broken_grr(4, 1.0), 0, 1, 4, 1.0, n_samples=N, rng=rng)
    assert not r.passed and r.eps_lower > 1.5
    r = audit_randomizer(_broken_oue(8, 1.0, 2, 5), 2, 5, 4, 1.0, n_samples=N, rng=rng)
    assert not r.passed and r.eps_lower > 1.5


def test_subtle_violation_caught():
    """A GRR claiming eps=1.0 that really runs at eps=1.1 is caught at 1e6 samples."""
    rng = experiment_rng(3, "audit", "subtle")
    s, n_ev = grr_sampler(2, 1.1)
    r = audit_randomizer(s, 0, 1, n_ev, 1.0, n_samples=N, rng=rng)
    assert not r.passed


def test_clopper_pearson_and_audit_counts_edge_cases():
    lo, hi = clopper_pearson(np.array([0, 5, 10]), 10, 0.05)
    assert lo[0] == 0 and hi[2] == 1 and lo[1] < 0.5 < hi[1]
    # no samples of an atom under x: that atom gives no evidence
    r = audit_counts(np.array([10, 0]), np.array([5, 5]), 1.0)
    assert r.eps_lower >= 0
    with pytest.raises(ValueError, match="same"):
        audit_counts(np.array([1, 2]), np.array([1, 1]), 1.0)
    assert max_log_ratio([0.5, 0.5], [0.25, 0.75]) == pytest.approx(math.log(2))
    assert max_log_ratio([1.0, 0.0], [0.5, 0.5]) == math.inf


@pytest.mark.slow
def test_grr_audit_tight_with_1e7_samples():
    rng = experiment_rng(3, "audit", "grr-slow")
    s, n_ev = grr_sampler(4, 1.0)
    r = audit_randomizer(s, 0, 1, n_ev, 1.0, n_samples=10_000_000, rng=rng)
    assert r.passed and r.eps_lower > 0.98


def test_padding_sampling_and_geometric_pass():
    """PS-GRR on neighbouring sets {0,1,2} vs {3} (ell=3) and the geometric mechanism on
    neighbouring counts 0 vs 1 (atoms: noise values in [-12, 12] plus two tails)."""
    from protocols.oracles.central import geometric_mechanism
    from protocols.oracles.padding_sampling import csr_from_lists, ps_grr_perturb

    rng = experiment_rng(3, "audit", "ps-geo")
    eps, d, ell = 1.0, 6, 3
    sets = {0: [0, 1, 2], 1: [3]}

    def ps_sample(v, m, rng):
        indptr, items = csr_from_lists([sets[v]] * m)
        return ps_grr_perturb(indptr, items, d, ell, eps, rng)

    r = audit_randomizer(ps_sample, 0, 1, d + 1, eps, n_samples=N, rng=rng)
    assert r.passed, r

    def geo_sample(v, m, rng):
        z = geometric_mechanism(np.full(m, v), 1, eps, rng)
        return np.clip(z, -13, 13) + 13

    r = audit_randomizer(geo_sample, 0, 1, 27, eps, n_samples=N, rng=rng)
    assert r.passed and r.eps_lower > 0.9 * eps
