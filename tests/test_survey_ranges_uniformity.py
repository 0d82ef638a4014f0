"""Range counting (tree encoding, matrix-mechanism analyzer) and the uniformity testers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.ranges.matrix_mechanism import gls_answer, range_answers, tree_consistent_leaves
from protocols.ranges.tree import RangeTree, tree_depth, tree_matrix
from protocols.rng import experiment_rng
from protocols.uniformity.sample_complexity import paninski, sample_complexity
from protocols.uniformity.testers import AUT, PUT, balanced_partition, collision_statistic


def test_tree_matrix_and_depth():
    m = tree_matrix(8, 2)
    assert m.shape == (2 + 4 + 8, 8) and np.all(m.sum(axis=0) == 3)
    assert tree_depth(64, 4) == 3 and tree_depth(65, 4) == 4


@pytest.mark.parametrize("b,d", [(2, 16), (4, 16), (3, 9)])
def test_tree_gls_equals_dense_gls(b, d):
    rng = np.random.default_rng(b)
    m = tree_matrix(d, b)
    sizes = [b**lv for lv in range(1, tree_depth(d, b) + 1)]
    var_l = list(rng.uniform(0.5, 3.0, len(sizes)))
    z = rng.normal(size=m.shape[0])
    levels = np.split(z, np.cumsum(sizes)[:-1])
    v = np.concatenate([[var_l[i]] * s for i, s in enumerate(sizes)])
    leaves = tree_consistent_leaves(list(levels), var_l, b)
    assert leaves == pytest.approx(gls_answer(m, v, z, np.eye(d)), abs=1e-10)
    # the known root is a zero-variance row: leaves then sum to it exactly
    assert tree_consistent_leaves(list(levels), var_l, b, root=5.0).sum() == pytest.approx(5.0)


def test_range_tree_unbiased_and_composed():
    d, n = 16, 40_000
    v = (np.arange(n) * 5) % d
    truth = np.bincount(v, minlength=d).astype(float)
    q = np.array([[0, 15], [3, 9], [7, 7], [0, 4]])
    p = RangeTree(d, n, 0.9, 1e-6, branching=4, queries=q, bound="vr")
    errs = []
    for r in range(20):
        est = p.analyze(p.encode(v.reshape(-1, 1), experiment_rng(14, "tree", r)))
        errs.append(np.asarray(est["answers"]) - range_answers(truth, q))
    errs = np.asarray(errs)
    assert errs[:, 0] == pytest.approx(0, abs=1e-6)  # the full range is the known root n
    sd = errs.std(axis=0)[1:]
    assert np.all(np.abs(errs.mean(axis=0)[1:]) < 4.5 * sd / math.sqrt(20) + 1e-9)
    g = p.guarantee(n)
    assert g.eps <= 0.9 + 1e-9 and g.delta <= 1e-6 * (1 + 1e-9)
    assert p.messages_per_user() == 2


def test_uniformity_statistic_and_testers():
    part = balanced_partition(16, 4)
    assert np.all(np.bincount(part) == 4)
    with pytest.raises(ValueError):
        balanced_partition(16, 5)
    assert collision_statistic(np.array([5.0, 5.0]), 10, 0.0) == pytest.approx(-5.0)
    for t in (PUT(16, 20_000, 0.9), AUT(16, 20_000, 0.9, 1e-6)):
        rng = experiment_rng(14, t.name)
        null = t.sample_statistic(np.full(16, 1 / 16), 20_000, rng, 3000)
        assert abs(null.mean()) < 4 * null.std() / math.sqrt(3000)  # T is centred under H0
        uniform = rng.integers(0, 16, 20_000)
        far = rng.choice(16, 20_000, p=paninski(16, 0.3))
        assert not t.analyze(t.encode(uniform, rng))["reject_uniform"]
        assert t.analyze(t.encode(far, rng))["reject_uniform"]
    put = PUT(16, 20_000, 0.9)
    assert put.privacy()["eps_central"] == pytest.approx(0.9)
    assert put.privacy()["delta"] <= 1e-12 * (1 + 1e-9)


def test_sample_complexity_orders():
    non = sample_complexity(None, 16, 0.25, draws=200)
    aut = sample_complexity(lambda n: AUT(16, n, 0.9, 1e-6), 16, 0.25, draws=200)
    assert non["n"] is not None and aut["n"] is not None and aut["n"] > non["n"]
