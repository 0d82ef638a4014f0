"""HP-SDP core: calibration, SRR messages, estimators (unbiased vs the paper's), POP, protocol."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from protocols.base import simulate, trusted_shuffle
from protocols.hp_sdp.protocol import (
    HPSDPProtocol,
    blanket_capacity,
    calibrate,
    estimate_paper,
    estimate_unbiased,
    mean_variance,
    mse,
    paper_estimator_mean,
    paper_optimal_g,
    pop,
    pop_iterative,
    seed_bound,
    srr_encode,
    srr_reports,
    srr_support,
    srr_variance,
    theorem1_epsilon,
)
from protocols.oracles.olh import olh_family


def test_paper_calibration_round_trip_and_optimal_g() -> None:
    for eps_c, delta, n in [(0.1, 1e-6, 600_000), (0.5, 1e-9, 602_325), (1.0, 1e-7, 10**6)]:
        p = calibrate(eps_c, delta, n)
        C = blanket_capacity(eps_c, delta, n)
        assert p.g == max(2, round((C + 2) / 3)) == paper_optimal_g(eps_c, delta, n)
        assert theorem1_epsilon(p.eps_l, p.g, n, delta) == pytest.approx(eps_c, rel=1e-12)
        assert p.gamma == pytest.approx(p.g / C, rel=1e-12)
        assert 0.3 < p.gamma < 0.4  # gamma* ~ 1/3 at the optimal g
    # spec 14 table: Normal/Zipf, delta 1e-6, eps 0.5 -> C 738, g 247, eps_l 6.20
    p = calibrate(0.5, 1e-6, 600_000)
    assert (p.g, round(p.eps_l, 2)) == (247, 6.2)


def test_paper_calibration_errors() -> None:
    with pytest.raises(ValueError, match="eps_c <= 1"):
        calibrate(1.5, 1e-6, 600_000)
    with pytest.raises(ValueError, match="must be < C"):
        calibrate(0.1, 1e-6, 600_000, g=40)
    with pytest.raises(ValueError, match="accounting"):
        calibrate(0.5, 1e-6, 600_000, accounting="magic")
    with pytest.raises(ValueError, match="delta"):
        calibrate(0.5, 0.0, 600_000)


def test_tight_calibration_certified_and_better() -> None:
    from protocols.accountant import amplify

    n, delta = 100_000, 1e-6
    d = 600
    paper, tight = calibrate(0.5, delta, n), calibrate(0.5, delta, n, accounting="tight", d=d)
    amp = amplify(tight.eps_l, n, delta, bound="vr", mechanism="olh", g=tight.g)
    assert amp.valid and amp.eps_central <= 0.5 * (1 + 1e-4)
    assert mean_variance(tight.eps_l, tight.g, n, d) < mean_variance(paper.eps_l, paper.g, n, d)
    # the chosen g beats its neighbours on a coarse scale
    for g in (max(2, tight.g // 4), tight.g * 4):
        other = calibrate(0.5, delta, n, g=g, accounting="tight")
        assert mean_variance(other.eps_l, g, n, d) >= mean_variance(tight.eps_l, tight.g, n, d)
    with pytest.raises(ValueError, match="domain size"):
        calibrate(0.5, delta, n, accounting="tight")


def test_hash_uniform_and_collision() -> None:
    fam = olh_family(600, 11)
    rng = np.random.default_rng(0)
    m = srr_encode(np.full(100_000, 7), fam, 50.0, rng)  # eps huge: y = H(7) almost surely
    counts = np.bincount(m[:, 1], minlength=11)
    # H(v) = ((a v + b) mod P) mod g: residue j has n_j = #{z < P: z mod g = j} preimages
    nj = np.bincount(np.arange(fam.P) % fam.g, minlength=fam.g)
    assert stats.chisquare(counts, nj / fam.P * counts.sum()).pvalue > 1e-3
    rep, _ = srr_reports(m, fam)
    h8 = fam.hash(rep[:, 0], rep[:, 1], np.full(rep.shape[0], 8))
    coll = float(np.mean(h8 == rep[:, 2]))
    assert abs(coll - fam.collision) < 4 * math.sqrt(fam.collision / rep.shape[0])


def test_srr_mixture_probabilities() -> None:
    p = calibrate(0.5, 1e-6, 600_000)
    fam = olh_family(600, p.g)
    rng = np.random.default_rng(1)
    n = 200_000
    m = srr_encode(np.full(n, 3), fam, p.eps_l, rng)
    rep, ok = srr_reports(m, fam)
    assert ok.all()
    keep = float(np.mean(fam.hash(rep[:, 0], rep[:, 1], 3) == rep[:, 2]))
    target = 1 - p.gamma + p.gamma / p.g  # Eq. 7: keep w.p. 1 - gamma, else uniform on [g]
    assert target == pytest.approx(math.exp(p.eps_l) / (math.exp(p.eps_l) + p.g - 1), rel=1e-12)
    assert abs(keep - target) < 3.3 * math.sqrt(target * (1 - target) / n)


def test_messages_fresh_seeds_width_bounds() -> None:
    proto = HPSDPProtocol(5000, calibrate(0.5, 1e-6, 10_000))
    spec = proto.batch_specs()[0]
    assert (spec.width, spec.bound) == (2, max(seed_bound(proto.family), proto.family.g))
    vals = np.zeros(5000, dtype=np.int64)  # identical records: seeds must still differ
    a = proto.encode(vals, np.random.default_rng(2))["reports"]
    b = proto.encode(vals, np.random.default_rng(3))["reports"]
    assert a.shape == (5000, 2) and a.dtype == np.int64
    assert ((a >= 0) & (a < spec.bound)).all()
    assert np.unique(a[:, 0]).size > 4900  # seeds not tied to the value or the position
    assert not np.array_equal(a[:, 0], b[:, 0])  # a different client RNG gives different seeds
    rep, ok = srr_reports(a, proto.family)
    assert ok.all() and (rep[:, 0] >= 1).all() and (rep[:, 0] < proto.family.P).all()


def test_malformed_messages_dropped() -> None:
    proto = HPSDPProtocol(50, calibrate(0.5, 1e-6, 10_000), post="none")
    m = proto.encode(np.arange(1000) % 50, np.random.default_rng(4))["reports"]
    bad = m.copy()
    bad[:10, 1] = proto.family.g  # y out of [0, g)
    out = proto.analyze({"reports": bad})
    assert out["invalid"] == 10 and out["reports"] == 990
    with pytest.raises(ValueError, match="shape"):
        srr_support(np.zeros((3, 3), dtype=np.int64), proto.family)
    with pytest.raises(ValueError, match="reports"):
        proto.analyze({})


def test_unbiased_and_exact_variance_vs_paper_bias() -> None:
    n, d, R = 2000, 20, 300
    params = calibrate(0.9, 1e-6, 200_000)  # g and eps_l of a large deployment
    fam = olh_family(d, params.g)
    f = 1.0 / np.arange(1, d + 1) ** 1.1
    f /= f.sum()
    values = np.random.default_rng(50).choice(d, size=n, p=f)
    truth = np.bincount(values, minlength=d) / n
    rng = np.random.default_rng(5)
    est, paper = np.empty((R, d)), np.empty((R, d))
    for r in range(R):
        s, m = srr_support(srr_encode(values, fam, params.eps_l, rng), fam)
        est[r] = estimate_unbiased(s, m, params.eps_l, fam)
        paper[r] = estimate_paper(s, m, params.gamma, params.g)
    var = srr_variance(truth, params.eps_l, fam, n)
    z = (est.mean(0) - truth) / np.sqrt(var / R)
    assert np.abs(z).max() < 4.0
    ratio = est.var(0, ddof=1).mean() / var.mean()
    assert 0.9 < ratio < 1.1
    # the printed estimator: its Monte-Carlo mean follows the predicted biased mean, not f
    pred = paper_estimator_mean(truth, params.eps_l, params.gamma, fam)
    assert np.abs(paper.mean(0) - pred).max() < 4 * np.sqrt(paper.var(0).max() / R)
    assert np.abs(pred - truth).mean() > 0.05
    assert mse(paper.mean(0), truth) > 100 * mse(est.mean(0), truth)


def test_permutation_invariance() -> None:
    proto = HPSDPProtocol(100, calibrate(0.5, 1e-6, 10_000))
    rng = np.random.default_rng(6)
    b = proto.encode(rng.integers(0, 100, 10_000), rng)
    assert proto.analyze(b) == proto.analyze(trusted_shuffle(b, rng))


def test_pop_exact_equals_iterative_and_kkt() -> None:
    rng = np.random.default_rng(7)
    for d in (5, 50, 600):
        est = rng.normal(1 / d, 3 / d, size=d)
        a, b = pop(est), pop_iterative(est)
        np.testing.assert_allclose(a, b, atol=1e-12)
        assert (a >= 0).all() and abs(a.sum() - 1) < 1e-12
        np.testing.assert_allclose(pop(a), a, atol=1e-13)  # idempotent
        pos = a > 0
        tau = (est - a)[pos]
        assert np.ptp(tau) < 1e-12  # one common shift on the support
        assert (est[~pos] <= tau[0] + 1e-12).all()  # KKT on the zero set
    simplex = rng.dirichlet(np.ones(30))
    np.testing.assert_allclose(pop(simplex), simplex, atol=1e-13)


def test_pop_matches_qp_solver() -> None:
    from scipy.optimize import minimize

    rng = np.random.default_rng(8)
    est = rng.normal(0.1, 0.2, size=10)
    res = minimize(
        lambda x: ((x - est) ** 2).sum(),
        np.full(10, 0.1),
        jac=lambda x: 2 * (x - est),
        bounds=[(0, 1)] * 10,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 500},
    )
    np.testing.assert_allclose(pop(est), res.x, atol=1e-6)


def test_protocol_simulate_and_pop_helps_on_skewed_data() -> None:
    n, d = 60_000, 200
    proto = HPSDPProtocol(d, calibrate(0.5, 1e-6, n))
    rng = np.random.default_rng(9)
    p = 1.0 / np.arange(1, d + 1) ** 1.1
    values = rng.choice(d, size=n, p=p / p.sum())
    truth = np.bincount(values, minlength=d) / n
    out = simulate(proto, values, rng)
    pub, raw = np.asarray(out["frequencies"]), np.asarray(out["raw_frequencies"])
    assert abs(pub.sum() - 1) < 1e-12 and (pub >= 0).all()
    assert mse(pub, truth) < mse(raw, truth)
    assert 0.6 < mse(raw, truth) / proto.variance(truth).mean() < 1.5
    assert proto.privacy()["eps_central"] == pytest.approx(0.5)
    assert proto.bits_per_user() > math.log2(proto.family.g)


@pytest.mark.slow
def test_zipf_600k_mse_within_20pct_of_exact_variance() -> None:
    from protocols.hp_sdp.data import load

    ds = load("zipf")
    truth = ds.frequencies()
    proto = HPSDPProtocol(ds.d, calibrate(0.5, 1e-6, ds.n), post="pop")
    rng = np.random.default_rng(10)
    ratios = []
    for _ in range(3):
        out = simulate(proto, ds.values, rng)
        ratios.append(mse(np.asarray(out["raw_frequencies"]), truth) / proto.variance(truth).mean())
    assert abs(np.mean(ratios) - 1) < 0.2


@pytest.mark.parametrize(("d", "g"), [(600, 7), (42_178, 12), (1000, 3), (50, 2), (600, 601)])
def test_incremental_support_equals_olh_support(d: int, g: int) -> None:
    from protocols.hp_sdp.protocol import support_incremental
    from protocols.oracles.olh import olh_support, olh_support_pairwise

    fam = olh_family(d, g)
    rng = np.random.default_rng(d + g)
    m = srr_encode(rng.integers(0, d, 3000), fam, 2.0, rng)
    rep, _ = srr_reports(m, fam)
    ref = olh_support(rep, fam)
    np.testing.assert_array_equal(support_incremental(rep, fam, chunk=1000), ref)
    if d <= 1000:
        np.testing.assert_array_equal(olh_support_pairwise(rep, fam), ref)
