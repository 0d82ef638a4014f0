"""Seed 001 LS, sampling, join, metrics and the model's claims (spec §7.2)."""

import numpy as np
import pytest

from protocols.txpub.local_solution import join_sites, ls_solve, sample_site, site_theta
from protocols.txpub.metrics import iteration_costs, ratios, top_k, top_k_retention
from protocols.txpub.model import TxData, check_feasible, reference_solve, theta


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    return TxData(rng.random((400, 10)) < rng.uniform(0.05, 0.4, 10), 5)


def test_ls_per_site_at_least_gs_when_theta_s_is_theta(data):
    eps, delta = np.log(1.4), 0.5
    ls = ls_solve(data, eps, delta, "paper")
    gs = reference_solve(data.D, theta(eps, delta))
    assert ls["counts_real"][:5].sum() >= gs[:5].sum() - 1e-6
    assert ls["counts_real"][5:].sum() >= gs[5:].sum() - 1e-6


def test_ls_composed_is_feasible_and_below_gs(data):
    eps, delta = np.log(1.4), 0.5
    assert site_theta(eps, delta, "composed") == pytest.approx(theta(eps, delta) / 2)
    ls = ls_solve(data, eps, delta, "composed")
    gs = reference_solve(data.D, theta(eps, delta))
    assert check_feasible(data.D, ls["counts"], eps, delta).ok  # Theorem 2 composition
    assert ls["counts_real"].sum() <= gs.sum() + 1e-6
    with pytest.raises(ValueError, match="theta_mode"):
        site_theta(eps, delta, "bogus")


def test_sampling_exact_counts_and_join(data):
    rng = np.random.default_rng(0)
    x = ls_solve(data, np.log(2.0), 0.8)["counts"]
    Oa = sample_site(data.site("A"), x[:5], rng)
    Ob = sample_site(data.site("B"), x[5:], rng)
    assert (Oa.sum(0) == x[:5]).all() and (Ob.sum(0) == x[5:]).all()
    assert not (Oa & ~data.site("A")).any()
    perm = rng.permutation(data.n)
    ids, out = join_sites(data.ids, Oa, data.ids[perm], Ob[perm], drop_empty=False)
    assert (ids == data.ids).all() and (out[:, 5:] == Ob).all()
    ids2, O2 = join_sites(data.ids, Oa, data.ids, Ob)
    assert O2.any(axis=1).all() and (np.diff(ids2) > 0).all()
    with pytest.raises(ValueError):
        sample_site(data.site("A"), x[:5] + 1000, rng)
    with pytest.raises(ValueError, match="ids"):
        join_sites(data.ids, Oa, data.ids + 1, Ob)


def test_inclusion_probability_monte_carlo():
    # spec §7.2.2: Pr[T_k in O] = 1 - prod(1 - x_j/c_j)
    rng = np.random.default_rng(1)
    D = rng.random((30, 4)) < 0.5
    x = np.floor(reference_solve(D, theta(np.log(2.0), 0.8)) * 1.0)
    x = np.maximum(x, 1)
    C = D.sum(0)
    k = int(np.argmax(D.sum(1)))
    want = 1 - np.prod((1 - x / C)[D[k]])
    hits = sum(sample_site(D, x, rng)[k].any() for _ in range(4000))
    assert abs(hits / 4000 - want) < 4 * np.sqrt(want * (1 - want) / 4000) + 1e-9


def test_metrics(data):
    x = data.counts // 3
    r = ratios(data, x)
    assert 0 < r["A"] < 0.34 and 0 < r["overall"] < 0.34
    assert top_k(np.array([3, 1, 3, 2]), 2) == {0, 2}
    assert top_k_retention(np.array([4, 3, 2, 1]), np.array([1, 3, 2, 4]), 2) == 0.5
    with pytest.raises(ValueError):
        top_k(np.array([1.0]), 2)
    c = iteration_costs([{"bytes_A": 10, "bytes_B": 5, "messages": 3, "seconds": 1.0}])
    assert c["bytes_median"] == 15 and c["iterations"] == 1
