"""Calm over the shuffle, FT, synthetic data, SGD models and the calm workloads."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import KS, correlated_records
from conftest import DATASETS

from protocols.base import simulate, validate_batches
from protocols.marginals.calm import (
    kway_queries,
    kway_sse,
    marginal_cells,
    marginal_table,
    true_marginals,
)
from protocols.marginals.calm_shuffle import CalmShuffle, published_tables
from protocols.marginals.fourier import FourierMarginals
from protocols.marginals.sgd_models import (
    design_matrix,
    evaluate_models,
    income_bins,
    labels,
    sgd_train,
)
from protocols.marginals.synthetic_data import marginal_fit, synthesize, write_csv


def records(n: int = 20000, seed: int = 0) -> np.ndarray:
    return correlated_records(n, seed)


@pytest.mark.parametrize("mech", ["psrr-ss", "arr-ss", "srr-ms"])
def test_calm_shuffle_end_to_end(mech: str) -> None:
    x = records()
    p = CalmShuffle(KS, len(x), 1.0, 1 / len(x), mech, accounting="tight")
    rng = np.random.default_rng(0)
    batches = p.encode(x, rng)
    assert sum(validate_batches(p, batches).values()) == 0
    est = simulate(p, x, rng)
    tables, sets, ks = published_tables(est)
    assert ks == KS and len(sets) == est["m"] == p.params.m
    assert all(t.min() >= 0 and abs(t.sum() - 1) < 1e-9 for t in tables)
    truth = true_marginals(x, KS, kway_queries(5, 3))
    assert kway_sse(tables, sets, truth, KS) < 0.01


def test_calm_shuffle_cells_and_feasibility() -> None:
    x = records(5000)
    p = CalmShuffle(
        KS, len(x), 1.0, 1 / len(x), "psrr-ss", sets=[(0, 1), (2, 3, 4)], accounting="tight"
    )
    cells = p.to_cells(x)
    np.testing.assert_array_equal(cells[:, 1], marginal_cells(x, KS, (2, 3, 4)))
    assert p.inner.domain_sizes == (6, 24)
    # the paper's closed-form bound has no local epsilon for 5,000 users at eps_c = 0.1
    with pytest.raises(ValueError, match="no feasible"):
        CalmShuffle(KS, len(x), 0.1, 1 / len(x), "srr-ms")
    with pytest.raises(ValueError, match="mechanism"):
        CalmShuffle(KS, len(x), 1.0, 1e-4, "oue")


def test_psrr_beats_ldp_calm_at_same_eps() -> None:
    from protocols.marginals.calm import CalmLDP

    x = records(60000)
    truth = true_marginals(x, KS, kway_queries(5, 3))
    ldp = CalmLDP(KS, len(x), 1.0)
    sh = CalmShuffle(KS, len(x), 1.0, 1 / len(x), "psrr-ss")
    e_ldp = kway_sse(ldp.publish(x, np.random.default_rng(1)), ldp.sets, truth, KS)
    t, s, _ = published_tables(simulate(sh, x, np.random.default_rng(1)))
    assert kway_sse(t, s, truth, KS) * 5 < e_ldp


def test_ft_exact_coefficients_give_exact_marginals() -> None:
    x = records(3000)
    ft = FourierMarginals(KS, 1.0, 3)
    theta = np.array([ft.signs(x, np.full(len(x), u)).mean() for u in range(ft.T)])
    for q in kway_queries(5, 3) + kway_queries(5, 1):
        np.testing.assert_allclose(ft.answer(theta, q), marginal_table(x, KS, q), atol=1e-12)


def test_ft_reports_and_unbiased_coefficients() -> None:
    x = records(200000)
    ft = FourierMarginals((2, 2, 2), 1.0, 2)
    xb = x[:, [1, 3, 1]] % 2
    rep = ft.encode(xb, np.random.default_rng(3))
    assert rep.shape == (len(xb), 2) and set(np.unique(rep[:, 1])) <= {0, 1}
    est = ft.estimate_coefficients(rep)
    exact = np.array([ft.signs(xb, np.full(len(xb), u)).mean() for u in range(ft.T)])
    sd = ft.T / len(xb) * 4.7  # c^2 * T / n at eps = 1 (variance), generous
    assert np.max(np.abs(est - exact)) < 6 * np.sqrt(sd)
    with pytest.raises(ValueError):
        ft.estimate_coefficients(np.array([[ft.T, 1]]))


def test_synthetic_data_reproduces_marginals(tmp_path) -> None:  # noqa: ANN001
    x = records(30000)
    sets = [(0, 1, 2), (2, 3, 4), (0, 4)]
    tabs = [marginal_table(x, KS, s) for s in sets]
    rng = np.random.default_rng(4)
    for method in ("joint", "sequential"):
        syn = synthesize(tabs, sets, KS, 30000, rng, method)
        assert syn.shape == (30000, 5) and (syn < np.array(KS)).all()
        assert marginal_fit(syn, tabs, sets, KS) < 2e-3
    with pytest.raises(ValueError, match="in no published marginal"):
        synthesize(tabs[:1], sets[:1], KS, 10, rng)
    path = write_csv(tmp_path / "s.csv", syn[:5], [f"a{i}" for i in range(5)])
    assert path.read_text().splitlines()[0] == "a0,a1,a2,a3,a4"


def test_sgd_models_learn_a_simple_rule() -> None:
    rng = np.random.default_rng(5)
    n = 20000
    f = np.stack([rng.integers(0, 3, n), rng.integers(0, 2, n)], axis=1)
    income = np.clip(3 * f[:, 0] + 2 * f[:, 1] + rng.integers(0, 2, n), 0, 9)
    recs = np.column_stack([f, income])
    X = design_matrix(recs, (3, 2))
    assert X.shape == (n, 4) and np.max(np.sum(X**2, axis=1)) <= 1 + 1e-12
    y, c = labels(recs, float(income.mean()))
    w = sgd_train("logistic", X, c, rng, epochs=2)
    assert np.mean(np.sign(X @ w) != c) < 0.1
    m = evaluate_models(recs[:16000], recs[16000:], (3, 2), float(income.mean()), rng, epochs=10)
    assert m["svm_misclassification"] < 0.1 and m["linear_mse"] < 1.5
    np.testing.assert_array_equal(income_bins([0, 5.2, 51.9, 52]), [0, 1, 9, 9])
    with pytest.raises(ValueError):
        sgd_train("tree", X, c, rng)


@pytest.mark.skipif(not (DATASETS / "fimi").exists(), reason="Kosarak not available")
def test_calm_workload_report_and_csv(tmp_path) -> None:  # noqa: ANN001
    from protocols.workloads import get_workload

    wl = get_workload("calm-psrr-ss", {"dataset": "kosarak", "epsilon": "1.0"})
    est = simulate(wl.protocol, wl.records, np.random.default_rng(0))
    rep = wl.report(est)
    assert rep["3way_queries"] == 56 and rep["3way_sse_mean"] < 1e-3
    files = wl.artifacts(est, tmp_path)
    assert files == ["synthetic.csv"]
    lines = (tmp_path / "synthetic.csv").read_text().splitlines()
    assert len(lines) == wl.n_users + 1
    with pytest.raises(ValueError, match="feasible"):
        get_workload("calm-srr-ms", {"dataset": "kosarak", "epsilon": "0.2", "accounting": "paper"})
