"""Issue 25 item 6 (review N4/H5): site B refuses site A's ciphertexts that are not units mod N^2.

A key owner whose key passes every check puts a multiple of a prime factor p of N into one row:
B's answer for an item keeps the factor p iff the row is in B's private column, so
gcd(answer, N) read B's column membership (the old code answered; in the faithful protocol a
negative coefficient crashed B with a ZeroDivisionError instead). B now refuses before it
answers anything, with one line naming the row.
"""

from __future__ import annotations

import asyncio

import gmpy2
import numpy as np
import pytest
from _helpers import raw_gram_query

from mpc import paillier as P
from parties.runtime import codec
from parties.runtime.memlink import MemoryNetwork
from parties.txpub.gs_sites import site_b
from parties.txpub.paillier_exchange import ssp_bob

N_ROWS = 6


def _arr(a: np.ndarray) -> dict:
    return codec.array_to_obj(np.ascontiguousarray(a, dtype="<f8"))


@pytest.fixture(scope="module")
def key() -> P.FastPaillier:
    return P.FastPaillier.generate(512)


def test_site_b_refuses_a_non_unit_row_in_the_gram_query(key) -> None:
    D_B = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]], dtype=bool)
    p = int(key.private_key.p)
    cts = [int(c) for c in key.encrypt_ints([0] * N_ROWS)]
    cts[0] = p * 12345  # row 0: a multiple of the prime factor p, 0 < c < N^2
    net = MemoryNetwork(["A", "B"], timeout=20)
    got: dict = {}

    async def malicious_a(ctx):
        await ctx.send("B", "txpub.key", codec.dumps(key.public.to_dict()), public=True)
        m2 = int(codec.loads(await ctx.recv("B", "txpub.hello"))["m2"])
        point = {"op": "point", "it": 0, "X": _arr(np.zeros(m2)), "W": _arr(np.zeros(N_ROWS))}
        await ctx.send("B", "txpub.req", codec.dumps(point))
        await ctx.recv("B", "txpub.resp")
        gram = {"op": "gram", "it": 0, "weights": _arr(np.ones((1, N_ROWS))), "m1": 1}
        await ctx.send("B", "txpub.req", codec.dumps(gram))
        got["answers"] = await raw_gram_query(ctx, cts, key.nsq, N_ROWS)

    async def main():
        return await asyncio.gather(
            malicious_a(net.context("A")), site_b(net.context("B"), D_B), return_exceptions=True
        )

    ra, rb = asyncio.run(main())
    # on 27f5c45 B answered, and gcd(answer_k, N) = p exactly for the items row 0 holds
    if "answers" in got:
        leaked = [gmpy2.gcd(a, key.n) == p for a in got["answers"]]
        assert leaked != list(D_B[0]), "A read B's column membership of row 0 from the answers"
    assert isinstance(rb, ValueError), rb
    assert "row 0" in str(rb) and "not a unit mod N^2" in str(rb) and "\n" not in str(rb)
    assert "answers" not in got  # B sent no aggregate


def test_site_b_refuses_a_non_unit_in_the_faithful_protocol(key) -> None:
    """A negative coefficient made the old B invert a non-unit (ZeroDivisionError, H5)."""
    p = int(key.private_key.p)
    calls = [([3, -2], []), ([-1, 4], [])]
    cts = list(key.encrypt_ints([1, 2, 3, 4]))
    cts[2] = gmpy2.mpz(p)  # exponent -1: the old B inverted it
    net = MemoryNetwork(["A", "B"], timeout=20)

    async def malicious_a(ctx):
        body = {"shapes": [[2, 0], [2, 0]], "ct": P.ciphertexts_to_bytes(cts, key.nsq)}
        await ctx.send("B", "ssp.enc", codec.dumps(body))

    async def main():
        return await asyncio.gather(
            malicious_a(net.context("A")),
            ssp_bob(net.context("B"), "A", key.public, calls),
            return_exceptions=True,
        )

    _, rb = asyncio.run(main())
    assert isinstance(rb, ValueError), repr(rb)
    assert "ciphertext 2 (call 1)" in str(rb) and "not a unit" in str(rb)
    assert net.messages_sent.get("B", 0) == 0


def test_first_non_unit_finds_the_row(key) -> None:
    cts = list(key.encrypt_ints([5] * 10))
    assert P.first_non_unit(cts, key.n) is None
    cts[7] = gmpy2.mpz(int(key.private_key.q) * 3)
    assert P.first_non_unit(cts, key.n) == 7
