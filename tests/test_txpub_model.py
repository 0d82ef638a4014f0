"""Seed 001 model: theta, reference solver, feasibility, bounds, data loaders."""

import numpy as np
import pytest
from scipy import optimize

from protocols.txpub.data import generate, load_fimi
from protocols.txpub.model import (
    check_feasible,
    composed_site_params,
    reduce_rows,
    reference_solve,
    theta,
    utility_bound,
    x_from_y,
)


def test_theta_table():
    # spec §5 table: (e^eps, delta) -> theta
    cases = {
        (1.01, 0.1): -0.00995,
        (1.1, 0.8): -0.0953,
        (1.4, 0.1): -0.1054,
        (1.4, 0.2): -0.2231,
        (1.4, 0.5): -0.3365,
        (1.7, 0.6): -0.5306,
        (2.0, 0.8): -0.6931,
    }
    for (ee, d), want in cases.items():
        assert theta(np.log(ee), d) == pytest.approx(want, abs=6e-5)
    with pytest.raises(ValueError, match="delta"):
        theta(0.1, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        theta(-1.0, 0.5)


def test_composed_params_give_half_theta():
    e, d = composed_site_params(0.336, 0.5)
    assert np.log1p(-d) == pytest.approx(0.5 * np.log(0.5))
    assert e == pytest.approx(0.168)


def test_reduce_rows_removes_duplicates_and_subsets():
    D = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 0, 0]], bool)
    R = reduce_rows(D)
    assert sorted(map(tuple, R.astype(int))) == [(0, 0, 1), (1, 1, 0)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reference_matches_second_solver(seed):
    rng = np.random.default_rng(seed)
    D = rng.random((150, 7)) < rng.uniform(0.05, 0.5, 7)
    th = theta(np.log(1.4), 0.5)
    x = reference_solve(D, th)
    C = D.sum(0).astype(float)
    R = reduce_rows(D).astype(float)
    res = optimize.minimize(
        lambda y: -np.sum(C * -np.expm1(-y)),
        np.full(7, 0.01),
        jac=lambda y: -C * np.exp(-y),
        method="trust-constr",
        constraints=[optimize.LinearConstraint(R, -np.inf, -th)],
        bounds=optimize.Bounds(0, np.inf),
        options={"gtol": 1e-13, "xtol": 1e-14, "maxiter": 5000},
    )
    x2 = x_from_y(res.x, C)
    assert np.abs(x - x2).max() <= 1e-6 * x.max()
    f = check_feasible(D, x, np.log(1.4), 0.5)
    assert f.ok and f.worst_sum == pytest.approx(th, abs=1e-9)


def test_feasibility_checker_flags_violation_and_floor_keeps_feasible():
    rng = np.random.default_rng(5)
    D = rng.random((100, 5)) < 0.4
    eps, delta = np.log(1.4), 0.5
    x = reference_solve(D, theta(eps, delta))
    assert check_feasible(D, np.floor(x), eps, delta).ok
    assert not check_feasible(D, x * 1.5 + 1, eps, delta).ok
    with pytest.raises(ValueError, match="shape"):
        check_feasible(D, x[:3], eps, delta)


def test_ratio_bound_holds():
    d = generate(n=3000, m=10, avg_a=2.0, avg_b=1.5, seed=3)
    th = theta(np.log(2.0), 0.8)
    x = reference_solve(d.D, th)
    C = d.counts
    for s, sl in (("A", slice(0, d.m1)), ("B", slice(d.m1, d.m))):
        assert x[sl].sum() / C[sl].sum() <= utility_bound(th, d.avg_len(s)) + 1e-9
    assert x.sum() / C.sum() <= utility_bound(th, d.avg_len()) + 1e-9


def test_generator_statistics():
    d = generate(seed=1)
    assert (d.n, d.m, d.m1) == (20_000, 50, 25)
    assert d.avg_len("A") == pytest.approx(5.66, rel=0.02)
    assert d.avg_len("B") == pytest.approx(4.13, rel=0.02)


def test_fimi_loader():
    d = load_fimi(n=2000, m=20, seed=0)
    assert d.D.shape == (2000, 20) and d.m1 == 10
    c = d.counts
    assert (np.diff(c) <= 0).all()  # most frequent first
    assert d.avg_len("A") > d.avg_len("B")
    with pytest.raises(ValueError, match="n="):
        load_fimi(n=0)
