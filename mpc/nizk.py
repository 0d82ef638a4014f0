"""Provers of the mix-net's sigma proofs (Fiat-Shamir, challenges from ``mpc.mixnet.schema``).

Verification lives only in ``mpc.mixnet.proof_checks`` (independent of this file).

- Client proof: knowledge of the randomness ``r_j`` of every component ``b_j = r_j G`` of a
  submitted ciphertext, bound to the session, the client id, the batch and the message index, so
  a ciphertext copied (or re-randomized) from another client cannot be submitted.
  Proof ``{"t": [T_j], "s": [s_j]}`` (commitment form, so that a verifier can check many
  proofs in one random linear combination) with ``T_j = w_j G``, ``c = client_challenge(...,
  T)``, ``s_j = w_j + c r_j``.
- Chaum-Pedersen DLEQ ``log_g1 y1 = log_g2 y2``: ``(e, s)`` with ``T1 = w g1, T2 = w g2``.
- Batched decryption-share proof: with ``rho = scalar_vector(dec_share_seed(...))``,
  ``B = sum rho_k b_k`` and ``D = sum rho_k d_k = x B``, one DLEQ of ``log_G (x G) = log_B D``
  (``x = lambda_j x_j``: shares are pre-weighted for the decryption set, so the plaintext is
  ``a - sum_j d_j`` with additions only).
- DKG dealer proof: Schnorr proof of knowledge of the constant term of its polynomial.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor

from mpc.mixnet.schema import (
    client_challenge,
    dec_share_seed,
    dkg_pok_challenge,
    dleq_challenge,
    scalar_bytes,
    scalar_vector,
)
from mpc.ristretto import (
    G,
    ct_muladd,
    msm_parallel,
    random_scalar,
    random_scalars,
    smul,
    smul_base,
    smul_base_many,
)


def client_prove(
    sess: bytes,
    client: str,
    batch: str,
    index: int,
    a: Sequence[bytes],
    b: Sequence[bytes],
    r: Sequence[int],
) -> dict[str, object]:
    """Proof of knowledge of the randomness ``r`` of one width-``len(r)`` ciphertext."""
    ws = random_scalars(len(r))
    ts = smul_base_many(ws)
    c = client_challenge(sess, client, batch, index, list(a), list(b), ts)
    return {"t": ts, "s": [scalar_bytes(w + c * ri) for w, ri in zip(ws, r)]}


def dleq_prove(label: str, ctx: bytes, g1: bytes, g2: bytes, x: int) -> tuple[int, int]:
    """Chaum-Pedersen proof that ``y1 = x g1`` and ``y2 = x g2`` share ``x``; returns ``(e, s)``."""
    w = random_scalar()
    y1 = smul_base(x) if g1 == G else smul(x, g1)
    y2 = smul(x, g2)
    t1 = smul_base(w) if g1 == G else smul(w, g1)
    t2 = smul(w, g2)
    e = dleq_challenge(label, ctx, g1, y1, g2, y2, t1, t2)
    return e, ct_muladd(e, x, w)  # constant time (issue 37)


def dec_share_prove(
    sess: bytes,
    server: int,
    batch: str,
    x: int,
    bs: Sequence[Sequence[bytes]],
    ds: Sequence[Sequence[bytes]],
    workers: int = 1,
    pool: Executor | None = None,
    *,
    dset: Sequence[int],
) -> dict[str, bytes]:
    """Batched DLEQ proof that every share ``ds[j][i] = x bs[j][i]`` with ``x G`` public.

    In a run ``x = lambda_j x_j`` (the server's key share weighted by its Lagrange coefficient
    in the decryption set ``dset``), so the verifier's key is ``lambda_j Y_j``.
    """
    seed = dec_share_seed(sess, server, batch, dset, [list(c) for c in bs], [list(c) for c in ds])
    flat_b = [p for col in bs for p in col]
    rho = scalar_vector(seed, len(flat_b))
    bsum = msm_parallel([(rho, flat_b, "dec-share rlc")], workers, pool)
    e, s = dleq_prove("dec", seed, G, bsum, x)
    return {"e": scalar_bytes(e), "s": scalar_bytes(s)}


def dkg_pok_prove(sess_id: str, server: int, a0: int) -> dict[str, bytes]:
    """Schnorr proof of knowledge of ``a0`` with ``C0 = a0 G``."""
    w = random_scalar()
    t = smul_base(w)
    e = dkg_pok_challenge(sess_id, server, smul_base(a0), t)
    return {"e": scalar_bytes(e), "s": scalar_bytes(w + e * a0)}
