"""Prover of the proof of shuffle (docs/spec/05-mixnet.md V-16): re-encryption shuffle with a
Terelius-Wikstrom proof (the one Verificatum uses); the proof is a ``ShuffleProof`` (S-1 keys).

Notation (additive): ``G`` base point, ``PK`` ElGamal key, ``H, H_1..H_n`` independent
generators (``mpc.mixnet.schema.shuffle_generators``). Output ``i`` is input ``psi(i)``
re-encrypted with ``rt[j][i]``. The prover publishes

- permutation commitment ``c_{psi(i)} = r_{psi(i)} G + H_i``;
- challenges ``u = scalar_vector(perm_challenge_seed(...))``, ``u'_i = u_{psi(i)}``;
- chain ``chat_i = rhat_i G + u'_i chat_{i-1}`` (``chat_0 = H``), computed in closed form
  ``chat_i = R_i G + U_i H`` with prefix scalars ``R_i = rhat_i + u'_i R_{i-1}``,
  ``U_i = u'_i U_{i-1}`` so every element is independent (parallel, no sequential chain);
- commitments ``t1 = w1 G``, ``t2 = w2 G``, ``t3 = w3 G + sum w'_i H_i``,
  ``t4a_j = w4_j PK + sum w'_i a'_{j,i}``, ``t4b_j = w4_j G + sum w'_i b'_{j,i}``,
  ``that_i = what_i G + w'_i chat_{i-1}``;
- challenge ``c`` and responses ``s1 = w1 + c sum r``, ``s2 = w2 + c R_n``,
  ``s3 = w3 + c sum u_k r_k``, ``s4_j = w4_j - c sum u'_i rt_{j,i}``,
  ``shat_i = what_i + c rhat_i``, ``sprime_i = w'_i + c u'_i``.

Cost per ciphertext (width w): see ``prover_op_counts`` (width 1: 6 variable-base, 4
fixed-base multiplications and 8 additions). Element-wise
work is split into chunks run in a process pool (``workers``) so one server uses every core;
each chunk draws its own secret scalars from a per-chunk seed, the prefix scalars are a
parallel scan, and responses and sums are computed per chunk, so the parent's serial work
per element is a few byte copies (``docs/native.md``, parallel efficiency).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np

from mpc.ct_scalar import ct_chain, ct_dot, ct_mod, ct_scan
from mpc.mixnet.proofs.shuffle.statement import ShuffleCommitments, ShuffleProof, ShuffleStatement
from mpc.mixnet.schema import Ciphertexts, scalar_vector, scalars_blob
from mpc.pools import process_pool
from mpc.ristretto import (
    G,
    L,
    add,
    chunk_ranges,
    map_chunks,
    msm_secret,
    random_scalars,
    seeded_scalars,
    smul,
    smul_base,
    smul_fixed_many,
    split_points,
    sum_points,
)


def prover_op_counts(w: int) -> dict[str, int]:
    """Group operations per ciphertext of the prover (re-encryption included)."""
    return {"V": 3 + 3 * w, "F": 3 + w, "A": 4 + 4 * w}


def random_permutation(n: int) -> list[int]:
    """Uniform permutation from the OS CSPRNG: the order of ``n`` random 128-bit keys (a tie,
    probability below n^2 / 2^129, only biases the order of the tied pair)."""
    keys = np.frombuffer(os.urandom(16 * n), dtype=np.uint64).reshape(n, 2)
    return np.lexsort((keys[:, 1], keys[:, 0])).tolist()


# ---- element-wise chunks (module level so a process pool can run them) ----
# Each chunk of outputs ``s..e`` draws its secret scalars from its own fresh 32-byte seed
# (``seeded_scalars``), so the parent draws and converts no per-element randomness; a chunk
# re-derives them in each phase instead of shipping secrets around. Results return as joined
# byte blobs and partial sums, so the parent only concatenates and adds.


def _secrets(seed: bytes, label: str, m: int) -> list[int]:
    return seeded_scalars(seed, label.encode(), m)


def _phase_a(
    seed: bytes,
    pk: bytes,
    a_in: list[bytes],
    b_in: list[bytes],
    hs: list[bytes],
) -> tuple[list[bytes], list[bytes], bytes, int]:
    """Re-encryption of a chunk of (already permuted) inputs, given as one blob per column,
    its permutation commitments ``rho_i G + H_i`` and the partial sum of ``rho``."""
    m = len(hs)
    rt = [_secrets(seed, f"rt{j}", m) for j in range(len(a_in))]
    rho = _secrets(seed, "rho", m)
    # secret scalars on fixed bases: constant time (mpc.ristretto.smul_fixed_many)
    a_out = [
        b"".join(smul_fixed_many([(rt[j], pk)], split_points(a, m, "input a"), "reenc"))
        for j, a in enumerate(a_in)
    ]
    b_out = [
        b"".join(smul_fixed_many([(rt[j], G)], split_points(b, m, "input b"), "reenc"))
        for j, b in enumerate(b_in)
    ]
    cv = b"".join(smul_fixed_many([(rho, G)], hs, "perm commitment"))
    return a_out, b_out, cv, ct_mod(sum(rho))


def _unpack(blob: bytes) -> list[int]:
    fb = int.from_bytes
    return [fb(blob[i : i + 32], "little") for i in range(0, len(blob), 32)]


def _scan(seed: bytes, useed: bytes, n: int, psi: list[int]) -> tuple[int, int, bytes]:
    """The chunk's chain prefix as an affine map ``(R, U) -> (A + B R, B U)``, and its public
    challenges ``u'_i = u_{psi(i)}`` (packed, so the later phases do not hash them again)."""
    up = scalar_vector(useed, n, psi)
    rhat = _secrets(seed, "rhat", len(psi))
    a, b = ct_scan(rhat, up)  # secret chain prefix in constant time (issue 37)
    return a, b, scalars_blob(up)


