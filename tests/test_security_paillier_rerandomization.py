"""Issue 16 item 3: site B's Paillier answers must hide everything but their plaintexts from the
key owner A, whatever key material A chose.

Attacks mounted against the real site B (``parties.txpub.gs_sites.site_b`` over the in-memory
network, answering a malicious A that speaks the real message flow):
* degenerate owner parameters (h = 1, h of order 2, h = -1 mod N, h in the 1 + N subgroup,
  short exponents, a modulus with a small factor or without its N-th-root proof): refused
  before B answers anything;
* a key that passes every check (a genuine Paillier modulus, with p = 1 mod 2^528 and a base h
  whose root is a 2^528-th power mod p) and ciphertexts whose randomness encodes the row index
  in its 2^528-th power residue symbol mod p: with B re-randomizing by A's base (the old code),
  A reads B's private 0/1 columns off the answers' residue symbols, although every plaintext
  is 0; with B's fresh full-size r^N the symbols are uniform and the column stays hidden.
"""

from __future__ import annotations

import asyncio
import secrets

import gmpy2
import numpy as np
import pytest
from _helpers import raw_gram_query

from mpc import paillier as P
from parties.runtime import codec
from parties.runtime.memlink import MemoryNetwork
from parties.txpub.gs_sites import site_b

N_ROWS, BLOCK = 12, 44  # B's rows; bits per row in the residue symbol (|beta| scale < 2^40)
K2 = N_ROWS * BLOCK  # p = 1 mod 2^K2


def _arr(a: np.ndarray) -> dict:
    return codec.array_to_obj(np.ascontiguousarray(a, dtype="<f8"))


def _b_table() -> np.ndarray:
    rng = np.random.default_rng(5)
    D = rng.random((N_ROWS, 3)) < 0.5
    D[0] = True  # every item has support
    return D


async def _run_b_against(attacker, D_B: np.ndarray, key_bits: int | None = None):
    net = MemoryNetwork(["A", "B"], timeout=20)
    res = await asyncio.gather(
        attacker(net.context("A")),
        site_b(net.context("B"), D_B, key_bits=key_bits),
        return_exceptions=True,
    )
    return res, net


# ----------------------------------------------------------------------------- refused keys


@pytest.fixture(scope="module")
def honest_key() -> P.FastPaillier:
    return P.FastPaillier.generate(512)


def _variants(fp: P.FastPaillier) -> dict[str, dict]:
    n, nsq = int(fp.n), int(fp.nsq)
    good = fp.public.to_dict()
    p3 = next(int(q) for q in (gmpy2.next_prime(2**20 + k) for k in range(100)))
    return {
        "h = 1": {**good, "h": 1},
        "h of order 2 (N^2 - 1)": {**good, "h": nsq - 1},
        "h = -1 mod N": {**good, "h": n - 1},
        "h in the 1 + N subgroup": {**good, "h": 1 + n},
        "h sharing a factor with N": {**good, "h": int(fp.private_key.p)},
        "64-bit exponents": {**good, "exp_bits": 64},
        "255-bit exponents": {**good, "exp_bits": 255},
        "no modulus proof": {k: v for k, v in good.items() if k != "nth_roots"},
        "wrong modulus proof": {**good, "nth_roots": [1] * len(good["nth_roots"])},
        "modulus with a small factor": {**good, "n": n * 65521},
        "modulus with a 2^20 factor": {**good, "n": n * p3},
    }


@pytest.mark.parametrize(
    "case",
    [
        "h = 1",
        "h of order 2 (N^2 - 1)",
        "h = -1 mod N",
        "h in the 1 + N subgroup",
        "h sharing a factor with N",
        "64-bit exponents",
        "255-bit exponents",
        "no modulus proof",
        "wrong modulus proof",
        "modulus with a small factor",
        "modulus with a 2^20 factor",
    ],
)
def test_degenerate_owner_parameters_are_refused_by_site_b(honest_key, case):
    key = _variants(honest_key)[case]

    async def malicious_a(ctx):
        await ctx.send("B", "txpub.key", codec.dumps(key), public=True)

    (ra, rb), net = asyncio.run(_run_b_against(malicious_a, _b_table()))
    assert isinstance(rb, ValueError), rb
    assert "refusing A's Paillier key" in str(rb)
    assert net.messages_sent.get("B", 0) == 0  # B answered nothing
    with pytest.raises(ValueError):
        P.PaillierPublic.from_dict(key)


