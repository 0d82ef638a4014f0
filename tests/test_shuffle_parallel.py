"""The chunked prover of the proof of shuffle (issue 28 item 5): per-chunk seeded randomness,
the chain's prefix scalars as a parallel scan, responses and sums per chunk. Whatever the number
of chunks, the proof is the same protocol: it verifies and has the same shape."""

from __future__ import annotations

import itertools
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from mpc import ristretto as R
from mpc.elgamal import decode_rows, decrypt, encode_rows, encrypt_points, keygen
from mpc.mixnet.proofs.shuffle.prover import random_permutation, shuffle_and_prove
from mpc.mixnet.proofs.shuffle.verifier import verify_shuffle
from mpc.mixnet.schema import VerifyError, scalars_blob, shuffle_generators

SESS = b"\x05" * 64


def _setup(n: int, width: int = 1, bound: int = 50):
    x, pk = keygen()
    rows = np.random.default_rng(n).integers(0, bound, (n, width))
    ct, _ = encrypt_points(pk, encode_rows(rows, bound))
    return x, pk, rows, ct, shuffle_generators(SESS, "b", n)


def _shape(proof: dict) -> dict:
    return {k: [len(x) for x in v] if isinstance(v, list) else len(v) for k, v in proof.items()}


def test_workers_3_process_pool_verifies_and_has_the_one_worker_shape() -> None:
    x, pk, rows, ct, gens = _setup(n=31, width=12, bound=2**31)
    out3, proof3 = shuffle_and_prove(SESS, 1, "b", pk, ct, gens, workers=3)
    verify_shuffle(SESS, 1, "b", pk, ct, out3, proof3, gens)
    out1, proof1 = shuffle_and_prove(SESS, 1, "b", pk, ct, gens, workers=1)
    verify_shuffle(SESS, 1, "b", pk, ct, out1, proof1, gens)
    assert _shape(proof3) == _shape(proof1)
    assert _shape(proof1)["chat"] == 32 * 31 and _shape(proof1)["s4"] == [32] * ct.w and ct.w > 1
    for out in (out1, out3):
        got, ok = decode_rows(decrypt(x, out), 12, 2**31)
        assert ok.all() and sorted(map(tuple, got.tolist())) == sorted(map(tuple, rows.tolist()))


@pytest.mark.parametrize("n,workers", [(2, 3), (3, 3), (11, 3), (17, 5), (9, 9)])
def test_any_chunking_verifies_and_applies_the_permutation(n: int, workers: int) -> None:
    x, pk, rows, ct, gens = _setup(n=n)
    perm = random_permutation(n)
    with ThreadPoolExecutor(workers) as pool:  # the chunks as the process pool runs them
        out, proof = shuffle_and_prove(SESS, 2, "b", pk, ct, gens, workers, pool, perm=perm)
    verify_shuffle(SESS, 2, "b", pk, ct, out, proof, gens)
    got, _ = decode_rows(decrypt(x, out), 1, 50)
    assert got[:, 0].tolist() == [rows[k, 0] for k in perm]  # output i is input perm[i]


def test_a_wrong_chunk_response_is_rejected() -> None:
    """Chunks are combined into one proof: a response of the second chunk off by one fails."""
    _, pk, _, ct, gens = _setup(n=12)
    with ThreadPoolExecutor(3) as pool:
        out, proof = shuffle_and_prove(SESS, 3, "b", pk, ct, gens, 3, pool)
    bad = dict(proof)
    s = R.scalar_from_bytes(proof["shat"][32 * 5 : 32 * 6])
    bad["shat"] = proof["shat"][: 32 * 5] + scalars_blob([s + 1]) + proof["shat"][32 * 6 :]
    with pytest.raises(VerifyError):
        verify_shuffle(SESS, 3, "b", pk, ct, out, bad, gens)


def test_seeded_scalars_deterministic_in_range_and_separated() -> None:
    seed = bytes(range(32))
    a = R.seeded_scalars(seed, b"rho", 50)
    assert a == R.seeded_scalars(seed, b"rho", 50)
    assert R.seeded_scalars(seed, b"rho", 10) == a[:10]  # a prefix of the same stream
    assert all(0 <= s < R.L for s in a) and len(set(a)) == 50
    assert not set(a) & set(R.seeded_scalars(seed, b"rhat", 50))
    assert not set(a) & set(R.seeded_scalars(bytes(32), b"rho", 50))
    with pytest.raises(ValueError, match="seed of 16 bytes"):
        R.seeded_scalars(bytes(16), b"rho", 1)


def test_random_permutation_is_a_uniform_permutation() -> None:
    p = random_permutation(1000)
    assert sorted(p) == list(range(1000))
    counts = Counter(tuple(random_permutation(3)) for _ in range(6000))
    assert set(counts) == set(itertools.permutations(range(3)))
    chi2 = sum((c - 1000) ** 2 / 1000 for c in counts.values())
    assert chi2 < 30  # 5 degrees of freedom: p < 2e-5
