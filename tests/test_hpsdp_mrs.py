"""MRS (Algorithm 3) as printed: what the enumerator does and does not produce (spec 7.3)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from protocols.hp_sdp.mrs import mrs_enumerate, mrs_pick, mrs_shuffle


@pytest.mark.parametrize("n", range(2, 9))
def test_pseudocode_visits_all_but_the_initial_order(n: int) -> None:
    visits = mrs_enumerate(n)
    assert len(visits) == len(set(visits)) == math.factorial(n) - 1
    assert tuple(range(n)) not in set(visits)
    full = mrs_enumerate(n, include_initial=True)
    assert set(full) == set(itertools.permutations(range(n)))


@pytest.mark.parametrize("n", range(4, 8))
def test_prose_parity_does_not_cover_sn(n: int) -> None:
    visits = mrs_enumerate(n, parity="prose")
    assert len(visits) == math.factorial(n) - 1
    assert len(set(visits)) < math.factorial(n) - 1  # repeats: S_n is not enumerated


def test_enumeration_is_deterministic_not_random() -> None:
    assert mrs_enumerate(5) == mrs_enumerate(5)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="parity"):
        mrs_enumerate(4, parity="odd")
    with pytest.raises(ValueError, match="n must"):
        mrs_enumerate(12)


@pytest.mark.parametrize("n", [4, 5])
def test_uniform_pick_and_fisher_yates_are_uniform(n: int) -> None:
    rng = np.random.default_rng(n)
    perms = {p: i for i, p in enumerate(itertools.permutations(range(n)))}
    trials = 200 * len(perms)
    fy = np.zeros(len(perms))
    base = np.arange(n)
    for _ in range(trials):
        fy[perms[tuple(mrs_shuffle(base, rng).tolist())]] += 1
    assert stats.chisquare(fy).pvalue > 1e-3
    lit = np.zeros(len(perms))
    for _ in range(trials):
        lit[perms[mrs_pick(n, rng)]] += 1
    assert stats.chisquare(lit).pvalue > 1e-3
    # without the initial order the literal pick never returns the identity
    assert all(mrs_pick(n, rng, include_initial=False) != tuple(range(n)) for _ in range(200))
