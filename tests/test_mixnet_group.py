"""ristretto255 group, ElGamal and the message embedding: decoders never crash, laws hold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc import ristretto as R
from mpc.elgamal import (
    combine_weighted_shares,
    decode_rows,
    decrypt,
    decryption_shares,
    embed,
    encode_rows,
    encrypt_points,
    extract,
    keygen,
    message_layout,
    reencrypt,
)
from mpc.threshold import lagrange_at_zero

P = 2**255 - 19
scalars = st.integers(min_value=1, max_value=R.L - 1)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=32, max_size=32))
def test_random_bytes_never_crash(data: bytes) -> None:
    ok = R.is_valid(data)
    if ok:
        assert R.add(data, R.IDENTITY) == data  # valid encodings round-trip canonically
    else:
        with pytest.raises(R.GroupError):
            R.check_point(data, "x")
        if data[31] < 0x80:  # libsodium itself ignores the top bit (see mpc.ristretto)
            with pytest.raises(R.GroupError):
                R.add(data, R.G)


@settings(max_examples=200, deadline=None)
@given(scalars)
def test_non_canonical_field_encoding_rejected(s: int) -> None:
    p = R.smul_base(s)
    v = int.from_bytes(p, "little")
    if v + P < 2**255:  # same field element, non-canonical representative
        assert not R.is_valid((v + P).to_bytes(32, "little"))
    # negative field element representative (odd) is never a valid encoding
    assert not R.is_valid(((P - v) % P).to_bytes(32, "little")) or v == 0


@settings(max_examples=100, deadline=None)
@given(scalars)
def test_top_bit_set_rejected(s: int) -> None:
    # libsodium 1.0.18 decodes these (ignoring the bit); we must not accept them
    p = bytearray(R.smul_base(s))
    p[31] |= 0x80
    assert not R.is_valid(bytes(p))
    assert R.check_points([bytes(p)], "x") == [0]
    with pytest.raises(R.GroupError, match="top bit"):
        R.split_points(bytes(p), 1, "x")


def test_field_elements_at_or_above_p_rejected() -> None:
    for v in range(P, 2**255):  # the 19 non-canonical field encodings
        assert not R.is_valid(v.to_bytes(32, "little"))


def test_wrong_lengths_and_types_rejected() -> None:
    for bad in (b"", bytes(31), bytes(33), "x" * 32):
        assert not R.is_valid(bad)  # type: ignore[arg-type]
        with pytest.raises(R.GroupError):
            R.check_point(bad, "here")
    with pytest.raises(R.GroupError, match="identity"):
        R.check_point(R.IDENTITY, "here")
    with pytest.raises(ValueError, match="non-canonical"):
        R.scalar_from_bytes(R.L.to_bytes(32, "little"))


@settings(max_examples=60, deadline=None)
@given(scalars, scalars)
def test_homomorphism(a: int, b: int) -> None:
    assert R.add(R.smul_base(a), R.smul_base(b)) == R.smul_base(a + b)
    q = R.hash_to_point(b"q")
    assert R.smul(a, R.smul(b, q)) == R.smul(a * b, q)
    assert R.sub(R.smul(a, q), R.smul(b, q)) == (R.smul(a - b, q) if a != b else R.IDENTITY)
    assert R.msm([a, b], [q, R.G]) == R.add(R.smul(a, q), R.smul_base(b))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 2**40), min_size=1, max_size=4))
def test_elgamal_and_reencryption_invariance(vals: list[int]) -> None:
    x, pk = keygen()
    rows = np.array([vals], dtype=np.int64).T
    cols = encode_rows(rows, 2**40 + 1)
    ct, _ = encrypt_points(pk, cols)
    r = [R.random_scalars(ct.n) for _ in range(ct.w)]
    ct2 = reencrypt(pk, ct, r)
    assert ct2.a != ct.a and ct2.b != ct.b
    assert decrypt(x, ct2) == decrypt(x, ct) == cols
    got, valid = decode_rows(decrypt(x, ct2), 1, 2**40 + 1)
    assert valid.all() and got[:, 0].tolist() == vals


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=30))
def test_embedding_injective(payload: bytes) -> None:
    p = embed(payload)
    assert R.is_valid(p) and p != R.IDENTITY
    assert extract(p) == payload.ljust(30, b"\0")


def test_wide_rows_multi_component_and_invalid_plaintexts() -> None:
    rng = np.random.default_rng(0)
    bound = 2**31
    rows = rng.integers(0, bound, (20, 12))
    nbytes, comps = message_layout(12, bound)
    assert comps == 2 and nbytes == 47
    x, pk = keygen()
    ct, _ = encrypt_points(pk, encode_rows(rows, bound))
    assert ct.w == 2
    got, valid = decode_rows(decrypt(x, ct), 12, bound)
    assert valid.all() and (got == rows).all()
    junk = [[R.hash_to_point(b"junk", bytes([i])) for i in range(20)]] * 2
    _, valid = decode_rows(junk, 12, bound)
    assert valid.sum() < 20
    with pytest.raises(ValueError, match="outside"):
        encode_rows(np.array([[bound]]), bound)


def test_threshold_decryption_any_t_of_k() -> None:
    k, t = 3, 2
    coeffs = R.random_scalars(t)
    share = {
        i: sum(c * pow(i, m, R.L) for m, c in enumerate(coeffs)) % R.L for i in range(1, k + 1)
    }
    pk = R.smul_base(coeffs[0])
    cols = encode_rows(np.arange(10).reshape(10, 1), 10)
    ct, _ = encrypt_points(pk, cols)
    for ids in ((1, 2), (1, 3), (2, 3), (1, 2, 3)):
        lam = lagrange_at_zero(ids)
        shares = [decryption_shares(lj * share[i] % R.L, ct) for i, lj in zip(ids, lam)]
        assert combine_weighted_shares(ct, shares) == cols
    # shares weighted for another set do not decrypt
    lam = lagrange_at_zero((1, 2))
    wrong = [decryption_shares(lj * share[i] % R.L, ct) for i, lj in zip((1, 3), lam)]
    assert combine_weighted_shares(ct, wrong) != cols
    with pytest.raises(ValueError, match="distinct"):
        lagrange_at_zero([1, 1])
