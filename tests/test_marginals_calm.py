"""Calm: tables, covering designs, (w, m) choice, consistency, max-ent answers, LDP collection."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _helpers import KS, correlated_records

from protocols.marginals.calm import (
    CalmLDP,
    answer_marginal,
    choose_parameters,
    greedy_cover,
    kway_queries,
    kway_sse,
    make_consistent,
    marginal_cells,
    marginal_table,
    maxent_table,
    postprocess,
    project,
    true_marginals,
)


def records(n: int = 4000, seed: int = 0) -> np.ndarray:
    return correlated_records(n, seed)


def test_cells_tables_and_projection_agree() -> None:
    x = records()
    cells = marginal_cells(x, KS, (0, 2, 4))
    assert cells.min() >= 0 and cells.max() < 3 * 4 * 3
    t = marginal_table(x, KS, (0, 2, 4))
    assert t.shape == (3, 4, 3) and abs(t.sum() - 1) < 1e-12
    np.testing.assert_allclose(project(t, (0, 2, 4), (0, 4)), marginal_table(x, KS, (0, 4)))
    np.testing.assert_allclose(project(t, (0, 2, 4), (2,)), marginal_table(x, KS, (2,)))
    with pytest.raises(ValueError, match="not a subset"):
        project(t, (0, 2, 4), (1,))


def test_greedy_cover_covers_every_t_subset() -> None:
    for w, t in ((2, 2), (3, 2), (3, 3), (4, 2)):
        sets = greedy_cover(KS, w, t)
        assert sets is not None and all(len(s) == w for s in sets)
        for u in itertools.combinations(range(len(KS)), t):
            assert any(set(u) <= set(s) for s in sets)
    assert greedy_cover(KS, 3, 2, max_cells=4) is None  # no 3-way marginal fits in 4 cells
    with pytest.raises(ValueError):
        greedy_cover(KS, 2, 3)


def test_choice_trades_noise_against_reconstruction() -> None:
    # no noise: only covering every 3-set avoids reconstruction error
    exact = choose_parameters(KS, lambda cells: [0.0] * len(cells), 3)
    assert exact.t == 3 and exact.reconstruction_error == 0
    # heavy noise growing with the number of marginals: fewer, smaller marginals
    noisy = choose_parameters(KS, lambda cells: [len(cells) * 1e-2] * len(cells), 3)
    assert (noisy.w, noisy.t) == (2, 2) and noisy.reconstruction_error > 0
    with pytest.raises(ValueError, match="no feasible"):
        choose_parameters(KS, lambda cells: None, 3)


def test_consistency_makes_shared_projections_equal() -> None:
    rng = np.random.default_rng(1)
    sets = [(0, 1), (1, 2), (0, 2), (2, 3)]
    x = records()
    noisy = [marginal_table(x, KS, s) + rng.normal(0, 0.01, [KS[a] for a in s]) for s in sets]
    out = make_consistent(noisy, sets)
    for (i, s), (j, u) in itertools.combinations(enumerate(sets), 2):
        a = tuple(sorted(set(s) & set(u)))
        np.testing.assert_allclose(project(out[i], s, a), project(out[j], u, a), atol=1e-12)
    exact = [marginal_table(x, KS, s) for s in sets]
    for o, e in zip(make_consistent(exact, sets), exact, strict=True):
        np.testing.assert_allclose(o, e, atol=1e-12)
    pp = postprocess(noisy, sets)
    assert all(t.min() >= 0 and abs(t.sum() - 1) < 1e-9 for t in pp)


def test_maxent_matches_constraints_and_independence() -> None:
    rng = np.random.default_rng(2)
    pa, pb, pc = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(2)), rng.dirichlet(np.ones(4))
    cons = [((0, 1), np.outer(pa, pb)), ((1, 2), np.outer(pb, pc))]
    t = maxent_table(cons, (0, 1, 2), KS, iterations=100)
    np.testing.assert_allclose(
        t, pa[:, None, None] * pb[None, :, None] * pc[None, None, :], atol=1e-9
    )
    # a query inside a published marginal is its projection
    x = records()
    tab = marginal_table(x, KS, (0, 1, 2, 3))
    np.testing.assert_allclose(
        answer_marginal([tab], [(0, 1, 2, 3)], (1, 3), KS), marginal_table(x, KS, (1, 3))
    )


def test_reconstruction_from_exact_pairs_is_close() -> None:
    x = records(20000)
    sets = greedy_cover(KS, 2, 2)
    tabs = [marginal_table(x, KS, s) for s in sets]
    truth = true_marginals(x, KS, kway_queries(len(KS), 3))
    exact3 = [marginal_table(x, KS, s) for s in kway_queries(len(KS), 3)]
    assert kway_sse(exact3, kway_queries(len(KS), 3), truth, KS) < 1e-20
    assert kway_sse(tabs, sets, truth, KS) < 0.02


def test_calm_ldp_error_falls_with_eps_and_is_near_unbiased() -> None:
    x = records(30000)
    truth = true_marginals(x, KS, kway_queries(len(KS), 3))
    errs = []
    for eps in (0.5, 4.0):
        calm = CalmLDP(KS, len(x), eps)
        assert calm.params.m == len(calm.sets) >= 1
        errs.append(
            np.mean(
                [
                    kway_sse(calm.publish(x, np.random.default_rng(r)), calm.sets, truth, KS)
                    for r in range(3)
                ]
            )
        )
    assert errs[1] < errs[0]
    # raw estimates averaged over repetitions approach the truth (unbiased oracles)
    calm = CalmLDP(KS, len(x), 2.0, sets=[(0, 1), (2, 3), (1, 4)])
    raws = [calm.collect(x, np.random.default_rng(10 + r)) for r in range(30)]
    for i, s in enumerate(calm.sets):
        mean = np.mean([r[i] for r in raws], axis=0)
        np.testing.assert_allclose(mean, marginal_table(x, KS, s).ravel(), atol=0.01)


def test_calm_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="domain"):
        CalmLDP((1, 2), 100, 1.0)
    with pytest.raises(ValueError, match="eps"):
        CalmLDP(KS, 100, 0.0)
    with pytest.raises(ValueError, match="attribute set"):
        CalmLDP(KS, 100, 1.0, sets=[(0, 7)])
