"""Real-sum protocols: unbiasedness against their exact variances, RSum_RM's digits, the paper's
generic precisions, audits of the local randomizers (rounding included), releases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.accountant import survey
from protocols.oracles.privacy_audit import audit_randomizer
from protocols.privacy.ledger import gate
from protocols.rng import experiment_rng
from protocols.sums import baselines
from protocols.sums.rounding import randomized_rounding, rounding_variance
from protocols.sums.rsum_dsg import RSumDSG
from protocols.sums.rsum_kr import RSumKR
from protocols.sums.rsum_rm import RSumRM, rm_digits, rm_parameters
from protocols.sums.rsum_rr import RSumRR, group_split

N = 100_000
X = (np.arange(N) % 97) / 96.0


def _check_unbiased(p, reps: int, key: str) -> None:
    errs = []
    for r in range(reps):
        rng = experiment_rng(13, key, r)
        errs.append(p.analyze(p.encode(X.reshape(-1, 1), rng))["sum"] - X.sum())
    sd = math.sqrt(p.variance(X))
    assert abs(np.mean(errs)) < 4 * sd / math.sqrt(reps)
    assert 0.55 < np.std(errs) / sd < 1.5


def test_rounding_unbiased_exact_variance():
    rng = experiment_rng(13, "round")
    s = [randomized_rounding(X, 10, rng).sum() / 10 - X.sum() for _ in range(200)]
    assert abs(np.mean(s)) < 4 * math.sqrt(rounding_variance(X, 10) / 200)


def test_rsum_rr_group_privacy_parameters():
    p = RSumRR(N, 0.9, 1e-6)
    e1, d1 = group_split(0.9, 1e-6, 10)
    assert (e1, d1) == pytest.approx((0.09, 1e-6 / (10 * math.exp(0.81))))
    assert survey.theorem3_epsilon(p.lam, N * 10, d1) <= e1 + 1e-12
    _check_unbiased(p, 30, "rr")
    g = p.guarantee(N)
    assert g.eps == pytest.approx(0.9, rel=1e-9) and g.delta == pytest.approx(1e-6, rel=1e-9)


def test_rsum_kr_and_its_local_randomizer_audit():
    p = RSumKR(N, 0.9, 1e-6)
    assert p.k == 11 and p.lam == pytest.approx(survey.theorem4_lambda(0.9, N, 1e-6, 11))
    _check_unbiased(p, 40, "kr")
    assert RSumKR(10**6, 0.9, 1e-6, levels="optimal").p == 100
    rng = experiment_rng(13, "audit", "kr")

    def sample(v, m, rng):
        return p.encode(np.full(m, float(v)), rng)["reports"][:, 0]

    r = audit_randomizer(sample, 0, 1, p.k, p.eps_l, n_samples=1_000_000, rng=rng)
    assert r.passed and r.eps_lower > 0.85 * p.eps_l


def test_rsum_rm_digits_parameters_and_unbiased():
    ps = (4, 5, 7)
    rng = experiment_rng(13, "digits")
    d = rm_digits(X, ps, rng)
    recon = d[:, 0] / 4 + d[:, 1] / 20 + d[:, 2] / 140
    assert np.all(np.abs(recon - X) <= 1 / 140 + 1e-12)
    assert d[:, 0].max() <= 3 and d[:, 1].max() <= 4 and d[:, 2].max() <= 7
    gen, eps = rm_parameters(10**6, 0.9, 1e-6, 3, "generic")
    assert gen == (2, 5, 93) and eps == pytest.approx((0.3, 0.3, 0.3))
    p = RSumRM(N, 0.9, 1e-6)
    assert sum(p.eps_js) == pytest.approx(0.9) and p.guarantee(N).eps <= 0.9 + 1e-9
    _check_unbiased(p, 40, "rm")
    q = RSumRM(N, 0.9, 1e-6, m=2, precisions="generic")
    _check_unbiased(q, 30, "rm2")
    rng = experiment_rng(13, "audit", "rm")
    k1, k2, k3 = p.ks

    def sample(v, m, rng):
        b = p.encode(np.full(m, float(v)), rng)
        return (b["digit0"][:, 0] * k2 + b["digit1"][:, 0]) * k3 + b["digit2"][:, 0]

    r = audit_randomizer(sample, 0, 1, k1 * k2 * k3, sum(p.eps_ls), n_samples=1_000_000, rng=rng)
    assert r.passed


def test_rsum_dsg_unbiased_and_parameters():
    p = RSumDSG(20_000, 0.9)
    assert p.p == math.ceil(4 * 0.9 * math.sqrt(20_000))
    x = X[:20_000]
    errs = [
        p.analyze(p.encode(x, experiment_rng(13, "dsg", r)))["sum"] - x.sum() for r in range(30)
    ]
    sd = math.sqrt(p.variance(x))
    assert abs(np.mean(errs)) < 4 * sd / math.sqrt(30) and np.std(errs) < 1.6 * sd
    assert gate(p, 0, {"shares": 20_000 * p.params.shares})[0].eps == pytest.approx(0.9)


def test_harmony_unbiased_and_audited():
    rng = experiment_rng(13, "harmony")
    e = [baselines.harmony_sum(X, 1.0, rng) - X.sum() for _ in range(40)]
    assert abs(np.mean(e)) < 4 * math.sqrt(baselines.harmony_variance(X, 1.0) / 40)

    def sample(v, m, rng):
        return (baselines.harmony_reports(np.full(m, float(v)), 1.0, rng) > 0).astype(np.int64)

    r = audit_randomizer(sample, 0, 1, 2, 1.0, n_samples=500_000, rng=rng)
    assert r.passed and r.eps_lower > 0.85
