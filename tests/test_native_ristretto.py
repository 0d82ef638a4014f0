"""Native ristretto255 extension (mpc/_ristretto.c) against RFC 9496 and libsodium (rbcl).

Differential: decode/validity agree with libsodium's checks in ``mpc.ristretto`` on random and
edge-case encodings; MSM agrees with the libsodium sum of scalar multiplications for scalars
0, 1, L-1 and random ones, for sizes on both sides of the Straus/Pippenger switch. The
``group_backend`` fixture runs the mix-net proof checks on both backends. Torsion-like inputs
(a pure-Python RFC 9496 reference builds them): P + T for the eight Edwards torsion points T in
the extension's point layout (same element, same bytes as libsodium's P, for T in E[4]), the
encodings of those representatives and of E[8] (accepted by the extension exactly when by
libsodium), and MSM over torsion-shifted representatives (equal to libsodium's).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc import ristretto as R

N = pytest.importorskip("mpc._ristretto", reason="native extension not built")

P = 2**255 - 19

# RFC 9496, Appendix A.1: encodings of 0*B .. 15*B
MULTIPLES = """
0000000000000000000000000000000000000000000000000000000000000000
e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76
6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919
94741f5d5d52755ece4f23f044ee27d5d1ea1e2bd196b462166b16152a9d0259
da80862773358b466ffadfe0b3293ab3d9fd53c5ea6c955358f568322daf6a57
e882b131016b52c1d3337080187cf768423efccbb517bb495ab812c4160ff44e
f64746d3c92b13050ed8d80236a7f0007c3b3f962f5ba793d19a601ebb1df403
44f53520926ec81fbd5a387845beb7df85a96a24ece18738bdcfa6a7822a176d
903293d8f2287ebe10e2374dc1a53e0bc887e592699f02d077d5263cdd55601c
02622ace8f7303a31cafc63f8fc48fdc16e1c8c8d234b2f0d6685282a9076031
20706fd788b2720a1ed2a5dad4952b01f413bcf0e7564de8cdc816689e2db95f
bce83f8ba5dd2fa572864c24ba1810f9522bc6004afe95877ac73241cafdab42
e4549ee16b9aa03099ca208c67adafcafa4c3f3e4e5303de6026e3ca8ff84460
aa52e000df2e16f55fb1032fc33bc42742dad6bd5a8fc0be0167436c5948501f
46376b80f409b29dc2b5f6f0c52591990896e5716f41477cd30085ab7f10301e
e0c418f7c8d9c4cdd7395b93ea124f3ad99021bb681dfc3302a9d99a2e53e64e
""".split()

# RFC 9496, Appendix A.2: encodings that must be rejected (non-canonical field encodings,
# negative field elements, non-square x^2, negative xy, s = -1 giving y = 0)
BAD = """
00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff
ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f
f3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f
edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f
0100000000000000000000000000000000000000000000000000000000000000
01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f
ed57ffd8c914fb201471d1c3d245ce3c746fcbe63a3679d51b6a516ebebe0e20
c34c4e1826e5d403b78e246e88aa051c36ccf0aafebffe137d148a2bf9104562
c940e5a4404157cfb1628b108db051a8d439e1a421394ec4ebccb9ec92a8ac78
47cfc5497c53dc8e61c91d17fd626ffb1c49e2bca94eed052281b510b1117a24
f1c6165d33367351b0da8f6e4511010c68174a03b6581212c71c0e1d026c3c72
87260f7a2f12495118360f02c26a470f450dadf34a413d21042b43b9d93e1309
26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371
4eac077a713c57b4f4397629a4145982c661f48044dd3f96427d40b147d9742f
de6a7b00deadc788eb6b6c8d20c0ae96c2f2019078fa604fee5b87d6e989ad7b
bcab477be20861e01e4a0e295284146a510150d9817763caf1a6f4b422d67042
2a292df7e32cababbd9de088d1d1abec9fc0440f637ed2fba145094dc14bea08
f4a9e534fc0d216c44b218fa0c42d99635a0127ee2e53c712f70609649fdff22
8268436f8c4126196cf64b3c7ddbda90746a378625f9813dd9b8457077256731
2810e5cbc2cc4d4eece54f61c6f69758e289aa7ab440b3cbeaa21995c2f4232b
3eb858e78f5a7254d8c9731174a94f76755fd3941c0ac93735c07ba14579630e
a45fdc55c76448c049a1ab33f17023edfb2be3581e9c7aade8a6125215e04220
d483fe813c6ba647ebbfd3ec41adca1c6130c2beeee9d9bf065c8d151c5f396e
8a2e1d30050198c65a54483123960ccc38aef6848e1ec8f5f780e8523769ba32
32888462f8b486c68ad7dd9610be5192bbeaf3b443951ac1a8118419d9fa097b
227142501b9d4355ccba290404bde41575b037693cef1f438c47f8fbf35d1165
5c37cc491da847cfeb9281d407efc41e15144c876e0170b499a96a22ed31e01e
445425117cb8c90edcbc7c1cc0e74f747f2c1efa5630a967c64f287792a48a4b
ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f
""".split()


def _native_valid(p: bytes, allow_identity: bool = True) -> bool:
    return not isinstance(N.decode(p, allow_identity), int)


def _sb(scalars: list[int]) -> bytes:
    return b"".join((s % R.L).to_bytes(32, "little") for s in scalars)


def _ref_msm(scalars: list[int], points: list[bytes]) -> bytes:
    """Reference: libsodium, one multiplication per term (zero products skipped)."""
    acc = R.IDENTITY
    for s, p in zip(scalars, points):
        if s % R.L and p != R.IDENTITY:
            acc = R.add(acc, R.smul(s, p))
    return acc


def test_rfc9496_multiples_decode_encode_and_msm() -> None:
    enc = [bytes.fromhex(h) for h in MULTIPLES]
    assert enc[1] == R.G
    table = N.decode(b"".join(enc), True)
    assert N.encode(table) == b"".join(enc)  # decode/encode round trip, identity included
    g = N.decode(R.G, False)
    for k, e in enumerate(enc):
        assert N.msm(_sb([k]), g) == e  # k * B by the MSM (Straus)
    assert N.msm(_sb([k for k in range(1, 16)] * 4), N.decode(b"".join([R.G] * 60), False)) == (
        R.smul_base(4 * 120)  # Pippenger path (n >= 48)
    )


def test_rfc9496_bad_encodings_rejected() -> None:
    for h in BAD:
        b = bytes.fromhex(h)
        assert not _native_valid(b), h
        assert not R.is_valid(b), h
    blob = b"".join([R.G, bytes.fromhex(BAD[7]), R.G])
    assert N.decode(blob, True) == 1  # index of the first invalid element


def test_identity_rule() -> None:
    assert N.decode(R.IDENTITY, False) == 0
    assert _native_valid(R.IDENTITY, True)
    with pytest.raises(R.GroupError, match=r"here\[1\]"):
        R.decode_points([R.G, R.IDENTITY], "here")


def test_non_canonical_aliases_rejected() -> None:
    for h in MULTIPLES[1:]:
        v = int.from_bytes(bytes.fromhex(h), "little")
        for alias in (v + P, 2 * P - v, P - v):  # same s mod p / -s: never canonical
            if alias < 2**256:
                assert not _native_valid(alias.to_bytes(32, "little"))
        top = bytearray(bytes.fromhex(h))
        top[31] |= 0x80  # libsodium 1.0.18 ignores this bit; RFC 9496 and we do not
        assert not _native_valid(bytes(top))
    for v in range(P, 2**255):
        assert not _native_valid(v.to_bytes(32, "little"))


@settings(max_examples=400, deadline=None)
@given(st.binary(min_size=32, max_size=32))
def test_decode_agrees_with_libsodium_on_random_bytes(data: bytes) -> None:
    assert _native_valid(data) == R.is_valid(data)
    if R.is_valid(data):
        assert N.encode(N.decode(data, True)) == data


@settings(max_examples=100, deadline=None)
@given(st.integers(1, R.L - 1))
def test_decode_agrees_on_valid_points(s: int) -> None:
    p = R.smul_base(s)
    assert N.encode(N.decode(p, False)) == p
    v = int.from_bytes(p, "little")
    assert not _native_valid(((P - v) % P).to_bytes(32, "little"))  # negative s


EDGE = [0, 1, 2, R.L - 1, R.L - 2, 2**252, (R.L - 1) // 2]


@pytest.mark.parametrize("n", [1, 2, 3, 17, 47, 48, 49, 130, 700])
def test_msm_matches_libsodium(n: int) -> None:
    pts = [R.hash_to_point(b"native-msm", i.to_bytes(4, "little")) for i in range(n)]
    scal = R.random_scalars(n)
    for i in range(min(n, len(EDGE))):  # edge scalars mixed in
        scal[i] = EDGE[i]
    got = N.msm(_sb(scal), N.decode(b"".join(pts), False))
    assert got == _ref_msm(scal, pts)


def test_msm_edge_cases() -> None:
    q = R.hash_to_point(b"q")
    tq = N.decode(q, False)
    assert N.msm(_sb([0]), tq) == R.IDENTITY
    assert N.msm(_sb([1]), tq) == q
    assert N.msm(_sb([R.L - 1]), tq) == R.neg(q)
    assert N.msm(b"", b"") == R.IDENTITY
    assert N.msm(_sb([3, R.L - 3]), N.decode(q + q, False)) == R.IDENTITY  # cancellation
    # all scalars L-1 in the Pippenger range
    pts = [R.hash_to_point(b"e", bytes([i])) for i in range(64)]
    assert N.msm(_sb([R.L - 1] * 64), N.decode(b"".join(pts), False)) == R.neg(R.sum_points(pts))
    with pytest.raises(ValueError, match="2\\^253"):
        N.msm(b"\xff" * 32, tq)
    with pytest.raises(ValueError, match="counts differ"):
        N.msm(_sb([1, 2]), tq)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, R.L - 1), min_size=1, max_size=70), st.binary(min_size=4, max_size=4)
)
def test_msm_hypothesis(scal: list[int], seed: bytes) -> None:
    pts = [R.hash_to_point(b"hyp", seed, i.to_bytes(4, "little")) for i in range(len(scal))]
    assert N.msm(_sb(scal), N.decode(b"".join(pts), False)) == _ref_msm(scal, pts)


def test_python_msm_same_errors_on_both_backends() -> None:
    q = R.hash_to_point(b"q")
    bad = bytes.fromhex(BAD[12])
    prev = R.set_backend("libsodium")
    try:
        for backend in ("libsodium", "native"):
            R.set_backend(backend)
            assert R.msm([5, 7], [q, R.G]) == R.add(R.smul(5, q), R.smul_base(7))
            for scal, pts in (([1, 2], [q, bad]), ([1, 2], [q, R.IDENTITY]), ([1, 0], [q, q])):
                with pytest.raises(R.GroupError, match=r"eq\[1\]: invalid element or zero"):
                    R.msm(scal, pts, "eq")
    finally:
        R.set_backend(prev)


def test_backend_line_and_forced_fallback() -> None:
    prev = R.set_backend("libsodium")
    try:
        assert R.backend_line() == (
            "group backend: libsodium (forced by SDP_GROUP_BACKEND=libsodium)"
        )
        assert os.environ["SDP_GROUP_BACKEND"] == "libsodium"
        R.set_backend("native")
        assert R.backend_line() == "group backend: native MSM"
    finally:
        R.set_backend(prev)


@pytest.fixture(params=["native", "libsodium"])
def group_backend(request: pytest.FixtureRequest):  # noqa: ANN201
    """Run a test on each backend (the libsodium one is what runs without the extension)."""
    prev = R.set_backend(request.param)
    yield request.param
    R.set_backend(prev)


def test_mixnet_checks_on_both_backends(group_backend: str) -> None:
    import copy

    import numpy as np

    from mpc.elgamal import encode_rows, encrypt_points, keygen
    from mpc.mixnet.proofs.shuffle.prover import shuffle_and_prove
    from mpc.mixnet.proofs.shuffle.verifier import verify_mix_chain, verify_shuffle
    from mpc.mixnet.schema import VerifyError, shuffle_generators

    sess, n = b"\x09" * 64, 30  # 30 ciphertexts: the batched equation has > 48 terms
    x, pk = keygen()
    ct, _ = encrypt_points(pk, encode_rows(np.arange(n).reshape(n, 1), n))
    gens = shuffle_generators(sess, "b", n)
    lists, proofs = [ct], []
    for step in (1, 2):
        out, proof = shuffle_and_prove(sess, step, "b", pk, lists[-1], gens)
        lists.append(out)
        proofs.append(proof)
    verify_shuffle(sess, 1, "b", pk, lists[0], lists[1], proofs[0], gens)
    verify_mix_chain(sess, "b", pk, lists, [1, 2], proofs, gens)
    bad = copy.deepcopy(lists[2])
    bad.a[0][3] = R.add(bad.a[0][3], R.G)  # one output changed: not a re-encryption
    with pytest.raises(VerifyError, match=r"mix\[2\]\.b: .*\(eq\. \d"):
        verify_mix_chain(sess, "b", pk, [lists[0], lists[1], bad], [1, 2], proofs, gens)
    bad.a[0][3] = bytes.fromhex(BAD[20])  # invalid encoding: named with its index
    with pytest.raises(VerifyError, match=r"a\[0\]\[3\]|\[3\]"):
        verify_shuffle(sess, 2, "b", pk, lists[1], bad, proofs[1], gens)


@pytest.mark.parametrize("n", [1, 2, 9, 300])
def test_constant_time_msm_matches_libsodium(n: int) -> None:
    pts = [R.hash_to_point(b"ct-msm", i.to_bytes(4, "little")) for i in range(n)]
    scal = R.random_scalars(n)
    for i in range(min(n, len(EDGE))):
        scal[i] = EDGE[i]
    assert N.ct_msm(_sb(scal), N.decode(b"".join(pts), False)) == _ref_msm(scal, pts)


def test_constant_time_fixed_base_matches_libsodium() -> None:
    q = R.hash_to_point(b"fixed-q")
    tg, tq = N.ct_table(R.G), N.ct_table(q)
    xs = EDGE + R.random_scalars(20)
    ys = R.random_scalars(len(xs))
    adds = [R.hash_to_point(b"addend", bytes([i])) for i in range(len(xs))]
    one = N.ct_mul((tg,), (_sb(xs),), None)
    two = N.ct_mul((tg, tq), (_sb(xs), _sb(ys)), N.decode(b"".join(adds), False))
    for i, (x, y) in enumerate(zip(xs, ys)):
        assert one[32 * i : 32 * i + 32] == R.smul_base(x)
        assert two[32 * i : 32 * i + 32] == _ref_msm([x, y, 1], [R.G, q, adds[i]])
    with pytest.raises(ValueError, match="valid non-identity"):
        N.ct_table(R.IDENTITY)


def test_prover_helpers_agree_across_backends(group_backend: str) -> None:
    q = R.hash_to_point(b"h")
    xs, ys = R.random_scalars(12), R.random_scalars(12)
    adds = [R.hash_to_point(b"m", bytes([i])) for i in range(12)]
    got = R.smul_fixed_many([(xs, R.G), (ys, q)], adds, "t")
    assert got == [_ref_msm([x, y, 1], [R.G, q, a]) for x, y, a in zip(xs, ys, adds)]
    assert R.msm_secret(xs, adds, "s") == _ref_msm(xs, adds)


def test_client_proofs_batched_and_bad_ones_found(group_backend: str) -> None:
    """Many client proofs in one random linear combination; halving names each bad one."""
    import numpy as np

    from mpc.elgamal import encode_rows, encrypt_points, keygen
    from mpc.mixnet.proof_checks import screen_submissions
    from mpc.mixnet.proofs.client_pok import client_prove, verify_client_proof
    from mpc.mixnet.schema import bound_client_id

    sess, n = b"\x05" * 64, 24
    _, pk = keygen()
    cols = encode_rows(np.arange(n).reshape(n, 1), n)
    ct, rs = encrypt_points(pk, [cols[0], cols[0]])  # width 2: two components per proof
    subs = []
    for i in range(n):
        a, b = ct.row(i)
        proof = client_prove(sess, bound_client_id("p", "c"), "v", i, a, b, [r[i] for r in rs])
        subs.append(
            {"client": "c", "batch": "v", "index": i, "ct": {"a": a, "b": b}, "proof": proof}
        )
    specs = {"v": {"components": 2}}
    parties = ["p"] * n  # the submitting party (the TLS peer) namespaces the ids
    acc, rej = screen_submissions(sess, specs, subs, parties=parties)
    assert acc == {"v": list(range(n))} and rej == []
    bound = bound_client_id("p", "c")
    assert verify_client_proof(sess, bound, "v", 0, *ct.row(0), subs[0]["proof"]) is None
    # wrong response in one component of two proofs; another proof bound to another index
    for k in (3, 17):
        s1 = R.scalar_from_bytes(subs[k]["proof"]["s"][1])
        subs[k]["proof"]["s"][1] = R.scalar_bytes(s1 + 1)
    subs[9]["index"] = 99
    acc, rej = screen_submissions(sess, specs, subs, parties=parties)
    assert sorted(r["index"] for r in rej) == [3, 9, 17]
    assert all("does not verify" in r["reason"] for r in rej)
    assert acc["v"] == [i for i in range(n) if i not in (3, 9, 17)]
    subs[5]["proof"]["t"][0] = R.IDENTITY  # malformed: named without batching
    _, rej = screen_submissions(sess, specs, subs, parties=parties)
    assert next(r for r in rej if r["index"] == 5)["reason"].startswith("invalid element")


# ---------------------------------------------------------------- torsion-like inputs
# A pure-Python RFC 9496 reference (sections 4.2-4.3) on Edwards coordinates, to build points
# the decoder never returns: P + T for the eight Edwards torsion points T. ristretto255
# identifies P with P + T for T in E[4] (the four points of order dividing 4); the four of
# order 8 leave the even subgroup 2E, where the encoding is not the group's.

D_ED = -121665 * pow(121666, -1, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)


def _neg(v: int) -> bool:
    return v % P & 1 == 1


def _sqrt_ratio_m1(u: int, v: int) -> tuple[bool, int]:
    """RFC 9496 4.2: (was_square, non-negative r) with r^2 v = u (or SQRT_M1 u)."""
    r = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    check = v * r * r % P
    flipped = check in ((-u) % P, (-u * SQRT_M1) % P)
    if flipped:
        r = r * SQRT_M1 % P
    r = (P - r) % P if _neg(r) else r
    return check == u % P or check == (-u) % P, r


INVSQRT_A_MINUS_D = _sqrt_ratio_m1(1, (-1 - D_ED) % P)[1]


def _py_decode(b: bytes) -> tuple[int, int] | None:
    """RFC 9496 4.3.1 to affine (x, y); None if rejected."""
    s = int.from_bytes(b, "little")
    if s >= P or _neg(s):
        return None
    u1, u2 = (1 - s * s) % P, (1 + s * s) % P
    v = (-D_ED * u1 * u1 - u2 * u2) % P
    ok, inv = _sqrt_ratio_m1(1, v * u2 * u2 % P)
    den_x = inv * u2 % P
    den_y = inv * den_x * v % P
    x = 2 * s * den_x % P
    x = (P - x) % P if _neg(x) else x
    y = u1 * den_y % P
    if not ok or _neg(x * y) or y == 0:
        return None
    return x, y


def _py_encode(x: int, y: int) -> bytes:
    """RFC 9496 4.3.2 from affine (x, y) (Z = 1, T = xy)."""
    z, t = 1, x * y % P
    u1 = (z + y) * (z - y) % P
    u2 = x * y % P
    _, inv = _sqrt_ratio_m1(1, u1 * u2 * u2 % P)
    den1, den2 = inv * u1 % P, inv * u2 % P
    z_inv = den1 * den2 * t % P
    if _neg(t * z_inv):  # rotate
        x, y, den_inv = y * SQRT_M1 % P, x * SQRT_M1 % P, den1 * INVSQRT_A_MINUS_D % P
    else:
        den_inv = den2
    if _neg(x * z_inv):
        y = (-y) % P
    s = den_inv * (z - y) % P
    s = (P - s) % P if _neg(s) else s
    return s.to_bytes(32, "little")


def _ed_add(p: tuple[int, int], q: tuple[int, int]) -> tuple[int, int]:
    """Twisted Edwards addition, a = -1 (complete on edwards25519)."""
    (x1, y1), (x2, y2) = p, q
    k = D_ED * x1 * x2 * y1 * y2 % P
    return (
        (x1 * y2 + y1 * x2) * pow(1 + k, -1, P) % P,
        (y1 * y2 + x1 * x2) * pow(1 - k, -1, P) % P,
    )


def _ed_mul(k: int, p: tuple[int, int]) -> tuple[int, int]:
    acc = (0, 1)
    for bit in bin(k)[2:]:
        acc = _ed_add(acc, acc)
        if bit == "1":
            acc = _ed_add(acc, p)
    return acc


def _torsion() -> list[tuple[int, int]]:
    """The eight points of E[8]: 2T = (+-sqrt(-1), 0) gives y^2 = -x^2 and, on the curve,
    d x^4 - 2 x^2 - 1 = 0, so x^2 = (1 +- sqrt(1 + d)) / d."""
    pts = [(0, 1), (0, P - 1), (SQRT_M1, 0), (P - SQRT_M1, 0)]
    ok, root = _sqrt_ratio_m1((1 + D_ED) % P, 1)
    assert ok
    for sgn in (1, -1):
        x2 = (1 + sgn * root) * pow(D_ED, -1, P) % P
        ok_x, x = _sqrt_ratio_m1(x2, 1)
        ok_y, y = _sqrt_ratio_m1((-x2) % P, 1)
        if ok_x and ok_y:
            pts += [(x, y), (P - x, y), (x, P - y), (P - x, P - y)]
    assert len(pts) == 8 and len(set(pts)) == 8
    for x, y in pts:  # on the curve, and 8 T = O
        assert (-x * x + y * y - 1 - D_ED * x * x * y * y) % P == 0
        assert _ed_mul(8, (x, y)) == (0, 1)
    return pts


TORSION = _torsion()
E4 = [t for t in TORSION if _ed_mul(4, t) == (0, 1)]


def _table(points: list[tuple[int, int]]) -> bytes:
    """The extension's decoded form (ge_niels: y + x, y - x, 2 d x y; five 51-bit limbs)."""
    out = bytearray()
    for x, y in points:
        for v in ((y + x) % P, (y - x) % P, 2 * D_ED * x * y % P):
            for i in range(5):
                out += ((v >> (51 * i)) & (2**51 - 1)).to_bytes(8, "little")
    assert len(out) == len(points) * N.POINT_SIZE
    return bytes(out)


