"""Proof of shuffle, client proofs and decryption-share proofs: completeness and soundness checks."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from mpc import ristretto as R
from mpc.elgamal import decode_rows, decrypt, decryption_shares, encode_rows, encrypt_points, keygen
from mpc.mixnet.proofs.client_pok import client_prove, verify_client_proof
from mpc.mixnet.proofs.dleq import dec_share_prove, verify_dec_shares
from mpc.mixnet.proofs.shuffle.prover import shuffle_and_prove
from mpc.mixnet.proofs.shuffle.verifier import verify_shuffle
from mpc.mixnet.schema import (
    Ciphertexts,
    VerifyError,
    blob_scalars,
    scalars_blob,
    shuffle_generators,
)

SESS = b"\x07" * 64


def _setup(n: int = 24, width: int = 1, bound: int = 50, seed: int = 0):
    x, pk = keygen()
    rows = np.random.default_rng(seed).integers(0, bound, (n, width))
    ct, _ = encrypt_points(pk, encode_rows(rows, bound))
    gens = shuffle_generators(SESS, "b", n)
    return x, pk, rows, ct, gens


def _multiset(rows: np.ndarray) -> list:
    return sorted(map(tuple, rows.tolist()))


@pytest.mark.parametrize("width,bound", [(1, 50), (12, 2**31)])
def test_shuffle_correct_and_verifies(width: int, bound: int) -> None:
    x, pk, rows, ct, gens = _setup(n=16, width=width, bound=bound)
    out, proof = shuffle_and_prove(SESS, 0, "b", pk, ct, gens)
    verify_shuffle(SESS, 0, "b", pk, ct, out, proof, gens)
    got, valid = decode_rows(decrypt(x, out), width, bound)
    assert valid.all() and _multiset(got) == _multiset(rows)
    assert out.a != ct.a  # re-encrypted


def test_shuffle_with_process_pool() -> None:
    x, pk, rows, ct, gens = _setup(n=40)
    out, proof = shuffle_and_prove(SESS, 1, "b", pk, ct, gens, workers=2)
    verify_shuffle(SESS, 1, "b", pk, ct, out, proof, gens, workers=2)
    assert _multiset(decode_rows(decrypt(x, out), 1, 50)[0]) == _multiset(rows)


def _tampered_outputs(out: Ciphertexts, other: Ciphertexts):
    swap = copy.deepcopy(out)
    swap.a[0][0], swap.a[0][1] = swap.a[0][1], swap.a[0][0]
    swap.b[0][0], swap.b[0][1] = swap.b[0][1], swap.b[0][0]
    yield "swap two outputs", swap
    rep = copy.deepcopy(out)
    rep.a[0][3], rep.b[0][3] = other.a[0][0], other.b[0][0]
    yield "replace one ciphertext", rep
    dup = copy.deepcopy(out)
    dup.a[0][3], dup.b[0][3] = dup.a[0][4], dup.b[0][4]
    yield "duplicate a ciphertext", dup
    drop = Ciphertexts([c[:-1] for c in out.a], [c[:-1] for c in out.b])
    yield "drop a ciphertext", drop


def test_tampered_outputs_rejected() -> None:
    x, pk, rows, ct, gens = _setup()
    out, proof = shuffle_and_prove(SESS, 0, "b", pk, ct, gens)
    other, _ = encrypt_points(pk, encode_rows(np.array([[7]]), 50))
    for what, bad in _tampered_outputs(out, other):
        with pytest.raises(VerifyError, match=r"mix\[0\]\.b"):
            verify_shuffle(SESS, 0, "b", pk, ct, bad, proof, gens)
        del what


@pytest.mark.parametrize(
    "key", ["s1", "s2", "s3", "shat", "sprime", "s4", "t3", "chat", "that", "c"]
)
def test_tampered_proof_rejected(key: str) -> None:
    x, pk, rows, ct, gens = _setup(n=12)
    out, proof = shuffle_and_prove(SESS, 0, "b", pk, ct, gens)
    bad = dict(proof)
    if key in ("s1", "s2", "s3"):
        bad[key] = R.scalar_bytes(R.scalar_from_bytes(proof[key]) + 1)
    elif key == "s4":
        bad[key] = [R.scalar_bytes(R.scalar_from_bytes(proof[key][0]) + 1)]
    elif key in ("shat", "sprime"):
        v = blob_scalars(proof[key], 12, key)
        v[5] = (v[5] + 1) % R.L
        bad[key] = scalars_blob(v)
    elif key == "t3":
        bad[key] = R.add(proof[key], R.G)
    else:
        pts = [proof[key][32 * i : 32 * i + 32] for i in range(12)]
        pts[5] = R.add(pts[5], R.G)
        bad[key] = b"".join(pts)
    with pytest.raises(VerifyError, match=r"mix\[0\]\.b"):
        verify_shuffle(SESS, 0, "b", pk, ct, out, bad, gens)


def test_wrong_step_or_session_rejected() -> None:
    x, pk, rows, ct, gens = _setup(n=8)
    out, proof = shuffle_and_prove(SESS, 0, "b", pk, ct, gens)
    with pytest.raises(VerifyError):
        verify_shuffle(SESS, 1, "b", pk, ct, out, proof, gens)
    with pytest.raises(VerifyError):
        verify_shuffle(b"\x08" * 64, 0, "b", pk, ct, out, proof, gens)


def test_invalid_element_in_proof_named() -> None:
    x, pk, rows, ct, gens = _setup(n=8)
    out, proof = shuffle_and_prove(SESS, 0, "b", pk, ct, gens)
    bad = dict(proof)
    bad["chat"] = b"\xff" * 32 + proof["chat"][32:]
    with pytest.raises(VerifyError, match="chat"):
        verify_shuffle(SESS, 0, "b", pk, ct, out, bad, gens)


@pytest.mark.parametrize("cheat", ["replace", "duplicate", "drop"])
def test_cheating_mix_server_caught(cheat: str) -> None:
    """The server mixes a modified input (honest proof for the wrong statement)."""
    x, pk, rows, ct, gens = _setup(n=10)
    other, _ = encrypt_points(pk, encode_rows(np.array([[49]]), 50))
    mod = copy.deepcopy(ct)
    if cheat == "replace":
        mod.a[0][2], mod.b[0][2] = other.a[0][0], other.b[0][0]
    elif cheat == "duplicate":
        mod.a[0][2], mod.b[0][2] = mod.a[0][3], mod.b[0][3]
    else:
        mod = Ciphertexts([c[:-1] for c in mod.a], [c[:-1] for c in mod.b])
    out, proof = shuffle_and_prove(SESS, 0, "b", pk, mod, gens)
    with pytest.raises(VerifyError, match=r"mix\[0\]"):
        verify_shuffle(SESS, 0, "b", pk, ct, out, proof, gens)


def test_client_proof_binding() -> None:
    x, pk = keygen()
    ct, r = encrypt_points(pk, encode_rows(np.array([[3, 4]]), 10))
    a, b = ct.row(0)
    proof = client_prove(SESS, "alice", "b", 0, a, b, [r[0][0]])
    assert verify_client_proof(SESS, "alice", "b", 0, a, b, proof) is None
    assert "client id" in verify_client_proof(SESS, "mallory", "b", 0, a, b, proof)
    assert verify_client_proof(SESS, "alice", "other", 0, a, b, proof) is not None
    assert verify_client_proof(SESS, "alice", "b", 1, a, b, proof) is not None
    assert "invalid element" in verify_client_proof(SESS, "alice", "b", 0, [b"\xff" * 32], b, proof)
    # re-randomized copy: the copier does not know the randomness
    s = R.random_scalar()
    a2, b2 = [R.add(a[0], R.smul(s, pk))], [R.add(b[0], R.smul_base(s))]
    assert verify_client_proof(SESS, "mallory", "b", 0, a2, b2, proof) is not None


def test_decryption_share_proofs() -> None:
    x, pk, rows, ct, gens = _setup(n=10)
    ds = decryption_shares(x, ct)
    proof = dec_share_prove(SESS, 1, "b", x, ct.b, ds, dset=[1, 2])
    assert verify_dec_shares(SESS, 1, "b", pk, ct.b, ds, proof, dset=[1, 2]) is None
    bad = [list(ds[0])]
    bad[0][4] = R.add(bad[0][4], R.G)
    assert verify_dec_shares(SESS, 1, "b", pk, ct.b, bad, proof, dset=[1, 2]) is not None
    assert verify_dec_shares(SESS, 2, "b", pk, ct.b, ds, proof, dset=[1, 2]) is not None
    # a share made for one decryption set does not verify for another
    assert verify_dec_shares(SESS, 1, "b", pk, ct.b, ds, proof, dset=[1, 3]) is not None


def test_weighted_shares_decrypt_with_additions_only() -> None:
    """Shares weighted by Lagrange coefficients of the set add up to the plaintexts."""
    from mpc.elgamal import combine_weighted_shares
    from mpc.mixnet.proofs.dleq import weighted_key
    from mpc.threshold import lagrange_at_zero

    x, pk, rows, ct, gens = _setup(n=6)
    # split x into a 2-of-3 sharing: f(i) = x + a1 i
    a1 = R.random_scalar()
    xs = {i: (x + a1 * i) % R.L for i in (1, 2, 3)}
    vks = {i: R.smul_base(v) for i, v in xs.items()}
    for dset in ([1, 2], [1, 3], [2, 3]):
        lam = lagrange_at_zero(dset)
        shares = []
        for j, lj in zip(dset, lam):
            xw = lj * xs[j] % R.L
            ds = decryption_shares(xw, ct)
            proof = dec_share_prove(SESS, j, "b", xw, ct.b, ds, dset=dset)
            y = weighted_key(vks[j], j, dset)
            assert verify_dec_shares(SESS, j, "b", y, ct.b, ds, proof, dset=dset) is None
            # the unweighted key does not verify a weighted share
            assert verify_dec_shares(SESS, j, "b", vks[j], ct.b, ds, proof, dset=dset) is not None
            shares.append(ds)
        plain = combine_weighted_shares(ct, shares)
        assert plain == combine_weighted_shares(ct, [decryption_shares(x, ct)])
    with pytest.raises(ValueError, match="not in the decryption set"):
        weighted_key(vks[3], 3, [1, 2])


@pytest.mark.slow
def test_shuffle_scale_with_pool() -> None:
    x, pk, rows, ct, gens = _setup(n=3000, bound=1000)
    out, proof = shuffle_and_prove(SESS, 2, "b", pk, ct, gens, workers=2)
    verify_shuffle(SESS, 2, "b", pk, ct, out, proof, gens, workers=2)
    assert _multiset(decode_rows(decrypt(x, out), 1, 1000)[0]) == _multiset(rows)
