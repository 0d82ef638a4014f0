"""Re-encryption shuffle with a Terelius-Wikstrom proof of shuffle (the one Verificatum uses).

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
work is split into chunks run in a process pool (``workers``) so one server uses every core.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

from mpc.mixnet.schema import (
    Ciphertexts,
    perm_challenge_seed,
    scalar_vector,
    scalars_blob,
    shuffle_challenge,
)
from mpc.pools import process_pool
from mpc.ristretto import (
    IDENTITY,
    G,
    L,
    add,
    chunk_ranges,
    map_chunks,
    msm_secret,
    random_scalars,
    scalar_bytes,
    smul,
    smul_base,
    smul_fixed_many,
    sum_points,
)


def prover_op_counts(w: int) -> dict[str, int]:
    """Group operations per ciphertext of the prover (re-encryption included)."""
    return {"V": 3 + 3 * w, "F": 3 + w, "A": 4 + 4 * w}


def random_permutation(n: int) -> list[int]:
    """Uniform permutation from the OS CSPRNG (Fisher-Yates)."""
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = secrets.randbelow(i + 1)
        p[i], p[j] = p[j], p[i]
    return p


# ---- element-wise chunks (module level so a process pool can run them) ----


def _phase_a(
    pk: bytes,
    a_in: list[list[bytes]],
    b_in: list[list[bytes]],
    rt: list[list[int]],
    rho: list[int],
    hs: list[bytes],
) -> tuple[list[list[bytes]], list[list[bytes]], list[bytes]]:
    """Re-encryption of a chunk of (already permuted) inputs and permutation commitments."""
    # secret scalars on fixed bases: constant time (mpc.ristretto.smul_fixed_many)
    a_out = [smul_fixed_many([(rt[j], pk)], a_in[j], "reenc") for j in range(len(a_in))]
    b_out = [smul_fixed_many([(rt[j], G)], b_in[j], "reenc") for j in range(len(b_in))]
    cv = smul_fixed_many([(rho, G)], hs, "perm commitment")
    return a_out, b_out, cv


def _xg_yh(xs: Sequence[int], ys: Sequence[int], h: bytes) -> list[bytes]:
    """``x_i G + y_i H``."""
    return smul_fixed_many([(xs, G), (ys, h)], None, "xG+yH")


def _phase_b(
    h: bytes,
    hs: list[bytes],
    a_out: list[list[bytes]],
    b_out: list[list[bytes]],
    x1: list[int],
    y1: list[int],
    x2: list[int],
    y2: list[int],
    wp: list[int],
) -> tuple[list[bytes], list[bytes], bytes, list[bytes], list[bytes]]:
    """Chain commitments, their proof commitments and partial sums of t3, t4 for a chunk."""
    chat = _xg_yh(x1, y1, h)
    that = _xg_yh(x2, y2, h)
    t3 = msm_secret(wp, hs, "t3")  # secret scalars: a constant-time path
    t4a = [msm_secret(wp, col, "t4a") for col in a_out]
    t4b = [msm_secret(wp, col, "t4b") for col in b_out]
    return chat, that, t3, t4a, t4b


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
    if sorted(psi) != list(range(n)):
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
    a_perm = [[col[k] for k in psi] for col in inp.a]
    b_perm = [[col[k] for k in psi] for col in inp.b]
    rt = [random_scalars(n) for _ in range(w)]  # re-encryption randomness of output i
    r = random_scalars(n)  # permutation-commitment randomness, indexed by input k
    rho = [r[k] for k in psi]

    res = map_chunks(
        _phase_a,
        [
            (
                pk,
                [c[s:e] for c in a_perm],
                [c[s:e] for c in b_perm],
                [x[s:e] for x in rt],
                rho[s:e],
                hs[s:e],
            )
            for s, e in chunks
        ],
        pool,
    )
    a_out = [sum((x[0][j] for x in res), []) for j in range(w)]
    b_out = [sum((x[1][j] for x in res), []) for j in range(w)]
    cv = sum((x[2] for x in res), [])
    c = [IDENTITY] * n
    for i, k in enumerate(psi):
        c[k] = cv[i]
    out = Ciphertexts(a_out, b_out)

    useed = perm_challenge_seed(sess, step, batch, inp, out, c)
    u = scalar_vector(useed, n)
    up = [u[k] for k in psi]

    # prefix scalars of the chain (closed form of chat_i)
    rhat = random_scalars(n)
    what = random_scalars(n)
    wp = random_scalars(n)
    R, U = [0] * (n + 1), [1] * (n + 1)
    for i in range(n):
        U[i + 1] = U[i] * up[i] % L
        R[i + 1] = (rhat[i] + up[i] * R[i]) % L
    x1, y1 = R[1:], U[1:]
    x2 = [(what[i] + wp[i] * R[i]) % L for i in range(n)]
    y2 = [wp[i] * U[i] % L for i in range(n)]

    res = map_chunks(
        _phase_b,
        [
            (
                h,
                hs[s:e],
                [c_[s:e] for c_ in a_out],
                [c_[s:e] for c_ in b_out],
                x1[s:e],
                y1[s:e],
                x2[s:e],
                y2[s:e],
                wp[s:e],
            )
            for s, e in chunks
        ],
        pool,
    )
    chat = sum((x[0] for x in res), [])
    that = sum((x[1] for x in res), [])
    w1, w2, w3 = random_scalars(3)
    w4 = random_scalars(w)
    t1, t2 = smul_base(w1), smul_base(w2)
    t3 = add(smul_base(w3), sum_points(x[2] for x in res))
    t4a = [add(smul(w4[j], pk), sum_points(x[3][j] for x in res)) for j in range(w)]
    t4b = [add(smul_base(w4[j]), sum_points(x[4][j] for x in res)) for j in range(w)]

    ch = shuffle_challenge(useed, chat, that, t1, t2, t3, t4a, t4b)
    rbar = sum(r) % L
    rtil = sum(uk * rk for uk, rk in zip(u, r)) % L
    rstar = [sum(a * b for a, b in zip(up, rt[j])) % L for j in range(w)]
    proof = {
        "c": b"".join(c),
        "chat": b"".join(chat),
        "that": b"".join(that),
        "t1": t1,
        "t2": t2,
        "t3": t3,
        "t4a": t4a,
        "t4b": t4b,
        "s1": scalar_bytes(w1 + ch * rbar),
        "s2": scalar_bytes(w2 + ch * R[n]),
        "s3": scalar_bytes(w3 + ch * rtil),
        "s4": [scalar_bytes(w4[j] - ch * rstar[j]) for j in range(w)],
        "shat": scalars_blob([(what[i] + ch * rhat[i]) % L for i in range(n)]),
        "sprime": scalars_blob([(wp[i] + ch * up[i]) % L for i in range(n)]),
    }
    return out, proof
