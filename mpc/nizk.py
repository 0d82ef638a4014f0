"""Prover of the mix-net's client proof (Fiat-Shamir, challenges from ``mpc.mixnet.schema``).

Its verification is in ``mpc.mixnet.proof_checks``; the DLEQ / decryption-share proof and the
DKG dealer proof are in ``mpc.mixnet.proofs`` (prover and verifier in one file each).

Client proof: knowledge of the randomness ``r_j`` of every component ``b_j = r_j G`` of a
submitted ciphertext, bound to the session, the client id, the batch and the message index, so
a ciphertext copied (or re-randomized) from another client cannot be submitted. Proof
``{"t": [T_j], "s": [s_j]}`` (commitment form, so that a verifier can check many proofs in one
random linear combination) with ``T_j = w_j G``, ``c = client_challenge(..., T)``,
``s_j = w_j + c r_j``.
"""

from __future__ import annotations

from collections.abc import Sequence

from mpc.mixnet.schema import (
    client_challenge,
    scalar_bytes,
)
from mpc.ristretto import (
    random_scalars,
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
