"""Distinct elements (protocols/distinct): parameters, the exact privacy of the real shuffled
messages at small n, unbiasedness with error Theta(sqrt(k)), releases, the workload."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from conftest import sdp_run
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import comb

from protocols.base import simulate, trusted_shuffle
from protocols.distinct.parity import (
    RobustDistinct,
    parity_parameters,
    parity_words,
    xor_parities,
)
from protocols.distinct.workload import distinct_column
from protocols.params import EPSILON_DEFAULT
from protocols.privacy.ledger import PrivacyRefusal, gate
from protocols.rng import experiment_rng
from protocols.workloads import get_workload


def test_parameters_follow_the_stated_bias_and_validate():
    p = parity_parameters(10_000, 100, 0.9, gamma=0.5)
    assert p.min_users == 5000 and (1 - 2 * p.p) ** 5000 == pytest.approx(math.tanh(0.45))
    assert p.blocks == 4 and p.block_bits().tolist() == [30, 30, 30, 10]
    for bad, where in [
        (dict(n=2, k=10, epsilon=1.0), "users"),
        (dict(n=100, k=1, epsilon=1.0), "domain"),
        (dict(n=100, k=10, epsilon=0.0), "epsilon"),
        (dict(n=100, k=10, epsilon=1.0, word_bits=31), "word_bits"),
        (dict(n=100, k=10, epsilon=1.0, gamma=0.01), "honest"),
    ]:
        with pytest.raises(ValueError, match=where):
            parity_parameters(**bad)


def test_encoder_bits_have_the_stated_law():
    params = dataclasses.replace(parity_parameters(1000, 40, 1.0, word_bits=8), p=0.1)
    x = np.arange(20_000) % 40
    w = parity_words(x, params, np.random.default_rng(3))
    bits = (w[:, :, None] >> np.arange(8)) & 1
    bits = bits.reshape(w.shape[0], -1)[:, :40]
    held = bits[np.arange(x.size), x]
    assert abs(held.mean() - 0.5) < 0.015
    mask = np.ones_like(bits, dtype=bool)
    mask[np.arange(x.size), x] = False
    assert abs(bits[mask].mean() - 0.1) < 0.003


def _count_law(s: int, held: bool, p: float) -> np.ndarray:
    """Law of the number of 1-shares among one user's s XOR shares of a bit (Z_2)."""
    c = np.arange(s + 1)
    split = comb(s, c) / 2.0 ** (s - 1)
    if held:
        return split / 2
    return np.where(c % 2 == 0, (1 - p) * split, p * split)


def _block_law(s: int, n: int, holders: int, p: float) -> np.ndarray:
    law = np.array([1.0])
    for i in range(n):
        law = np.convolve(law, _count_law(s, i < holders, p))
    return law


def _exact_delta(params, n: int, eps: float) -> float:
    """Hockey-stick divergence at eps of the real shuffled messages (word_bits = 1: each block's
    multiset is its number of 1-shares), target on element 0 vs 1, others on element 2."""
    s, p = params.shares, params.p
    held, free = _block_law(s, n, 1, p), _block_law(s, n, 0, p)
    px = np.outer(held, free)  # (blocks 0, 1) under X; X' is the transpose
    return float(np.maximum(px - math.exp(eps) * px.T, 0).sum())


def test_real_shuffled_messages_meet_the_stated_guarantee_exactly():
    n, eps = 40, 1.0
    proto = RobustDistinct(n, 3, eps, delta_split=1e-3, word_bits=1)
    g = proto.guarantee(n)
    assert g.eps == pytest.approx(eps)
    real = _exact_delta(proto.params, n, eps)
    assert real <= g.delta
    # the ideal parities alone are pure eps (delta 0) and tight
    beta = proto.params.beta(n)
    assert math.log((1 + beta) / (1 - beta)) == pytest.approx(eps)
    # the test can fail: noise for a larger epsilon, or too few shares, break the statement
    wrong_p = dataclasses.replace(proto.params, p=parity_parameters(n, 3, 2 * eps).p)
    assert _exact_delta(wrong_p, n, eps) > 10 * g.delta
    few_shares = dataclasses.replace(proto.params, shares=2)
    assert _exact_delta(few_shares, n, eps) > g.delta


