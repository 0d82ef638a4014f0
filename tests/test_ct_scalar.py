"""Issue 37 item 3: the constant-time reduction of secret scalars (libsodium's
``crypto_core_ristretto255_scalar_reduce`` on a 64-byte buffer) agrees with Python's ``% L``
on random and edge-case inputs; so do the negation and multiply-add built on it."""

from __future__ import annotations

import os
import random

import pytest

from mpc import ristretto as r
from mpc.ristretto import L

EDGES = [0, 1, L - 1, L, L + 1, 2 * L, 2**252, 2**256 - 1, 2**256, L * L, 2**512 - 1,
         (2**512 // L) * L, (2**512 // L) * L - 1]  # fmt: skip


def test_reduce_matches_python_mod_on_random_and_edge_inputs():
    rng = random.Random(37)
    values = EDGES + [rng.getrandbits(512) for _ in range(20000)]
    values += [rng.getrandbits(rng.randrange(1, 513)) for _ in range(5000)]
    for v in values:
        assert int.from_bytes(r.ct_reduce(v.to_bytes(64, "little")), "little") == v % L, v
        assert r.ct_scalar_bytes(v) == (v % L).to_bytes(32, "little"), v
        assert r.ct_scalar_bytes(-v) == (-v % L).to_bytes(32, "little"), -v


def test_muladd_matches_python():
    rng = random.Random(38)
    for _ in range(5000):
        a, b, c = (rng.getrandbits(rng.choice([64, 252, 256, 300])) for _ in range(3))
        assert r.ct_muladd(a, b, c) == (a * b + c) % L


def test_random_scalars_are_canonical_and_nonzero():
    for s in r.random_scalars(2000) + [r.random_scalar() for _ in range(200)]:
        assert 0 < s < L
    seeded = r.seeded_scalars(os.urandom(32), b"t", 500)
    assert all(0 <= s < L for s in seeded)


def test_out_of_range_and_malformed_inputs_are_refused():
    with pytest.raises(ValueError, match="below 2"):
        r.ct_scalar_bytes(1 << 512)
    with pytest.raises(ValueError, match="64 bytes"):
        r.ct_reduce(bytes(32))


def test_smul_base_of_zero_is_the_identity():
    assert r.smul_base(0) == r.IDENTITY and r.smul_base(L) == r.IDENTITY
    assert r.smul_base(1) == r.G


def test_chain_scan_dot_and_mod_match_the_python_formulas():
    from mpc import ct_scalar as ct

    rng = random.Random(39)
    m = 300
    rhat, what, wp, up = ([rng.randrange(L) for _ in range(m)] for _ in range(4))
    r0, u0 = rng.randrange(L), rng.randrange(L)
    x1, y1, x2, y2 = [0] * m, [0] * m, [0] * m, [0] * m
    r, u = r0, u0
    for i in range(m):  # the loop shuffle_proof._phase_b ran before issue 37
        x2[i] = (what[i] + wp[i] * r) % L
        y2[i] = wp[i] * u % L
        r = x1[i] = (rhat[i] + up[i] * r) % L
        u = y1[i] = up[i] * u % L
    assert ct.ct_chain(rhat, what, wp, up, r0, u0) == (x1, y1, x2, y2)
    a, b = 0, 1
    for x, y in zip(rhat, up):
        a, b = (x + y * a) % L, y * b % L
    assert ct.ct_scan(rhat, up) == (a, b)
    assert ct.ct_dot(up, rhat) == sum(x * y for x, y in zip(up, rhat)) % L
    for v in [0, L, sum(rhat), -sum(rhat), (1 << 512) - 1]:
        assert ct.ct_mod(v) == v % L
