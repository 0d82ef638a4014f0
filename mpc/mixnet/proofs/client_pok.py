"""The client proof of knowledge (docs/spec/05-mixnet.md V-14 rule 7): prover and verifier.

Fiat-Shamir with the challenge ``client_challenge`` of ``mpc.mixnet.schema``; the screening of
a record's submissions that applies it is ``mpc.mixnet.proof_checks.screen_submissions``.

Client proof: knowledge of the randomness ``r_j`` of every component ``b_j = r_j G`` of a
submitted ciphertext, bound to the session, the client id, the batch and the message index, so
a ciphertext copied (or re-randomized) from another client cannot be submitted. Proof
``{"t": [T_j], "s": [s_j]}`` (commitment form, so that a verifier can check many proofs in one
random linear combination) with ``T_j = w_j G``, ``c = client_challenge(..., T)``,
``s_j = w_j + c r_j``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mpc.mixnet.proofs.sigma import recommit, respond
from mpc.mixnet.schema import client_challenge, scalar_bytes
from mpc.ristretto import (
    IDENTITY,
    G,
    GroupError,
    L,
    check_point,
    msm,
    random_scalars,
    scalar_from_bytes,
    smul_base_many,
)


@dataclass(frozen=True)
class ClientProof:
    """``proof = {t, s}`` of V-14 rule 7: commitments ``T_j`` and responses ``s_j``."""

    t: tuple[bytes, ...]
    s: tuple[int, ...]

    def wire(self) -> dict[str, object]:
        return {"t": list(self.t), "s": [scalar_bytes(x) for x in self.s]}


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
    return ClientProof(tuple(ts), tuple(respond(c, ri, w) for w, ri in zip(ws, r))).wire()


# ---------------------------------------------------------------- verifier


def _parse_client_proof(
    sess: bytes, job: tuple[Any, ...]
) -> tuple[int, list[int], list[bytes]] | str:
    """``(e, s, t)`` of one ``job = (client, batch, index, a, b, proof)`` with every element
    validated and the challenge recomputed, or the reason."""
    client, batch, index, a, b, proof = job
    try:
        for j, x in enumerate(a):
            check_point(x, f"a[{j}]")
        for j, x in enumerate(b):
            check_point(x, f"b[{j}]")
        if (
            not isinstance(proof, dict)
            or not isinstance(proof.get("s"), list)
            or not isinstance(proof.get("t"), list)
            or not len(proof["s"]) == len(proof["t"]) == len(b)
        ):
            return "malformed proof"
        ts = [check_point(x, f"proof.t[{j}]") for j, x in enumerate(proof["t"])]
        ss = [scalar_from_bytes(x, f"proof.s[{j}]") for j, x in enumerate(proof["s"])]
    except (GroupError, ValueError) as exc:
        return f"invalid element or scalar: {exc}"
    return client_challenge(sess, client, batch, index, list(a), list(b), ts), ss, ts


_BAD_PROOF = "proof of knowledge does not verify for this client id, batch and index"


def verify_client_proof(
    sess: bytes,
    client: str,
    batch: str,
    index: int,
    a: Sequence[bytes],
    b: Sequence[bytes],
    proof: Any,
) -> str | None:
    """``None`` if the submission's proof is valid, else the reason (elements are validated).

    Valid iff ``s_j G = T_j + e b_j`` for every component, ``e = client_challenge(.., T)``.
    """
    parsed = _parse_client_proof(sess, (client, batch, index, a, b, proof))
    if isinstance(parsed, str):
        return parsed
    return None if _batch_holds([(parsed, b)]) else _BAD_PROOF


def _batch_holds(items: list[tuple[tuple[int, list[int], list[bytes]], Sequence[bytes]]]) -> bool:
    """One random linear combination of the Schnorr equations ``s_j G - T_j - e b_j = 0`` of
    ``items`` (weights drawn here, secret from the provers): false if any equation fails,
    except with probability 1/L. Public scalars: one native MSM when built."""
    zs = random_scalars(sum(len(b) for _, b in items))
    kg, ks, pts, k = 0, [], [], 0
    for (e, ss, ts), b in items:
        for s_j, t_j, b_j in zip(ss, ts, b):
            z = zs[k]
            k += 1
            kg += z * s_j
            ks += [-z % L, -z * e % L]
            pts += [t_j, b_j]
    kg %= L
    if kg:
        ks.append(kg)
        pts.append(G)
    try:
        return msm(ks, pts, "client proofs") == IDENTITY
    except GroupError:  # a zero product (probability 1/L per term): decide term by term
        return all(
            recommit(s_j, e, b_j) == t_j
            for (e, ss, ts), b in items
            for s_j, t_j, b_j in zip(ss, ts, b)
        )


def _bad_indices(items: list, offset: int = 0) -> list[int]:
    """Indices of the failing proofs, by halving a failed batch (each half one equation)."""
    if len(items) == 1:
        return [offset]
    h = len(items) // 2
    out = []
    for part, off in ((items[:h], offset), (items[h:], offset + h)):
        if not _batch_holds(part):
            out += _bad_indices(part, off)
    return out


def client_proofs_chunk(sess: bytes, jobs: list[tuple[Any, ...]]) -> list[str | None]:
    """Verdicts of ``verify_client_proof`` for a chunk of (client, batch, index, a, b, proof):
    the well-formed proofs are checked in one batched equation; if it fails, halving finds
    every failing proof."""
    verdicts: list[str | None] = []
    items, where = [], []
    for i, job in enumerate(jobs):
        parsed = _parse_client_proof(sess, job)
        verdicts.append(parsed if isinstance(parsed, str) else None)
        if not isinstance(parsed, str):
            items.append((parsed, job[4]))
            where.append(i)
    if items and not _batch_holds(items):
        for k in _bad_indices(items):
            verdicts[where[k]] = _BAD_PROOF
    return verdicts
