"""SRR-MS, ARR-SS, PSRR-SS: unbiasedness, exact variances, wire format, errors."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.base import trusted_shuffle, validate_batches
from protocols.datasets.categorical import load_adult, true_marginals
from protocols.multidim.arr_ss import ARRSS, arr_ss_variance
from protocols.multidim.common import sse
from protocols.multidim.psrr_ss import PSRRSS, psrr_ss_variance
from protocols.multidim.srr_ms import SRRMS, srr_ms_variance

KS = (2, 3, 5)
N = 3000  # divisible by d = 3
EPS_C = 1.0
DELTA = 1 / N


def _records(n: int = N, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    probs = [np.array([0.7, 0.3]), np.array([0.5, 0.3, 0.2]), np.array([0.4, 0.25, 0.2, 0.1, 0.05])]
    return np.stack([rng.choice(len(p), size=n, p=p) for p in probs], axis=1).astype(np.int64)


def _runs(protocol, records, reps, seed=0, estimator=None):
    rng = np.random.default_rng(seed)
    est = estimator or protocol.estimator
    out = []
    for _ in range(reps):
        res = protocol.analyze(trusted_shuffle(protocol.encode(records, rng), rng))
        out.append(np.concatenate(res["estimates"][est]))
    return np.asarray(out)


CASES = [
    (SRRMS, "paper"),
    (SRRMS, "observed"),
    (ARRSS, "paper"),
    (PSRRSS, "paper"),
    (PSRRSS, "observed"),
]


@pytest.mark.parametrize("cls,estimator", CASES)
def test_unbiased_and_exact_variance(cls, estimator):
    x = _records()
    truth = true_marginals(x, KS)
    proto = cls(KS, N, EPS_C, DELTA, estimator=estimator)
    reps = 2000
    est = _runs(proto, x, reps)
    f = np.concatenate(truth)
    var = np.concatenate(
        proto.variance(truth) if cls is not PSRRSS else proto.variance(truth, estimator)
    )
    # unbiased: mean within 5 standard errors per cell
    assert np.all(np.abs(est.mean(axis=0) - f) < 5 * np.sqrt(var / reps))
    emp = est.var(axis=0, ddof=1)
    np.testing.assert_allclose(emp, var, rtol=0.2)
    assert emp.sum() == pytest.approx(var.sum(), rel=0.08)


def test_srr_ms_conditional_on_partition():
    """Theorem 3 in full holds given the partition (with each group's own frequencies)."""
    x = _records()
    proto = SRRMS(KS, N, EPS_C, DELTA)
    rng = np.random.default_rng(3)
    groups = proto.assign_groups(np.arange(N), 3)
    assert np.bincount(groups).tolist() == [N // 3] * 3
    reps = 2000
    est = []
    for _ in range(reps):
        res = proto.analyze(trusted_shuffle(proto.perturb(x, groups, rng), rng))
        est.append(np.concatenate(res["estimates"]["paper"]))
    est = np.asarray(est)
    fg = [np.bincount(x[groups == j, j], minlength=k) / (N // 3) for j, k in enumerate(KS)]
    var = np.concatenate(
        [
            srr_ms_variance(f, k, e, N, 3, partition=False)
            for f, k, e in zip(fg, KS, proto.eps_local)
        ]
    )
    assert np.all(np.abs(est.mean(axis=0) - np.concatenate(fg)) < 5 * np.sqrt(var / reps))
    np.testing.assert_allclose(est.var(axis=0, ddof=1), var, rtol=0.2)


def test_variance_formulas_match_paper_forms():
    """Full Theorems 6 and 9 reduce to the paper's Eqs. (4), (5) when f = 0."""
    n, d, k_max, K = 45_222, 15, 41, 200
    x = 1.0**2 * (n - 1) / (14 * np.log(2 * n))
    eps = np.log(x - k_max + 1)
    assert psrr_ss_variance(np.zeros(1), k_max, eps, n, d)[0] == pytest.approx(
        (d * x - 1) / (n * (x - k_max) ** 2)
    )
    eps_r = np.log(x - K + 1)
    assert arr_ss_variance(np.zeros(1), K, eps_r, n, d)[0] == pytest.approx(
        d**2 * (x - 1) / (n * (x - K) ** 2)
    )


def test_locate_relocate_round_trip():
    proto = ARRSS((2, 3, 5, 7), 1000, 1.0, 1e-3)
    theta = np.repeat(np.arange(4), 7)
    value = np.tile(np.arange(7), 4)
    ok = value < np.asarray(proto.domain_sizes)[theta]
    cell = proto.locate(theta[ok], value[ok])
    assert sorted(cell.tolist()) == list(range(proto.K))
    t, v = proto.relocate(cell)
    np.testing.assert_array_equal(t, theta[ok])
    np.testing.assert_array_equal(v, value[ok])


@pytest.mark.parametrize("cls", [SRRMS, ARRSS, PSRRSS])
def test_wire_format_and_permutation_invariance(cls):
    x = _records()
    proto = cls(KS, N, EPS_C, DELTA)
    rng = np.random.default_rng(5)
    batches = proto.encode(x, rng)
    specs = {s.name: s for s in proto.batch_specs()}
    assert set(batches) == set(specs)
    assert sum(validate_batches(proto, batches).values()) == 0
    assert sum(len(b) for b in batches.values()) == N  # one message per user
    a = proto.analyze(batches)
    b = proto.analyze(trusted_shuffle(batches, rng))
    assert a == b
    assert a["reports"] + a["discarded"] == N
    priv = proto.privacy()
    for key in ("eps_c", "delta", "eps_l", "bound", "accounting"):
        assert key in priv


def test_psrr_dummies_and_malformed_discarded():
    proto = PSRRSS(KS, N, EPS_C, DELTA)
    msgs = np.array([[0, 0], [0, 1], [0, 4], [1, 4], [2, 4], [3, 0], [0, -1]])
    res = proto.analyze({"reports": msgs})
    # (0,4) and (1,4) are dummies (k_0 = 2, k_1 = 3); (3,0) and (0,-1) malformed
    assert res["reports"] == 3 and res["discarded"] == 4
    assert [len(m) for m in res["marginals"]] == list(KS)


def test_arr_rejects_out_of_domain_value():
    proto = ARRSS(KS, N, EPS_C, DELTA)
    res = proto.analyze({"reports": np.array([[0, 0], [0, 2], [2, 4]])})
    assert res["reports"] == 2 and res["discarded"] == 1


def test_bad_input():
    proto = PSRRSS(KS, N, EPS_C, DELTA)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        proto.encode(np.zeros((5, 2), dtype=np.int64), rng)
    bad = _records(10)
    bad[4, 2] = 5
    with pytest.raises(ValueError, match="record 4 attribute 2"):
        proto.encode(bad, rng)
    with pytest.raises(ValueError, match="estimator"):
        PSRRSS(KS, N, EPS_C, DELTA, estimator="magic")
    with pytest.raises(ValueError, match="accounting"):
        SRRMS(KS, N, EPS_C, DELTA, accounting="loose")
    with pytest.raises(ValueError, match="missing batch"):
        proto.analyze({})
    infeasible = ARRSS(KS, N, 0.2, DELTA)
    assert not infeasible.feasible
    with pytest.raises(ValueError, match="no feasible local epsilon"):
        infeasible.encode(_records(10), rng)


def test_srr_ms_infeasible_attributes_are_silent():
    # at eps_c = 0.5 only k = 2 is feasible for groups of 1000 (X = 2.05)
    proto = SRRMS(KS, N, 0.5, DELTA)
    assert proto.feasible_attributes == [0]
    res = proto.analyze(proto.encode(_records(), np.random.default_rng(1)))
    assert res["marginals"][1] is None and res["marginals"][2] is None
    assert res["reports"] == N // 3


def test_adult_psrr_sse_matches_exact_variance():
    """PSRR-SS on Adult at eps_c = 1.0: mean SSE over 20 runs within 20% of the exact sum."""
    ds = load_adult()
    truth = ds.marginals()
    proto = PSRRSS(ds.domain_sizes, ds.n, 1.0, 1 / ds.n)
    rng = np.random.default_rng(2026)
    for estimator in ("paper", "observed"):
        exact = sum(v.sum() for v in proto.variance(truth, estimator))
        runs = [
            sse(
                proto.analyze(trusted_shuffle(proto.encode(ds.records, rng), rng))["estimates"][
                    estimator
                ],
                truth,
            )[1]
            for _ in range(20)
        ]
        assert np.mean(runs) == pytest.approx(exact, rel=0.2)


def test_tight_accounting_gives_larger_local_epsilon():
    pytest.importorskip("protocols.accountant")
    ds = load_adult()
    paper = PSRRSS(ds.domain_sizes, ds.n, 0.5, 1 / ds.n)
    tight = PSRRSS(ds.domain_sizes, ds.n, 0.5, 1 / ds.n, accounting="tight")
    assert tight.eps_local > paper.eps_local
    truth = ds.marginals()
    assert sum(v.sum() for v in tight.variance(truth)) < sum(v.sum() for v in paper.variance(truth))
    assert tight.privacy()["bound"].startswith("accountant")


def test_tight_bound_fmt21_is_generic_and_weaker():
    pytest.importorskip("protocols.accountant")
    ds = load_adult()
    vr = PSRRSS(ds.domain_sizes, ds.n, 0.5, 1 / ds.n, accounting="tight")
    fmt = PSRRSS(ds.domain_sizes, ds.n, 0.5, 1 / ds.n, accounting="tight", tight_bound="fmt21")
    paper = PSRRSS(ds.domain_sizes, ds.n, 0.5, 1 / ds.n)
    assert paper.eps_local < fmt.eps_local < vr.eps_local
    assert fmt.privacy()["bound"] == "accountant:fmt21/generic"
    with pytest.raises(ValueError, match="tight_bound"):
        PSRRSS(ds.domain_sizes, ds.n, 0.5, 1 / ds.n, tight_bound="balle")