def _xg_yh(xs: Sequence[int], ys: Sequence[int], h: bytes) -> bytes:
    """``x_i G + y_i H``, joined."""
    return b"".join(smul_fixed_many([(xs, G), (ys, h)], None, "xG+yH"))


def _phase_b(
    seed: bytes,
    up_blob: bytes,
    r0: int,
    u0: int,
    h: bytes,
    hs: list[bytes],
    a_out: list[bytes],
    b_out: list[bytes],
) -> tuple[bytes, bytes, bytes, list[bytes], list[bytes], int, list[int]]:
    """Chain commitments from the chunk's start ``(R, U) = (r0, u0)``, their proof commitments,
    partial sums of t3, t4 and of ``rtil = sum u'_i rho_i``, ``rstar_j = sum u'_i rt_{j,i}``."""
    up = _unpack(up_blob)
    m = len(up)
    rhat, what, wp = (_secrets(seed, x, m) for x in ("rhat", "what", "wp"))
    x1, y1, x2, y2 = ct_chain(rhat, what, wp, up, r0, u0)  # constant time (issue 37)
    chat = _xg_yh(x1, y1, h)
    that = _xg_yh(x2, y2, h)
    t3 = msm_secret(wp, hs, "t3")  # secret scalars: a constant-time path
    t4a = [msm_secret(wp, split_points(col, m, "t4a"), "t4a") for col in a_out]
    t4b = [msm_secret(wp, split_points(col, m, "t4b"), "t4b") for col in b_out]
    rtil = ct_dot(up, _secrets(seed, "rho", m))
    rstar = [ct_dot(up, _secrets(seed, f"rt{j}", m)) for j in range(len(a_out))]
    return chat, that, t3, t4a, t4b, rtil, rstar


def _phase_c(seed: bytes, up_blob: bytes, ch: int) -> tuple[bytes, bytes]:
    """The chunk's responses ``shat_i = what_i + c rhat_i``, ``sprime_i = w'_i + c u'_i``."""
    up = _unpack(up_blob)
    m = len(up)
    rhat, what, wp = (_secrets(seed, x, m) for x in ("rhat", "what", "wp"))
    shat = scalars_blob([x + ch * y for x, y in zip(what, rhat)])
    sprime = scalars_blob([x + ch * y for x, y in zip(wp, up)])
    return shat, sprime


def shuffle_and_prove(
    sess: bytes,
    step: int,
    batch: str,
    pk: bytes,
    inp: Ciphertexts,
    gens: tuple[bytes, list[bytes]],
    workers: int = 1,
    pool: Executor | None = None,
    perm: list[int] | None = None,
) -> tuple[Ciphertexts, dict[str, Any]]:
    """Re-encrypt and permute ``inp``; return the output and its proof of shuffle.

    ``workers > 1`` runs element-wise work in a process pool (``pool`` if given, else a
    temporary one). ``perm`` (tests only) fixes the permutation.
    """
    n = inp.n
    h, hs = gens
    if n < 2:
        raise ValueError(f"shuffle {batch!r}: need at least 2 ciphertexts, got {n}")
    if len(hs) < n:
        raise ValueError(f"shuffle {batch!r}: {len(hs)} generators for {n} ciphertexts")
    hs = hs[:n]
    psi = random_permutation(n) if perm is None else list(perm)
    if perm is not None and sorted(psi) != list(range(n)):
        raise ValueError(f"shuffle {batch!r}: perm is not a permutation of 0..{n - 1}")
    own_pool = None
    if pool is None and workers > 1:
        pool = own_pool = process_pool(workers)
    try:
        return _prove(sess, step, batch, pk, inp, h, hs, psi, pool, max(1, workers))
    finally:
        if own_pool is not None:
            own_pool.shutdown()