def test_small_order_base_is_refused_even_with_a_genuine_key():
    # r0 of order 3 in Z*_N (A knows p), lifted to the N-th residue h = r0^N: degenerate
    while True:
        p = gmpy2.next_prime(secrets.randbits(256) | (1 << 255))
        if p % 3 == 1:
            break
    q = gmpy2.next_prime(secrets.randbits(256) | (1 << 255))
    n = p * q
    a = next(t for t in (gmpy2.powmod(k, (p - 1) // 3, p) for k in range(2, 100)) if t != 1)
    r0 = _crt(a, p, 1, q)
    h = int(gmpy2.powmod(r0, n, n * n))
    key = {"n": int(n), "h": h, "exp_bits": 256, "nth_roots": P.prove_nth_roots(n, p, q)}
    with pytest.raises(ValueError, match="order"):
        P.PaillierPublic.from_dict(key)


def test_site_b_insists_on_the_agreed_key_size(honest_key):
    async def a(ctx):
        await ctx.send("B", "txpub.key", codec.dumps(honest_key.public.to_dict()), public=True)

    (ra, rb), _ = asyncio.run(_run_b_against(a, _b_table(), key_bits=2048))
    assert isinstance(rb, ValueError) and "2048" in str(rb)


# ----------------------------------------------------------------------------- covert channel


def _malicious_key():
    """A genuine Paillier modulus with p = 1 mod 2^K2; G of order 2^K2 mod p."""
    while True:
        c = secrets.randbits(1024 - K2) | 1 | (3 << (1022 - K2))  # p >= 1.5 2^1023
        p = gmpy2.mpz(c) * (1 << K2) + 1
        if gmpy2.is_prime(p):
            break
    q = gmpy2.next_prime(secrets.randbits(1024) | (3 << 1022))
    n = p * q  # 2048 bits
    cofactor = (p - 1) >> K2
    while True:
        G = gmpy2.powmod(secrets.randbelow(int(p) - 2) + 2, cofactor, p)
        if gmpy2.powmod(G, 1 << (K2 - 1), p) != 1:  # order exactly 2^K2
            return p, q, n, G, cofactor


def _crt(a_p, p, a_q, q):
    return int((a_q + q * ((a_p - a_q) * gmpy2.invert(q, p) % p)) % (p * q))


def _dlog_2k(y, G, p, k: int) -> int:
    """Pohlig-Hellman in the cyclic group of order 2^k generated by G."""
    z = 0
    Ginv = gmpy2.invert(G, p)
    for i in range(k):
        t = gmpy2.powmod(y * gmpy2.powmod(Ginv, z, p) % p, 1 << (k - 1 - i), p)
        if t != 1:
            z |= 1 << i
    return z


def test_key_owner_cannot_read_bs_column_from_the_answers():
    D_B = _b_table()
    p, q, n, G, cofactor = _malicious_key()
    nsq = n * n
    # h = r0^N with r0 a 2^K2-th power mod p: its residue symbol is trivial, its order is huge
    r0 = _crt(
        gmpy2.powmod(secrets.randbelow(int(p) - 2) + 2, 1 << K2, p),
        p,
        secrets.randbelow(int(q) - 2) + 2,
        q,
    )
    h = int(gmpy2.powmod(r0, n, nsq))
    key = {"n": int(n), "h": h, "exp_bits": 256, "nth_roots": P.prove_nth_roots(n, p, q)}
    P.PaillierPublic.from_dict(key, 2048)  # the key passes every check B makes
    cinv = gmpy2.invert(cofactor, 1 << K2)
    # row i's randomness r_i has residue symbol G^(2^(i BLOCK)); every plaintext is 0
    cts = []
    for i in range(N_ROWS):
        rp = gmpy2.powmod(G, (1 << (i * BLOCK)) * cinv % (1 << K2), p)
        r_i = _crt(rp, p, secrets.randbelow(int(q) - 2) + 2, q)
        cts.append(int(gmpy2.powmod(r_i, n, nsq)))
    got: dict = {}

    async def malicious_a(ctx):
        await ctx.send("B", "txpub.key", codec.dumps(key), public=True)
        hello = codec.loads(await ctx.recv("B", "txpub.hello"))
        m2 = int(hello["m2"])
        point = {"op": "point", "it": 0, "X": _arr(np.zeros(m2)), "W": _arr(np.zeros(N_ROWS))}
        await ctx.send("B", "txpub.req", codec.dumps(point))
        await ctx.recv("B", "txpub.resp")
        gram = {
            "op": "gram",
            "it": 0,
            "weights": _arr(np.ones((1, N_ROWS))),
            "protocol": "optimized",
            "m1": 1,
        }
        await ctx.send("B", "txpub.req", codec.dumps(gram))
        got["answers"] = await raw_gram_query(ctx, cts, nsq, N_ROWS)
        await ctx.recv("B", "txpub.resp")
        await ctx.send(
            "B",
            "txpub.req",
            codec.dumps({"op": "done", "X": _arr(np.zeros(m2)), "converged": False}),
            public=True,
        )

    (ra, rb), _ = asyncio.run(_run_b_against(malicious_a, D_B))
    assert ra is None and not isinstance(rb, Exception), (ra, rb)
    ninv = gmpy2.invert(n, 1 << K2)
    for k, c in enumerate(got["answers"]):
        symbol = gmpy2.powmod(c % p, cofactor, p)  # the 2^K2-th power residue symbol
        z = _dlog_2k(symbol, G, p, K2) * ninv % (1 << K2)  # = bq_k * sum_i D_ik 2^(i BLOCK)?
        blocks = [(z >> (i * BLOCK)) & ((1 << BLOCK) - 1) for i in range(N_ROWS)]
        column = np.array([b != 0 for b in blocks])
        # the old code (B re-randomizing with A's base) fails both: every block is 0 or the
        # same scale bq_k, and the recovered column is B's
        consistent = len({b for b in blocks if b}) <= 1
        assert not (consistent and (column == D_B[:, k]).all()), f"A recovered B's item {k}"