def _sample_points() -> list[bytes]:
    return [R.IDENTITY, R.G, bytes.fromhex(MULTIPLES[7])] + [
        R.hash_to_point(b"torsion", bytes([i])) for i in range(5)
    ]


def test_python_reference_matches_libsodium() -> None:
    assert len(E4) == 4 and INVSQRT_A_MINUS_D == int(
        "54469307008909316920995813868745141605393597292927456921205312896311721017578"
    )
    for enc in _sample_points():
        xy = _py_decode(enc)
        assert xy is not None and _py_encode(*xy) == enc
        assert N.encode(_table([xy])) == enc  # the table layout is the extension's
    for h in BAD:
        assert _py_decode(bytes.fromhex(h)) is None


def test_torsion_coset_encodes_like_the_point() -> None:
    """P + T, T in E[4], is the same ristretto255 element: the extension's encoder gives
    libsodium's bytes for P; P + T for T of order 8 is outside 2E and encodes elsewhere, the
    same bytes as the RFC formula (no undefined behaviour in the encoder)."""
    for enc in _sample_points():
        xy = _py_decode(enc)
        assert xy is not None
        for t in TORSION:
            q = _ed_add(xy, t)
            got = N.encode(_table([q]))
            assert got == _py_encode(*q)
            if t in E4:
                assert got == enc
            else:
                assert got != enc


