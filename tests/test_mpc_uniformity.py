"""Statistical checks of the shuffle (slow): the composed permutation is uniform."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from mpc import permute_reshare as pr
from mpc import shamir


@pytest.mark.slow
def test_permute_and_reshare_output_order_is_uniform():
    n, runs = 4, 4800
    x = np.arange(n).reshape(n, 1)
    index = {p: i for i, p in enumerate(itertools.permutations(range(n)))}
    counts = np.zeros(len(index))
    for _ in range(runs):
        out, perm = pr.simulate_permute_reshare(shamir.share(x, 3, 1), 1)
        y = shamir.reconstruct(out[:2], [0, 1])[:, 0]
        np.testing.assert_array_equal(y, x[perm, 0])
        counts[index[tuple(y.tolist())]] += 1
    assert stats.chisquare(counts).pvalue > 1e-4


@pytest.mark.slow
def test_single_coalition_permutation_is_uniform():
    n, runs = 5, 12000
    index = {p: i for i, p in enumerate(itertools.permutations(range(n)))}
    counts = np.zeros(len(index))
    rng = np.random.default_rng(0)
    for _ in range(runs):
        seed = rng.bytes(32)
        counts[index[tuple(pr.permutation_from_seed(seed, n).tolist())]] += 1
    assert stats.chisquare(counts).pvalue > 1e-4
