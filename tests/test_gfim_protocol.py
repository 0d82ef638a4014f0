"""GFIM / LDPMiner: data, two-round simulate, unbiasedness and exact variances, metrics, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.base import simulate
from protocols.gfim.ldpminer import LDPMiner, OnePhase
from protocols.gfim.protocol import (
    GFIM,
    combination_weight,
    combine,
    phase_variance,
    top_indices,
    topk_metrics,
)
from protocols.gfim.setvalued_data import (
    check_records,
    from_lists,
    item_frequencies,
    synthetic_sets,
    synthetic_weights,
    to_csr,
)
from protocols.oracles.hadamard_response import hr_constant
from protocols.rng import experiment_rng


def small_data(n: int = 4000, d: int = 16, max_size: int = 4, seed: int = 0) -> np.ndarray:
    """Sets of 0..max_size distinct items with a skewed item law (no set above max_size)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, d + 1)
    sets = []
    for _ in range(n):
        s = rng.integers(0, max_size + 1)
        sets.append(list(rng.choice(d, size=s, replace=False, p=w / w.sum())))
    return from_lists(sets, width=max_size)


def test_synthetic_generator_sets_and_law():
    rec = synthetic_sets("laplace", 3000, seed=1)
    assert rec.shape == (3000, 50) and rec.dtype == np.int32
    check_records(rec, 1000)  # distinct items per user, in range
    assert np.array_equal(rec, synthetic_sets("laplace", 3000, seed=1))
    assert not np.array_equal(rec, synthetic_sets("laplace", 3000, seed=2))
    for dist in ("laplace", "normal"):
        w = synthetic_weights(dist)
        v = np.arange(1000)
        mean = (w * v).sum()
        assert abs(mean - 500) < 1e-6 and abs((w * (v - mean) ** 2).sum() - 1800) < 5
    f = item_frequencies(rec, 1000)
    assert f.argmax() in range(495, 506) and abs(f.sum() - 50) < 1e-9


def test_records_helpers_and_errors():
    rec = from_lists([[3, 1], [], [0, 2, 5]])
    assert rec.tolist() == [[3, 1, -1], [-1, -1, -1], [0, 2, 5]]
    indptr, items = to_csr(rec)
    assert indptr.tolist() == [0, 2, 2, 5] and items.tolist() == [3, 1, 0, 2, 5]
    with pytest.raises(ValueError, match="duplicate"):
        check_records(np.array([[1, 1]]), 4)
    with pytest.raises(ValueError, match="items must lie"):
        check_records(np.array([[7]]), 4)
    with pytest.raises(ValueError, match="k_max"):
        GFIM(10, 6, 3, 1.0)  # k_max = 12 > d
    with pytest.raises(ValueError, match="combination"):
        GFIM(16, 2, 3, 1.0, combination="nope")
    g = GFIM(16, 2, 3, 1.0)
    with pytest.raises(ValueError, match="items must lie"):
        g.encode_round(0, np.array([[20]]), np.random.default_rng(0), {}, {})
    with pytest.raises(ValueError, match="round-0 state"):
        g.encode_round(
            1, np.array([[1]]), np.random.default_rng(0), {"candidates": [0, 1, 2, 3]}, {}
        )
    loc: dict = {}
    g.encode_round(0, np.array([[1], [2]]), np.random.default_rng(0), {}, loc)
    with pytest.raises(ValueError, match="distinct candidates"):
        g.encode_round(
            1, np.array([[1], [2]]), np.random.default_rng(0), {"candidates": [0, 0, 1, 2]}, loc
        )


