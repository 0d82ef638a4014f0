"""Privacy of the GFIM encoder: exact enumeration, black-box audit, shuffle accounting."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from protocols.accountant import amplify
from protocols.accountant.variation_ratio import vr_parameters
from protocols.base import simulate
from protocols.gfim.ldpminer import LDPMiner
from protocols.gfim.protocol import GFIM
from protocols.gfim.setvalued_data import from_lists
from protocols.gfim.shuffle import gfim_shuffle, ldpminer_shuffle
from protocols.oracles.hadamard_response import hadamard_entry
from protocols.oracles.privacy_audit import audit_randomizer, max_log_ratio
from protocols.rng import experiment_rng

EPS = 1.0


def exact_output_law(items: tuple[int, ...], m: int, ell: int, eps: float) -> np.ndarray:
    """Pr[(j, bit)] of sampling S-Hist for a set (truncation: each item w.p. 1/|S|)."""
    p = math.exp(eps) / (math.exp(eps) + 1)
    j = np.arange(m)
    a = np.zeros(m)
    for x in items:
        a += hadamard_entry(j, x)
    a /= max(len(items), ell)
    one = 0.5 + (p - 0.5) * a
    return np.concatenate([(1 - one) / m, one / m])


@pytest.mark.parametrize("ell", [1, 2, 3])
def test_exact_enumeration_ratio_and_total_variation(ell):
    d, m = 8, 8
    sets = [s for r in range(0, 5) for s in itertools.combinations(range(d), r)]  # incl. truncation
    laws = np.array([exact_output_law(s, m, ell, EPS) for s in sets])
    beta = vr_parameters(EPS, "hadamard").beta
    worst_ratio, worst_tv = 0.0, 0.0
    for i in range(len(sets)):
        ratios = np.abs(np.log(laws[i]) - np.log(laws)).max(axis=1)
        tv = 0.5 * np.abs(laws[i] - laws).sum(axis=1)
        worst_ratio, worst_tv = max(worst_ratio, ratios.max()), max(worst_tv, tv.max())
    assert worst_ratio <= EPS + 1e-12
    assert worst_tv <= beta + 1e-12  # the single-bit Hadamard parameters hold for padded sets
    if ell == 1:
        assert worst_ratio == pytest.approx(EPS)  # tight for single items


def _encoder_sampler(protocol_round: int, sets: list[list[int]], ell: int):
    """Runs the protocol's own encoder on many copies of one of two sets; atom = (j, bit)."""

    def sample(which: int, count: int, rng: np.random.Generator) -> np.ndarray:
        if protocol_round == 0:
            # GFIM's own encoder: 2 * count users, half of them (group 1) report in round 0
            rec = from_lists([sets[which]] * (2 * count), width=max(ell, len(sets[which])))
            b = GFIM(16, 2, ell, EPS).encode_round(0, rec, rng, {}, {})["phase1"]
        else:
            rec = from_lists([sets[which]] * count, width=max(ell, len(sets[which])))
            p = LDPMiner(16, 2, ell, 2 * EPS, k_max=8)  # all users report in round 1
            loc = {"group1": np.ones(count, dtype=bool)}
            pub = {"candidates": [0, 1, 2, 3, 4, 5, 6, 7]}
            b = p.encode_round(1, rec, rng, pub, loc)["phase2"]
        return 2 * b[:, 0] + b[:, 1]

    return sample


def _audit_encoder(rnd: int, sets: list[list[int]], ell: int, outputs: int):  # noqa: ANN202
    """The black-box audit (400,000 samples) of round ``rnd``'s encoder on the two sets."""
    sampler = _encoder_sampler(rnd, sets, ell)
    rng = experiment_rng(7, "gfim-audit", rnd)
    return audit_randomizer(sampler, 0, 1, outputs, EPS, n_samples=400_000, rng=rng)


def test_black_box_audit_of_the_encoder_round0():
    # row 1 of H: +1 on even items, -1 on odd ones; these two sets attain the ratio e^eps there
    sets = [[0, 2, 4], [1, 3, 5]]
    res = _audit_encoder(0, sets, 3, 32)
    assert res.passed, res
    assert res.eps_lower > 0.75 * EPS  # the audit sees most of the claimed loss
    law0 = exact_output_law((0, 2, 4), 16, 3, EPS)
    law1 = exact_output_law((1, 3, 5), 16, 3, EPS)
    assert max_log_ratio(law0, law1) == pytest.approx(EPS)


def test_black_box_audit_of_the_encoder_round1():
    # phase 2 pads to k_max = 8 over candidates 0..7 (columns 0..7): a set of 4 even candidates
    # against 4 odd ones; padding to k_max keeps the loss below eps (exact value computed)
    sets = [[0, 2, 4, 6], [1, 3, 5, 7]]
    exact = max_log_ratio(
        exact_output_law((0, 2, 4, 6), 8, 8, EPS), exact_output_law((1, 3, 5, 7), 8, 8, EPS)
    )
    assert exact < EPS
    res = _audit_encoder(1, sets, 4, 16)
    assert res.passed and res.eps_lower <= exact + 1e-9, res
    assert res.eps_lower > 0.75 * exact


def test_broken_encoder_is_caught():
    # a bug that forgets the 1/ell sampling factor (sends a majority bit of the set) leaks more
    def sample(which, count, rng):
        s = [[0, 2, 4], [1, 3, 5]][which]
        j = rng.integers(0, 16, count)
        a = sum(hadamard_entry(j, x) for x in s)
        p = math.exp(2 * EPS) / (math.exp(2 * EPS) + 1)
        bit = np.where(rng.random(count) < p, a > 0, a < 0)
        return 2 * j + bit

    res = audit_randomizer(
        sample, 0, 1, 32, EPS, n_samples=400_000, rng=experiment_rng(7, "gfim-audit", "broken")
    )
    assert not res.passed


def test_shuffle_variant_accounting():
    n, delta = 200_000, 1e-6
    g = gfim_shuffle(1000, 10, 50, 1.0, n, delta)
    pr = g.privacy()
    assert g.eps1 > 1.0 and pr["eps_local"] == g.eps1
    amp = amplify(g.eps1, pr["round"]["n_shuffled"], delta, bound="vr", mechanism="hadamard")
    assert amp.eps_central <= 1.0 + 1e-9 and pr["round"]["n_shuffled"] <= n // 2
    lm = ldpminer_shuffle(1000, 10, 50, 1.0, n, delta)
    amp2 = amplify(lm.eps1, n, delta / 2, bound="vr", mechanism="hadamard")
    assert amp2.eps_central <= 0.5 + 1e-9 and lm.eps1 == lm.eps2
    with pytest.raises(ValueError, match=">= 2 users"):
        gfim_shuffle(1000, 10, 50, 1.0, 3, delta)


def test_shuffle_variant_runs_and_checks_report_counts():
    rng = np.random.default_rng(0)
    rec = from_lists([list(rng.choice(32, 3, replace=False)) for _ in range(4000)])
    g = gfim_shuffle(32, 2, 3, 1.0, 4000, 1e-5)
    ledger = []
    out = simulate(g, rec, np.random.default_rng(1), populations=3, ledger=ledger)
    assert out["amplification_holds"] and out["reports_accounted"] == g.min_reports == 2000
    assert out["n1"] == out["n2"] == 2000  # exact halves whatever the populations
    assert [r.group for r in ledger] == ["G1", "G2"] and all(r.holds for r in ledger)
    assert isinstance(g, GFIM) and g.name == "gfim-shuffle"
