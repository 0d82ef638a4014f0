"""Split-Mix summation: parameters, encoding, decoding, baselines, and a run over the MPC shuffler."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from protocols.base import trusted_shuffle, validate_batches
from protocols.summation import split_mix as sm


def test_num_shares_reproduces_balle_et_al_data_point():
    # 1909.11225: 32-bit inputs, n = 10^4, 2^-40 statistical security -> 12 messages
    assert sm.num_shares(10_000, 10_000 * 2**32, 40) == 12
    assert sm.num_shares(10**6, 2**31, 40) < sm.num_shares(10**3, 2**31, 40)
    with pytest.raises(ValueError, match="n >= 3"):
        sm.num_shares(2, 100, 40)


@pytest.mark.parametrize("eps,p,sigma", [(1.0, 100, 30), (0.5, 7, 20), (2.0, 1000, 40)])
def test_tail_bound_is_the_smallest_valid(eps, p, sigma):
    a = math.exp(-eps / p)
    b = sm.tail_bound(eps, p, sigma)
    tail = lambda bb: 2 * a ** (bb + 1) / (1 + a)  # noqa: E731
    assert tail(b) <= 2.0**-sigma < tail(b - 1)


def test_parameters_meet_delta_and_fit_the_field():
    n = 32_561
    pr = sm.splitmix_parameters(n, 1.0, 1 / n**2)
    assert pr.delta_split <= 1 / n**2
    assert pr.modulus == n * pr.precision + 2 * pr.tail_bound + 1 <= sm.Q_MAX
    assert pr.shares == sm.num_shares(n, pr.modulus, pr.sigma)
    big = sm.splitmix_parameters(10**6, 1.0, 1e-12)  # precision lowered to fit q_max
    assert big.modulus <= sm.Q_MAX and big.precision < math.ceil(4 * 1000)
    with pytest.raises(ValueError, match="q_max"):
        sm.splitmix_parameters(10**6, 1.0, 1e-12, precision=10**5)
    with pytest.raises(ValueError, match="delta"):
        sm.splitmix_parameters(100, 1.0, 0.0)


def test_split_additive_rows_sum_to_value():
    v = np.array([0, 5, -3, 10**6])
    sh = sm.split_additive(v, 4, 1009)
    assert sh.shape == (4, 4) and sh.min() >= 0 and sh.max() < 1009
    np.testing.assert_array_equal(sh.sum(axis=1) % 1009, v % 1009)
    u = sm.uniform_mod(7, (70000,))
    assert np.abs(np.bincount(u, minlength=7) / 70000 - 1 / 7).max() < 0.01


def test_randomized_rounding_is_unbiased():
    rng = np.random.default_rng(0)
    x = np.full(200_000, 0.3137)
    r = sm.randomized_rounding(x, 10, rng)
    assert set(np.unique(r)) <= {3, 4}
    assert abs(r.mean() - 3.137) < 0.005


def test_encode_analyze_decodes_the_exact_noisy_sum():
    n = 2000
    pr = sm.splitmix_parameters(n, 1.0, 1e-6)
    proto = sm.SplitMixSum(pr)
    x = np.random.default_rng(1).random(n)
    batches = proto.encode(x, np.random.default_rng(5))
    assert batches["shares"].shape == (n * pr.shares, 1)
    assert validate_batches(proto, batches) == {"shares": 0}
    # recompute the users' noisy values with the same generator stream
    g = np.random.default_rng(5)
    v = sm.randomized_rounding(x, pr.precision, g) + sm.polya_noise_shares(
        n, n, 1.0, pr.precision, g
    )
    est = proto.analyze(trusted_shuffle(batches, np.random.default_rng(2)))
    assert est["sum"] == pytest.approx(v.sum() / pr.precision)
    assert est["messages"] == n * pr.shares and est["invalid_messages"] == 0
    assert abs(est["mean"] - x.mean()) < 20 / (n * 1.0)


def test_negative_noisy_sum_wraps_back():
    pr = sm.splitmix_parameters(100, 1.0, 1e-6)
    proto = sm.SplitMixSum(pr)
    assert proto.decode_sum((-7) % pr.modulus) == -7
    assert proto.decode_sum(pr.n * pr.precision + 3) == pr.n * pr.precision + 3


def test_polya_shares_sum_to_discrete_laplace():
    rng = np.random.default_rng(3)
    n, reps, eps, p = 50, 40_000, 1.0, 4
    z = sm.polya_noise_shares(n, n * reps, eps, p, rng).reshape(reps, n).sum(axis=1)
    a = math.exp(-eps / p)
    var = 2 * a / (1 - a) ** 2
    assert abs(z.mean()) < 4 * math.sqrt(var / reps)
    assert abs(z.var() / var - 1) < 0.05
    # P(Z = 0) = (1 - a) / (1 + a)
    assert abs((z == 0).mean() - (1 - a) / (1 + a)) < 0.01


def test_bad_records_raise_named_errors():
    proto = sm.SplitMixSum(sm.splitmix_parameters(100, 1.0, 1e-6))
    with pytest.raises(ValueError, match="SplitMixSum.encode"):
        proto.encode(np.array([0.5, 1.5]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="central_laplace_sum"):
        sm.central_laplace_sum(np.array([np.nan]), 1.0, np.random.default_rng(0))


def test_invalid_messages_are_counted_not_fatal():
    pr = sm.splitmix_parameters(100, 1.0, 1e-6)
    proto = sm.SplitMixSum(pr)
    b = proto.encode(np.full(100, 0.5), np.random.default_rng(0))
    b["shares"][0, 0] = pr.modulus + 3
    assert proto.analyze(b)["invalid_messages"] == 1


def test_single_message_baseline_is_accounted_and_roughly_unbiased():
    n = 20_000
    proto = sm.SingleMessageSum(n, 1.0, 1e-6)
    assert proto.levels == math.ceil(n ** (1 / 3)) and proto.eps_local > 1.0
    x = np.random.default_rng(4).random(n) ** 2
    est = proto.analyze(
        trusted_shuffle(proto.encode(x, np.random.default_rng(6)), np.random.default_rng(7))
    )
    assert abs(est["mean"] - x.mean()) < 0.02
    assert proto.privacy()["eps_local"] == proto.eps_local


async def test_splitmix_over_the_mpc_shuffler_matches_trusted_shuffle():
    from parties.mpc_shuffle import local_runtime as pr_
    from parties.mpc_shuffle import shuffler as ms
    from parties.mpc_shuffle import wire as mpc_wire
    from parties.runtime.memlink import MemoryNetwork

    n = 300
    proto = sm.SplitMixSum(sm.splitmix_parameters(n, 1.0, 1e-6))
    x = np.random.default_rng(8).random(n)
    batches = proto.encode(x, np.random.default_rng(9))
    specs = proto.batch_specs()
    cfg = mpc_wire.MPCShufflerConfig(
        servers=("s0", "s1", "s2"), analyzer="an", clients=("c0", "c1"), security="semi-honest"
    )  # shares mod q > max_domain: refused in malicious-abort mode (issue 25)
    net = MemoryNetwork(["s0", "s1", "s2", "an", "c0", "c1"])
    rts = pr_.LocalMPCNetwork(3, 1).runtimes()
    half = n * proto.params.shares // 2
    parts = [{"shares": batches["shares"][:half]}, {"shares": batches["shares"][half:]}]
    res = await asyncio.gather(
        *(ms.client_submit(net.context(c), cfg, specs, b) for c, b in zip(cfg.clients, parts)),
        *(ms.server_run(net.context(s), rts[i], cfg, specs) for i, s in enumerate(cfg.servers)),
        ms.analyzer_collect(net.context("an"), cfg, specs),
    )
    out = res[-1]
    assert proto.analyze(out.batches) == proto.analyze(batches)