def _prove(
    sess: bytes,
    step: int,
    batch: str,
    pk: bytes,
    inp: Ciphertexts,
    h: bytes,
    hs: list[bytes],
    psi: list[int],
    pool: Executor | None,
    workers: int,
) -> tuple[Ciphertexts, dict[str, Any]]:
    n, w = inp.n, inp.w
    chunks = chunk_ranges(n, workers if pool is not None else 1)
    seeds = [os.urandom(32) for _ in chunks]  # each chunk's secret randomness
    perm = np.asarray(psi, dtype=np.int64)

    def permuted(col: list[bytes]) -> bytes:
        return np.frombuffer(b"".join(col), dtype=np.uint8).reshape(n, 32)[perm].tobytes()

    a_perm = [permuted(col) for col in inp.a]
    b_perm = [permuted(col) for col in inp.b]
    res = map_chunks(
        _phase_a,
        [
            (
                sd,
                pk,
                [c[32 * s : 32 * e] for c in a_perm],
                [c[32 * s : 32 * e] for c in b_perm],
                hs[s:e],
            )
            for sd, (s, e) in zip(seeds, chunks)
        ],
        pool,
    )
    a_blob = [b"".join(x[0][j] for x in res) for j in range(w)]
    b_blob = [b"".join(x[1][j] for x in res) for j in range(w)]
    out = Ciphertexts(
        [split_points(x, n, "output a") for x in a_blob],
        [split_points(x, n, "output b") for x in b_blob],
    )
    cperm = np.empty((n, 32), dtype=np.uint8)  # c_{psi(i)} = (permutation commitment)_i
    cperm[perm] = np.frombuffer(b"".join(x[2] for x in res), dtype=np.uint8).reshape(n, 32)
    c = cperm.tobytes()
    rbar = ct_mod(sum(x[3] for x in res))

    useed = ShuffleStatement(sess, step, batch, pk, inp, out, (h, hs)).useed(c)
    psis = [psi[s:e] for s, e in chunks]

    # prefix scalars of the chain (closed form of chat_i) as a parallel scan: each chunk's
    # affine map, composed here over the chunks, gives every chunk its starting (R, U)
    maps = map_chunks(_scan, [(sd, useed, n, p) for sd, p in zip(seeds, psis)], pool)
    starts, r_n, u_n = [], 0, 1
    for a, b, _ in maps:
        starts.append((r_n, u_n))
        r_n, u_n = ct_mod(a + b * r_n), b * u_n % L
    res = map_chunks(
        _phase_b,
        [
            (sd, mp[2], r0, u0, h, hs[s:e], x[0], x[1])
            for sd, mp, (r0, u0), (s, e), x in zip(seeds, maps, starts, chunks, res)
        ],
        pool,
    )
    w1, w2, w3 = random_scalars(3)
    w4 = random_scalars(w)
    com = ShuffleCommitments(
        c=c,
        chat=b"".join(x[0] for x in res),
        that=b"".join(x[1] for x in res),
        t1=smul_base(w1),
        t2=smul_base(w2),
        t3=add(smul_base(w3), sum_points(x[2] for x in res)),
        t4a=tuple(add(smul(w4[j], pk), sum_points(x[3][j] for x in res)) for j in range(w)),
        t4b=tuple(add(smul_base(w4[j]), sum_points(x[4][j] for x in res)) for j in range(w)),
    )
    ch = com.challenge(useed)
    rtil = ct_mod(sum(x[5] for x in res))
    rstar = [ct_mod(sum(x[6][j] for x in res)) for j in range(w)]
    resp = map_chunks(_phase_c, [(sd, mp[2], ch) for sd, mp in zip(seeds, maps)], pool)
    proof = ShuffleProof(
        **vars(com),
        s1=(w1 + ch * rbar) % L,
        s2=(w2 + ch * r_n) % L,
        s3=(w3 + ch * rtil) % L,
        s4=tuple((w4[j] - ch * rstar[j]) % L for j in range(w)),
        shat=b"".join(x[0] for x in resp),
        sprime=b"".join(x[1] for x in resp),
    )
    return out, proof.wire()
