"""Chaum-Pedersen DLEQ and the batched decryption-share proof (docs/spec/05-mixnet.md V-18).

DLEQ ``log_g1 y1 = log_g2 y2``: ``(e, s)`` with ``T1 = w g1, T2 = w g2``,
``e = fs_scalar("dleq|" label, ctx, g1, y1, g2, y2, T1, T2)``, ``s = w + e x``; valid iff ``e`` is
the challenge of ``T1 = s g1 - e y1``, ``T2 = s g2 - e y2``.

Decryption shares: with ``rho = scalar_vector(dec_share_seed(...))``, ``B = sum rho_k b_k`` and
``D = sum rho_k d_k = x B``, one DLEQ of ``log_G (x G) = log_B D`` (``x = lambda_j x_j``: shares
are pre-weighted for the decryption set, so the plaintext is ``a - sum_j d_j``, additions only);
the verifier's key is ``y = lambda_j Y_j`` (``weighted_key``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

from mpc.mixnet.proofs.sigma import SigmaProof, commit, recommit, respond
from mpc.mixnet.schema import dec_share_seed, dleq_challenge, scalar_vector
from mpc.ristretto import G, GroupError, msm_parallel, random_scalar, smul
from mpc.threshold import lagrange_at_zero

_Cols = Sequence[Sequence[bytes]]  # component-major points


def dleq_prove(label: str, ctx: bytes, g1: bytes, g2: bytes, x: int) -> SigmaProof:
    """Chaum-Pedersen proof that ``y1 = x g1`` and ``y2 = x g2`` share ``x``."""
    w = random_scalar()
    y1, y2 = commit(x, g1), commit(x, g2)
    e = dleq_challenge(label, ctx, g1, y1, g2, y2, commit(w, g1), commit(w, g2))
    return SigmaProof(e, respond(e, x, w))  # constant time (issue 37)


def verify_dleq(
    label: str, ctx: bytes, g1: bytes, y1: bytes, g2: bytes, y2: bytes, e: int, s: int
) -> bool:
    """Chaum-Pedersen check ``log_g1 y1 = log_g2 y2`` for a proof ``(e, s)``."""
    try:
        t1, t2 = recommit(s, e, y1, g1), recommit(s, e, y2, g2)
    except GroupError:
        return False
    return dleq_challenge(label, ctx, g1, y1, g2, y2, t1, t2) == e


def _seed(sess: bytes, server: int, batch: str, dset: Sequence[int], bs: _Cols, ds: _Cols) -> bytes:
    return dec_share_seed(sess, server, batch, dset, [list(c) for c in bs], [list(c) for c in ds])


def _combined(
    seed: bytes, bs: _Cols, workers: int, pool: Executor | None
) -> tuple[list[int], bytes]:
    """The weights ``rho`` of the proof context ``seed`` and ``B = sum rho_k b_k`` (prover and
    verifier compute them alike)."""
    flat_b = [p for col in bs for p in col]
    rho = scalar_vector(seed, len(flat_b))
    return rho, msm_parallel([(rho, flat_b, "ciphertext")], workers, pool)


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
    """Batched DLEQ proof (wire form) that every share ``ds[j][i] = x bs[j][i]``, ``x G`` public.

    In a run ``x = lambda_j x_j`` (the server's key share weighted by its Lagrange coefficient
    in the decryption set ``dset``), so the verifier's key is ``lambda_j Y_j``.
    """
    seed = _seed(sess, server, batch, dset, bs, ds)
    _, bsum = _combined(seed, bs, workers, pool)
    return dleq_prove("dec", seed, G, bsum, x).wire()


def verify_dec_shares(
    sess: bytes,
    server: int,
    batch: str,
    y: bytes,
    bs: Sequence[Sequence[bytes]],
    ds: Sequence[Sequence[bytes]],
    proof: Any,
    workers: int = 1,
    pool: Executor | None = None,
    *,
    dset: Sequence[int],
) -> str | None:
    """``None`` if server ``server``'s shares ``ds`` of ``bs`` verify against the key ``y``.

    ``y`` is the key the shares were made with: ``lambda_j Y_j`` for a share weighted for the
    decryption set ``dset`` (``weighted_key``).
    """
    try:
        if len(ds) != len(bs) or any(len(d) != len(b) for d, b in zip(ds, bs)):
            return "share count does not match ciphertexts"
        seed = _seed(sess, server, batch, dset, bs, ds)
        rho, bsum = _combined(seed, bs, workers, pool)
        flat_d = [p for col in ds for p in col]
        dsum = msm_parallel([(rho, flat_d, "share")], workers, pool)
        p = SigmaProof.from_wire(proof, "proof")
    except (GroupError, ValueError, KeyError, TypeError) as exc:
        return f"invalid share or proof: {exc}"
    if not verify_dleq("dec", seed, G, y, bsum, dsum, p.e, p.s):
        return "decryption-share proof (DLEQ) fails"
    return None


def weighted_key(vk: bytes, server: int, dset: Sequence[int]) -> bytes:
    """``lambda_server Y_server``: the key of a share weighted for decryption set ``dset``."""
    if server not in dset:
        raise ValueError(f"server {server} is not in the decryption set {list(dset)}")
    return smul(
        lagrange_at_zero(list(dset))[list(dset).index(server)], vk, f"verification key {server}"
    )