def test_two_round_simulate_groups_disjoint_each_user_once():
    rec = small_data(n=3001)
    g = GFIM(16, 3, 4, 2.0)
    rng = np.random.default_rng(5)
    # drive the rounds by hand to look at the messages of each population block
    loc: dict = {}
    b0 = g.encode_round(0, rec, rng, {}, loc)
    assert b0["phase1"].shape == (1500, 2) and loc["group1"].sum() == 1500
    pub = g.analyze_round(0, b0, {})
    assert len(pub["candidates"]) == 6 and pub["n1"] == 1500
    b1 = g.encode_round(1, rec, rng, pub, loc)
    assert b1["phase2"].shape == (1501, 2)  # the other half, each user exactly once
    assert (b1["phase2"][:, 0] < g.m2).all() and g.m2 == 8
    out = g.analyze_round(1, b1, pub)
    assert out["n1"] + out["n2"] == 3001 and len(out["top_k"]) == 3
    # simulate with 3 populations runs the same code; every block splits its own users
    res = simulate(g, rec, np.random.default_rng(1), populations=3)
    assert res["n1"] == sum(b // 2 for b in (1000, 1000, 1001)) and res["n1"] + res["n2"] == 3001
    m = LDPMiner(16, 3, 4, 2.0)
    res = simulate(m, rec, np.random.default_rng(1), populations=2)
    assert res["n1"] == res["n2"] == 3001 and m.eps1 == m.eps2 == 1.0


def test_top_indices_ties_and_metrics():
    assert top_indices(np.array([1.0, 3.0, 3.0, 0.5]), 3).tolist() == [1, 2, 0]
    true_f = np.array([0.9, 0.8, 0.7, 0.1, 0.05])
    est = np.array([0.9, 0.4, 0.0, 0.75, 0.0])
    m = topk_metrics(np.array([0, 3, 1]), est, true_f, 3)
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["ncr"] == pytest.approx((3 + 2) / 6)  # ranks 1 and 2 found
    assert m["re"] == pytest.approx(0.5)  # median of 0, 0.5, 1


def test_combination_rules():
    f1, f2 = np.array([0.5, 0.2, 0.1]), np.array([0.3, 0.6])
    cand = np.array([0, 2])
    kw = dict(ell=50, k_max=60, eps1=1.0, eps2=1.0, n1=1000, n2=1000)
    w = combination_weight("thesis", f1[cand], f2, **kw)
    assert np.allclose(
        combine(f1, f2, cand, w), [(0.5 + 49 * 0.3) / 50, 0.2, (0.1 + 49 * 0.6) / 50]
    )
    wi = combination_weight("ivw", f1[cand], f2, **kw)
    c = hr_constant(1.0)
    v1 = (2500 * c * c - 0.5) / 1000
    v2 = (3600 * c * c - 0.3) / 1000
    assert wi[0] == pytest.approx(v1 / (v1 + v2))
    assert abs(wi[1] - 2500 / 6100) < 1e-3  # ~ ell^2 / (ell^2 + k_max^2)
    assert np.allclose(combination_weight("phase2", f1[cand], f2, **kw), 1.0)


def _mc(protocol, rec, reps, tag):
    """f1 and f2 over repetitions with fixed candidates (round 1 uses a fixed public state)."""
    f1s, f2s = [], []
    cand = list(range(protocol.k_max))
    for r in range(reps):
        rng = experiment_rng(11, "gfim-test", tag, r)
        loc: dict = {}
        b0 = protocol.encode_round(0, rec, rng, {}, loc)
        p0 = protocol.analyze_round(0, b0, {})
        pub = dict(p0, candidates=cand)
        b1 = protocol.encode_round(1, rec, rng, pub, loc)
        out = protocol.analyze_round(1, b1, pub)
        f1s.append(out["f1"])
        f2s.append(out["f2"])
    return np.array(f1s), np.array(f2s), out


@pytest.mark.parametrize("cls", [GFIM, LDPMiner])
def test_phase_estimators_unbiased_with_exact_variance(cls):
    rec = small_data(n=4000, d=16, max_size=4)
    d, ell = 16, 4  # no truncation: unbiased
    p = cls(d, 3, ell, 2.0)
    reps = 300
    f1s, f2s, last = _mc(p, rec, reps, cls.__name__)
    f = item_frequencies(rec, d)
    var = p.variances(rec, np.arange(p.k_max), last["n1"], last["n2"])
    z1 = (f1s.mean(0) - f) / np.sqrt(var["f1"] / reps)
    z2 = (f2s.mean(0) - f[: p.k_max]) / np.sqrt(var["f2"] / reps)
    assert np.abs(z1).max() < 4 and np.abs(z2).max() < 4
    # empirical / exact variance: chi-square with reps - 1 dof, about +-20 % at 4 sigma
    r1 = f1s.var(0, ddof=1) / var["f1"]
    r2 = f2s.var(0, ddof=1) / var["f2"]
    tol = 4 * math.sqrt(2 / (reps - 1))
    assert np.abs(r1 - 1).max() < tol and np.abs(r2 - 1).max() < tol


def test_truncation_bias_matches_inclusion_moments():
    rec = small_data(n=4000, d=16, max_size=6, seed=3)
    p = LDPMiner(16, 2, 3, 4.0)
    f1s, _, _ = _mc(p, rec, 200, "trunc")
    indptr, items = to_csr(rec)
    sizes = np.diff(indptr)
    expect = (
        np.bincount(items, weights=np.repeat(3.0 / np.maximum(sizes, 3), sizes), minlength=16)
        / 4000
    )
    se = np.sqrt(phase_variance(np.zeros(16), 3, 2.0, 4000) / 200)
    assert np.abs((f1s.mean(0) - expect) / se).max() < 4
    assert (expect <= item_frequencies(rec, 16) + 1e-12).all()


def test_one_phase_baseline_and_recombine():
    rec = small_data(n=20000, d=16, max_size=4)
    f = item_frequencies(rec, 16)
    res = simulate(OnePhase(16, 3, 4, 4.0), rec, np.random.default_rng(2))
    assert len(res["top_k"]) == 3 and res["n1"] == 20000
    g = GFIM(16, 3, 4, 4.0)
    est = simulate(g, rec, np.random.default_rng(3))
    alt = g.recombine(est, "ivw")
    assert alt["combination"] == "ivw" and alt["f1"] == est["f1"]
    # with eps = 4 and 20k users the clear top item is found by every rule
    for out in (res, est, alt):
        assert out["top_k"][0] == int(np.argmax(f))


def test_hadamard_sizes_constant_and_naive_decoder_oracle():
    from protocols.oracles.hadamard_response import hadamard_entry, hadamard_order

    assert [hadamard_order(d) for d in (1000, 396, 60, 6)] == [1024, 512, 64, 8]
    for eps in (0.5, 1.0, 2.0):
        p = math.exp(eps) / (math.exp(eps) + 1)
        assert (2 * p - 1) * hr_constant(eps) == pytest.approx(1.0)
    rec = small_data(n=3000, d=16, max_size=4)
    g = GFIM(16, 3, 4, 1.0)
    rng = np.random.default_rng(9)
    loc: dict = {}
    b0 = g.encode_round(0, rec, rng, {}, loc)
    pub = g.analyze_round(0, b0, {})
    j, s = b0["phase1"][:, 0], 2 * b0["phase1"][:, 1] - 1
    naive = [4 * hr_constant(1.0) * np.mean(hadamard_entry(j, v) * s) for v in range(16)]
    assert np.allclose(pub["f1"], naive)
    b1 = g.encode_round(1, rec, rng, pub, loc)
    out = g.analyze_round(1, b1, pub)
    j, s = b1["phase2"][:, 0], 2 * b1["phase2"][:, 1] - 1
    naive2 = [6 * hr_constant(1.0) * np.mean(hadamard_entry(j, r) * s) for r in range(6)]
    assert np.allclose(out["f2"], naive2)
    assert out["candidates"] == pub["candidates"] == top_indices(np.array(pub["f1"]), 6).tolist()
