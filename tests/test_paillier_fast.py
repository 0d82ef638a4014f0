"""Fast Paillier (CRT + fixed-base short exponent), fixed-point encoding, scalar products."""

import asyncio

import numpy as np
import pytest
from phe import paillier

from mpc import fixed_point as fxp
from mpc.paillier import (
    FastPaillier,
    PaillierPublic,
    ciphertexts_from_bytes,
    ciphertexts_to_bytes,
    obfuscate,
)
from mpc.scalar_product import ProtocolStats, pack_rows, per_entry_cost, unpack
from parties.runtime.memlink import MemoryNetwork
from parties.txpub.paillier_exchange import (
    gram_cross_alice,
    gram_cross_bob,
    gram_cross_per_entry_alice,
    gram_cross_per_entry_bob,
    ssp_alice,
    ssp_bob,
)


@pytest.fixture(scope="module")
def fp():
    return FastPaillier.generate(512)


def test_roundtrip_and_homomorphism(fp):
    N = int(fp.n)
    for m in (0, 1, 12345, N - 1, 2**200):
        assert fp.decrypt_int(fp.encrypt_int(m)) == m % N
    c = fp.encrypt_int(7) * fp.encrypt_int(5) % fp.nsq
    assert fp.decrypt_int(c) == 12
    # phe objects interoperate: phe adds and decrypts our ciphertexts
    e = fp.encrypt(40) + fp.public_key.encrypt(2)
    assert fp.private_key.decrypt(e) == 42
    assert fp.decrypt_signed(fp.encrypt_int(-9)) == -9


def test_fresh_randomness_and_rerandomize(fp):
    c1, c2 = fp.encrypt_int(3), fp.encrypt_int(3)
    assert c1 != c2
    c3 = fp.public.rerandomize(c1)
    assert c3 != c1 and fp.decrypt_int(c3) == 3
    e = obfuscate(fp.encrypt(5) * 3, fp.public)
    assert fp.private_key.decrypt(e) == 15
    pub = PaillierPublic.from_dict(fp.public.to_dict())
    assert fp.decrypt_int(pub.encrypt_int(77)) == 77
    with pytest.raises(ValueError):
        PaillierPublic.from_dict({"n": 5})


def test_serialization_checks_range(fp):
    cts = fp.encrypt_ints([1, 2, 3])
    blob = ciphertexts_to_bytes(cts, fp.nsq)
    assert ciphertexts_from_bytes(blob, fp.nsq) == cts
    with pytest.raises(ValueError, match="multiple"):
        ciphertexts_from_bytes(blob[:-1], fp.nsq)
    with pytest.raises(ValueError, match="range"):
        ciphertexts_from_bytes(b"\x00" * len(blob), fp.nsq)


def test_fixed_point_overflow_and_signs():
    ints = fxp.encode([1.5, -2.25], 4, 10)
    assert ints == [24, -36]
    assert fxp.from_mod(fxp.to_mod(ints, 1001), 1001) == ints
    with pytest.raises(OverflowError):
        fxp.encode([100.0], 4, 10)
    with pytest.raises(OverflowError):
        fxp.check_bound(600, 2**512)
    Q, e = fxp.quantize_columns(np.array([[0.5, 0.0], [0.25, 0.0]]), 20)
    assert np.allclose(np.ldexp(Q.astype(float), -e[None, :]), [[0.5, 0], [0.25, 0]])
    with pytest.raises(ValueError):
        fxp.quantize_columns(np.array([[-1.0]]), 20)


def test_packing_roundtrip():
    Q = np.array([[1, 2**50, 3], [0, 7, 2**40]], dtype=np.int64)
    packed = pack_rows(Q, 2)
    assert len(packed) == 4
    assert unpack(packed[0], 2) == [1, 2**50] and unpack(packed[3], 2) == [2**40, 0]


def _run(coro_a, coro_b):
    async def go():
        return await asyncio.gather(coro_a, coro_b)

    return asyncio.run(go())


def test_ssp_sum_of_scalar_products(fp):
    net = MemoryNetwork(["A", "B"])
    a, b = net.context("A"), net.context("B")
    rng = np.random.default_rng(1)
    A_calls = [(list(rng.integers(-50, 50, 6)), list(rng.integers(-50, 50, 3))) for _ in range(4)]
    B_calls = [(list(rng.integers(-50, 50, 6)), list(rng.integers(-50, 50, 3))) for _ in range(4)]
    A_calls = [([int(x) for x in p], [int(x) for x in q]) for p, q in A_calls]
    B_calls = [([int(x) for x in p], [int(x) for x in q]) for p, q in B_calls]
    ra, rb = _run(ssp_alice(a, "B", fp, A_calls), ssp_bob(b, "A", fp.public, B_calls))
    want = [int(np.dot(p, c) + np.dot(q, d)) for (p, q), (c, d) in zip(A_calls, B_calls)]
    assert ra == want and rb == want
    assert net.messages_sent["A"] == 2 and net.messages_sent["B"] == 1


def test_optimized_gram_equals_per_entry_and_plaintext(fp):
    rng = np.random.default_rng(0)
    n, m1, m2, r = 120, 3, 2, 4
    DA, DB = rng.random((n, m1)) < 0.3, rng.random((n, m2)) < 0.3
    ba, bb = rng.uniform(0.01, 0.2, m1), rng.uniform(0.01, 0.2, m2)
    W = rng.uniform(0, 5, (r, n))
    GA = DA * ba
    want = np.einsum("wi,ij,ik->wjk", W, GA, DB * bb)
    net = MemoryNetwork(["A", "B"])
    sa, sb = ProtocolStats(), ProtocolStats()
    opt, _ = _run(
        gram_cross_alice(net.context("A"), "B", fp, W, GA, stats=sa),
        gram_cross_bob(net.context("B"), "A", fp.public, DB, bb, stats=sb),
    )
    net2 = MemoryNetwork(["A", "B"])
    pe, _ = _run(
        gram_cross_per_entry_alice(net2.context("A"), "B", fp, W, GA, m2),
        gram_cross_per_entry_bob(net2.context("B"), "A", fp.public, DB, bb, r, m1),
    )
    assert np.abs(opt - want).max() <= 1e-10 * np.abs(want).max()
    assert np.abs(pe - want).max() <= 1e-6 * np.abs(want).max()
    assert sa.encryptions < n * m1 * r  # packed: fewer than one encryption per value
    with pytest.raises(ValueError, match="non-negative"):
        asyncio.run(gram_cross_alice(net.context("A"), "B", fp, -W, GA))


def test_per_entry_cost_formula():
    unit = {"enc": 1e-3, "exp": 1e-4, "dec": 2e-3, "enc_nonowner": 1e-3}
    c = per_entry_cost(10, 2, unit, 512)
    assert c["calls"] == 12 * 13 / 2 + 12
    assert c["seconds"] == pytest.approx(c["calls"] * (24 * 1e-3 + 24 * 1e-4 + 2e-3 + 4e-3))


def test_phe_key_reuse():
    pub, priv = paillier.generate_paillier_keypair(n_length=512)
    f = FastPaillier(pub, priv)
    assert priv.decrypt(f.encrypt(123)) == 123
    with pytest.raises(ValueError):
        FastPaillier(pub, priv, exp_bits=64)


def test_parallel_encryption_matches(fp):
    ms = list(range(600))
    cts = fp.encrypt_ints(ms, workers=2)
    assert [fp.decrypt_int(c) for c in cts] == ms
    assert len({int(c) for c in cts}) == len(ms)
