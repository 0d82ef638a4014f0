"""Shamir sharing and the pure-numpy permute-and-reshare shuffle."""

from __future__ import annotations

import numpy as np
import pytest

from mpc import permute_reshare as pr
from mpc import shamir
from mpc.shamir import PRIME


def test_share_reconstruct_any_t_plus_1_subset():
    rng = np.random.default_rng(1)
    secrets = rng.integers(0, PRIME, size=(500, 3))
    sh = shamir.share(secrets, 5, 2)
    assert sh.shape == (5, 500, 3)
    for parties in ([0, 1, 2], [1, 3, 4], [0, 2, 4], [0, 1, 2, 3, 4]):
        np.testing.assert_array_equal(shamir.reconstruct(sh[parties], parties), secrets)
    assert shamir.consistent(sh, 2).all()


def test_t_shares_are_uniform_and_independent_of_secret():
    # with t=1 a single share of a fixed secret is uniform: its mean ~ PRIME/2
    sh = shamir.share(np.zeros(20000, dtype=np.int64), 3, 1)
    assert abs(sh[0].mean() / PRIME - 0.5) < 0.02
    assert not (sh[0] == 0).all()


def test_shares_match_mpyc_convention_with_fixed_coefficients():
    # f(x) = s + c x: party i holds s + c (i+1)
    s = np.array([5, 7])
    c = np.array([[3, 11]])
    sh = shamir.share(s, 3, 1, coefficients=c)
    np.testing.assert_array_equal(sh[:, 0], [8, 11, 14])
    np.testing.assert_array_equal(sh[:, 1], [18, 29, 40])


def test_inconsistent_share_detected():
    sh = shamir.share(np.arange(10), 3, 1)
    sh[2, 4] = (sh[2, 4] + 1) % PRIME
    ok = shamir.consistent(sh, 1)
    assert ok.sum() == 9 and not ok[4]


def test_bad_inputs_raise_named_errors():
    with pytest.raises(ValueError, match="shamir.share"):
        shamir.share(np.array([PRIME]), 3, 1)
    with pytest.raises(ValueError, match="t < m"):
        shamir.share(np.array([1]), 3, 3)
    with pytest.raises(ValueError, match="from server"):
        shamir.from_wire(b"\x00" * 7, (2,), "from server 1")
    with pytest.raises(ValueError, match="distinct"):
        shamir.lagrange_coefficients([1, 1])


def test_random_field_elements_in_range():
    v = shamir.random_field_elements((1000, 2))
    assert v.shape == (1000, 2) and v.min() >= 0 and v.max() < PRIME
    k = shamir.keyed_field_elements(b"k" * 32, bytes(16), 100)
    np.testing.assert_array_equal(k, shamir.keyed_field_elements(b"k" * 32, bytes(16), 100))


def test_permutation_from_seed_is_deterministic_and_uniform_ish():
    a = pr.permutation_from_seed(b"s" * 32, 1000, b"x")
    assert sorted(a.tolist()) == list(range(1000))
    np.testing.assert_array_equal(a, pr.permutation_from_seed(b"s" * 32, 1000, b"x"))
    assert not np.array_equal(a, pr.permutation_from_seed(b"s" * 32, 1000, b"y"))
    # position of element 0 over many seeds is spread over all 4 positions of n=4
    pos = [
        int(np.flatnonzero(pr.permutation_from_seed(bytes([i]) * 32, 4) == 0)[0])
        for i in range(200)
    ]
    counts = np.bincount(pos, minlength=4)
    assert counts.min() > 20


@pytest.mark.parametrize("m,t", [(3, 1), (5, 2), (4, 1)])
def test_simulated_shuffle_is_the_composed_permutation(m, t):
    rng = np.random.default_rng(m)
    x = rng.integers(0, 1000, size=(300, 2))
    out, perm = pr.simulate_permute_reshare(shamir.share(x, m, t), t)
    y = shamir.reconstruct(out[: t + 1], list(range(t + 1)))
    np.testing.assert_array_equal(y, x[perm])
    assert shamir.consistent(out, t).all()
    assert not np.array_equal(perm, np.arange(300))


def test_coalitions_counts_and_validation():
    assert len(pr.coalitions(3, 1)) == 3 and len(pr.coalitions(5, 2)) == 10
    with pytest.raises(ValueError, match="m >= 3"):
        pr.coalitions(2, 1)
    with pytest.raises(ValueError):
        pr.coalitions(4, 2)


def test_every_t_coalition_misses_a_round():
    # the permutation of an all-honest coalition hides the composition from any t servers
    import itertools

    for m, t in [(3, 1), (5, 2), (7, 3), (6, 2)]:
        coals = pr.coalitions(m, t)
        for bad in itertools.combinations(range(m), t):
            assert any(set(A).isdisjoint(bad) for A in coals)


def test_fast_kernels_agree_with_the_reference_arithmetic():
    rng = np.random.default_rng(5)
    a = rng.integers(0, shamir.PRIME, size=(400, 3))
    b = rng.integers(0, shamir.PRIME, size=(400, 3))
    a[0, 0], b[0, 0] = shamir.PRIME - 1, shamir.PRIME - 1  # the largest product
    np.testing.assert_array_equal(shamir.mul_mod(a, b), a * b % shamir.PRIME)
    np.testing.assert_array_equal(shamir.mul_mod(a, 12345), a * 12345 % shamir.PRIME)
    s = shamir.add_mod32(a.astype("<u4"), b.astype("<u4"))
    np.testing.assert_array_equal(s, (a + b) % shamir.PRIME)
    for m, t in ((3, 1), (5, 2)):
        wires = shamir.share_wire(a, m, t)
        allsh = np.stack([shamir.from_wire(w, a.shape, "test") for w in wires])
        assert shamir.consistent(allsh, t).all()
        np.testing.assert_array_equal(shamir.reconstruct(allsh[: t + 1], list(range(t + 1))), a)
    total = shamir.sum_wire([("x", shamir.to_wire(a)), ("y", shamir.to_wire(b))], a.shape)
    np.testing.assert_array_equal(total, (a + b) % shamir.PRIME)
    bad = np.full(a.shape, shamir.PRIME, dtype="<u4").tobytes()
    with pytest.raises(ValueError, match="server 2: values must lie"):
        shamir.sum_wire([("x", shamir.to_wire(a)), ("server 2", bad)], a.shape)
    with pytest.raises(ValueError, match="server 1: expected"):
        shamir.sum_wire([("server 1", b"abc")], a.shape)


def test_keyed_field_words_reject_the_prime(monkeypatch):
    words = np.array([5, 0x7FFFFFFF, 0xFFFFFFFF, 7, 0x80000003] + [1] * 70, dtype="<u4")
    monkeypatch.setattr(shamir, "chacha20_stream", lambda key, nonce, n: words.tobytes()[:n])
    out = shamir.keyed_field_words(bytes(32), bytes(16), 4)
    assert out.tolist() == [5, 7, 3, 1]  # 2^31 - 1 (with or without the top bit) rejected