def test_unbiased_with_sqrt_k_error_and_permutation_invariant():
    n, k = 4000, 200
    x = distinct_column(n, k, 0.3, 0)
    d = np.unique(x).size
    proto = RobustDistinct(n, k, 1.0)
    errs = []
    for r in range(40):
        rng = experiment_rng(5, "distinct", r)
        b = proto.encode(x, rng)
        errs.append(proto.analyze(b)["distinct"] - d)
        if r == 0:
            shuffled = trusted_shuffle(b, rng)
            assert proto.analyze(shuffled) == proto.analyze(b)
    sd = math.sqrt(proto.variance(d))
    assert sd < 3 * math.sqrt(k) / math.tanh(0.5)
    assert abs(np.mean(errs)) < 4 * sd / math.sqrt(40)
    assert 0.6 * sd < np.std(errs) < 1.5 * sd


def test_malformed_messages_are_dropped_and_users_counted():
    proto = RobustDistinct(500, 40, 1.0)
    b = proto.encode(np.arange(500) % 7, np.random.default_rng(1))["shares"]
    bad = np.array([[5, 1], [0, 1 << 30], [-1, 0]])
    out = proto.analyze({"shares": np.vstack([b, bad])})
    assert out["invalid"] == 3 and out["users"] == 500
    with pytest.raises(ValueError, match="no 'shares' batch"):
        proto.analyze({})
    with pytest.raises(ValueError, match="values must lie"):
        proto.encode(np.array([40]), np.random.default_rng(0))


def test_releases_reaccount_at_fewer_users_and_refuse():
    proto = RobustDistinct(2000, 64, 0.9)
    per = proto.max_messages()["shares"]
    full = gate(proto, 0, {"shares": 2000 * per})
    assert full[0].eps == pytest.approx(0.9) and not full[0].reaccounted
    half = gate(proto, 0, {"shares": 1000 * per}, max_epsilon=10)
    assert half[0].reaccounted and half[0].eps > 0.9
    with pytest.raises(PrivacyRefusal):
        gate(proto, 0, {"shares": 2 * per})


def test_workload_simulates_through_the_gate():
    w = get_workload("distinct", {"users": 3000, "domain": 64})
    ledger: list = []
    est = simulate(w.protocol, w.records, experiment_rng(16, "distinct"), ledger=ledger)
    assert len(ledger) == 1 and ledger[0].eps == pytest.approx(EPSILON_DEFAULT)
    rep = w.report(est)
    assert rep["true_distinct"] == w.truth()["distinct"] <= 32
    assert abs(rep["error"]) < 6 * rep["expected_rmse"]


def test_sdp_run_distinct_trusted(tmp_path):
    sdp_run(tmp_path, "distinct", "trusted", "--users", "2000", "--domain", "64")


@pytest.mark.slow
@pytest.mark.parametrize("shuffler,users", [("mixnet", "300"), ("mpc", "2000")])
def test_sdp_run_distinct_networked(tmp_path, shuffler, users):
    sdp_run(tmp_path, "distinct", shuffler, "--users", users, "--domain", "16")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 8), st.integers(-3, 1 << 31)), max_size=40))
def test_analyzer_decodes_any_rows_without_crashing(rows):
    proto = RobustDistinct(100, 70, 1.0)
    msgs = np.array(rows, dtype=np.int64).reshape(-1, 2)
    bits, good, bad = xor_parities(msgs, proto.params)
    widths = proto.params.block_bits()
    ok = [0 <= b < proto.params.blocks and 0 <= w < (1 << int(widths[b])) for b, w in rows]
    assert (good, bad) == (sum(ok), len(rows) - sum(ok)) and bits.shape == (70,)
    assert set(np.unique(bits)) <= {0, 1}