def test_torsion_representative_encodings_rejected_or_same_element() -> None:
    """Byte strings a sloppy encoder would produce for the representatives P + T: the
    Jacobi-quartic s = +-sqrt((1 - y)/(1 + y)) of each (the canonical encoding is this s of one
    representative of E[4]), x/(1 + y) and (1 - y)/x, both signs; and the eight Ed25519
    encodings of E[8]. The extension, libsodium and the RFC reference accept exactly the same
    ones, and an accepted one is the canonical encoding of its element in both."""
    cands: set[bytes] = set()
    for enc in _sample_points():
        xy = _py_decode(enc)
        assert xy is not None
        for t in TORSION:
            x, y = _ed_add(xy, t)
            vals = [x * pow(1 + y, -1, P) if y != P - 1 else 0, (1 - y) * pow(x, -1, P) if x else 0]
            square, s = _sqrt_ratio_m1((1 - y) % P, (1 + y) % P)
            if square:
                vals.append(s)
            for v in vals:
                cands |= {(v % P).to_bytes(32, "little"), (-v % P).to_bytes(32, "little")}
    for x, y in TORSION:  # Ed25519 point encodings: y with the sign of x in bit 255
        cands.add((y | (x & 1) << 255).to_bytes(32, "little"))
    accepted = 0
    for c in sorted(cands):
        ok = R.is_valid(c)
        assert _native_valid(c) == ok == (_py_decode(c) is not None), c.hex()
        if ok:
            accepted += 1
            assert N.encode(N.decode(c, True)) == c
    assert accepted >= len(_sample_points()) and len(cands) - accepted > 100


@pytest.mark.parametrize("n", [5, 47, 48, 120])
def test_msm_on_torsion_shifted_representatives_matches_libsodium(n: int) -> None:
    """MSM over P_i + T_i (T_i in E[4], so the same elements) equals libsodium's sum of
    s_i P_i, on the Straus and Pippenger paths and the constant-time MSM; scalars 0, 1, L-1
    included."""
    pts = [R.hash_to_point(b"tmsm", i.to_bytes(4, "little")) for i in range(n - 1)] + [R.G]
    scal = R.random_scalars(n)
    for i in range(min(n, len(EDGE))):
        scal[i] = EDGE[i]
    shifted = []
    for i, p in enumerate(pts):
        xy = _py_decode(p)
        assert xy is not None
        shifted.append(_ed_add(xy, E4[i % 4]))
    table = _table(shifted)
    want = _ref_msm(scal, pts)
    assert N.msm(_sb(scal), table) == want
    assert N.ct_msm(_sb(scal), table) == want
    # the torsion points themselves (the identity's representatives) contribute nothing
    torsion_only = _table([E4[i % 4] for i in range(n)])
    assert N.msm(_sb(scal), torsion_only) == R.IDENTITY
    assert N.encode(torsion_only) == R.IDENTITY * n
