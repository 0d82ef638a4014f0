"""Histogram protocols: parameters from Theorem 4, unbiasedness against exact variances, Hist_MM's
stated bias, audits of the local randomizers whose epsilon is claimed, releases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.accountant import survey
from protocols.base import trusted_shuffle
from protocols.histograms import baselines
from protocols.histograms.hist_kr import HistKR
from protocols.histograms.hist_mm import HistMM
from protocols.histograms.murs import SurveyMURS, murs_blanket_epsilon, murs_records
from protocols.histograms.slh import SLH
from protocols.oracles.privacy_audit import audit_randomizer
from protocols.privacy.ledger import USERS, gate
from protocols.rng import experiment_rng

D, N = 16, 50_000
VALUES = (np.arange(N) * 7 % D) // 2 + (np.arange(N) % 3 == 0)  # skewed over [0, 9)
TRUTH = np.bincount(VALUES, minlength=D).astype(float)


def _mean_err(proto, reps: int, key: str, records=None) -> tuple[np.ndarray, np.ndarray]:
    errs = []
    rec = VALUES.reshape(-1, 1) if records is None else records
    for r in range(reps):
        rng = experiment_rng(12, key, r)
        errs.append(np.asarray(proto.analyze(proto.encode(rec, rng))["counts"]) - TRUTH)
    e = np.asarray(errs)
    return e.mean(axis=0), e.std(axis=0)


def test_hist_kr_theorem4_parameters_unbiased_and_audited():
    p = HistKR(D, N, 0.9, 1e-6)
    lam = survey.theorem4_lambda(0.9, N, 1e-6, D)
    assert p.lam == pytest.approx(lam) and p.eps_l == pytest.approx(math.log1p(D * (1 - lam) / lam))
    mean, _ = _mean_err(p, 40, "kr")
    sd = np.sqrt(p.count_variance(TRUTH))
    assert np.all(np.abs(mean) < 4.5 * sd / math.sqrt(40))
    rng = experiment_rng(12, "audit", "kr")

    def sample(v, m, rng):
        return p.encode(np.full(m, v), rng)["reports"][:, 0]

    r = audit_randomizer(sample, 0, 1, D, p.eps_l, n_samples=1_000_000, rng=rng)
    assert r.passed and r.eps_lower > 0.85 * p.eps_l


def test_hist_mm_truncation_bias_and_cost():
    p = HistMM(D, 400_000, 0.9, 1e-6)
    assert p.gamma == pytest.approx(50 * math.log(4e6) / (0.45**2 * 400_000))
    assert p.messages_per_user() == pytest.approx(1 + D * p.p)
    counts = np.array([0, 10, 200_000, 199_990] + [0] * (D - 4))
    mse = p.count_mse(counts)
    assert mse[0] == 0  # an empty label is always published as 0
    assert mse[1] == pytest.approx(100.0, rel=1e-6)  # a small count is truncated to 0
    assert mse[2] == pytest.approx(400_000 * p.gamma * p.p, rel=1e-6)  # unbiased above
    small = HistMM(4, 20_000, 1.0, 0.5)
    rng = experiment_rng(12, "mm")
    v = np.zeros(20_000, dtype=np.int64)
    est = small.analyze(small.encode(v, rng))["counts"]
    assert est[1:] == [0.0, 0.0, 0.0]
    assert small.privacy()["eps_local"] is None


def test_slh_g_minimises_variance_unbiased_and_audited():
    p = SLH(64, 10**6, 0.9, 1e-6)
    g, lam = p.params.g, p.params.gamma
    assert lam == pytest.approx(survey.rr_lambda(p.params.eps_l, g))
    assert survey.theorem4_lambda(0.9, 10**6, 1e-6, g) <= lam + 1e-12
    small = SLH(D, N, 0.9, 1e-6)
    mean, _ = _mean_err(small, 30, "slh")
    sd = np.sqrt(small.variance(TRUTH / N)) * N
    assert np.all(np.abs(mean) < 4.5 * sd / math.sqrt(30))
    fam = small.family
    rng = experiment_rng(12, "audit", "slh")

    def sample(v, m, rng):
        msg = small.encode(np.full(m, v), rng)["reports"]
        a, b = np.divmod(msg[:, 0], fam.P)
        y = msg[:, 1]
        return 2 * (fam.hash(a + 1, b, 0) == y).astype(np.int64) + (fam.hash(a + 1, b, 1) == y)

    r = audit_randomizer(sample, 0, 1, 4, small.params.eps_l, n_samples=1_000_000, rng=rng)
    assert r.passed


def test_murs_fakes_blanket_and_estimator():
    p = SurveyMURS(D, N, 0.9, 1e-6)
    assert p.fakes == math.ceil(0.01 * N)
    assert murs_blanket_epsilon(N, p.eps_l, p.g, p.fakes, 1e-6) == pytest.approx(0.9, rel=1e-9)
    rec = murs_records(VALUES, p.fakes)
    assert rec[:, 1].sum() == p.fakes
    mean, _ = _mean_err(p, 30, "murs", rec)
    sd = np.sqrt(p.variance(TRUTH / N)) * N
    assert np.all(np.abs(mean) < 4.5 * sd / math.sqrt(30))
    rows = p.encode(rec, experiment_rng(12, "m"))["reports"].shape[0]
    assert rows == N + p.fakes
    assert gate(p, 0, {"reports": rows, USERS: N})[0].n_received == N


def test_permutation_invariance_and_baselines():
    rng = experiment_rng(12, "perm")
    for p in (HistKR(D, N, 0.9, 1e-6), SLH(D, N, 0.9, 1e-6)):
        b = p.encode(VALUES.reshape(-1, 1), rng)
        assert p.analyze(b)["counts"] == pytest.approx(p.analyze(trusted_shuffle(b, rng))["counts"])
    e = [baselines.ldp_krr_counts(VALUES, D, 1.0, rng) - TRUTH for _ in range(30)]
    sd = np.sqrt(baselines.ldp_krr_variance(TRUTH, 1.0))
    assert np.all(np.abs(np.mean(e, axis=0)) < 4.5 * sd / math.sqrt(30))
    # exact discrete Laplace on a fine grid (no floating-point Laplace): within 0.5% of 8
    assert 8.0 <= baselines.central_laplace_variance(1.0) <= 8.0 * 1.005
