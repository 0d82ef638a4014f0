"""Threshold decryption of the mixed lists: Lagrange-weighted shares with a batched
Chaum-Pedersen proof, their check, and the plaintexts ``a - sum_{j in S} d_j``.

Server ``j`` of the decryption set ``S`` sends ``{server, set, digest, batches: {name: {d,
proof}}}`` with ``d = (lambda_j x_j) b``; the proof's key is ``lambda_j Y_j``
(``mpc.mixnet.proofs.dleq.weighted_key``) and its challenge binds ``S``. An empty list (a batch with no
accepted submission) has no shares: it is absent from ``batches`` and decrypts to no row.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

import numpy as np

from mpc.elgamal import combine_weighted_shares, decode_rows
from mpc.mixnet.proofs.dleq import dec_share_prove, verify_dec_shares, weighted_key
from mpc.mixnet.schema import Ciphertexts, blob_points
from mpc.ristretto import L, chunk_ranges, map_chunks, smul_many
from mpc.threshold import lagrange_at_zero


def digest_all(current: dict[str, Ciphertexts]) -> bytes:
    """Digest of every batch's final list (servers check they decrypt the same lists)."""
    return b"".join(current[n].digest() for n in sorted(current))


def _shares_chunk(x: int, pts: list[bytes]) -> list[bytes]:
    """Decryption shares ``x * b`` of a chunk (module level for process pools)."""
    return smul_many([x] * len(pts), pts, "decryption share")


def share_message(
    sess: bytes,
    me: int,
    x: int,
    current: dict[str, Ciphertexts],
    dset: list[int],
    digest: bytes,
    workers: int = 1,
    pool: Executor | None = None,
) -> dict[str, Any]:
    """Server ``me``'s shares (key share ``x``) of every list, weighted for ``dset``, with proofs."""
    xw = lagrange_at_zero(dset)[dset.index(me)] * x % L
    nch = 4 * workers if pool else 1
    msg: dict[str, Any] = {"server": me, "set": list(dset), "digest": digest, "batches": {}}
    for name, ct in current.items():
        if ct.n == 0:
            continue
        ds = [
            sum(
                map_chunks(
                    _shares_chunk, [(xw, col[s:e]) for s, e in chunk_ranges(ct.n, nch)], pool
                ),
                [],
            )
            for col in ct.b
        ]
        msg["batches"][name] = {
            "d": [b"".join(c) for c in ds],
            "proof": dec_share_prove(sess, me, name, xw, ct.b, ds, workers, pool, dset=dset),
        }
    return msg


def own_shares(
    msg: dict[str, Any], current: dict[str, Ciphertexts]
) -> dict[str, list[list[bytes]]]:
    """The shares of one's own ``share_message``, split into elements."""
    out = {name: [[] for _ in range(ct.w)] for name, ct in current.items() if ct.n == 0}
    for name, b in msg["batches"].items():
        out[name] = [blob_points(x, current[name].n, "own share") for x in b["d"]]
    return out


def check_share_message(
    sess: bytes,
    vks: dict[int, bytes],
    current: dict[str, Ciphertexts],
    j: int,
    msg: dict[str, Any],
    dset: list[int],
    workers: int = 1,
    pool: Executor | None = None,
) -> tuple[dict[str, list[list[bytes]]] | None, str]:
    """Parse and verify server ``j``'s shares; ``(shares per batch, "")`` or ``(None, why)``."""
    if msg.get("server") != j:
        return None, "share message names another server"
    vk = vks.get(j)
    if vk is None:
        return None, "no verification key"
    y = weighted_key(vk, j, dset)
    out: dict[str, list[list[bytes]]] = {}
    try:
        if not isinstance(msg["batches"], dict):
            return None, "malformed: batches must be a map"
        for name, ct in current.items():
            if ct.n == 0:
                if name in msg["batches"]:
                    return None, f"shares for the empty batch {name!r}"
                out[name] = [[] for _ in range(ct.w)]
                continue
            b = msg["batches"][name]
            ds = [blob_points(x, ct.n, f"share of server {j}") for x in b["d"]]
            err = verify_dec_shares(
                sess, j, name, y, ct.b, ds, b["proof"], workers, pool, dset=dset
            )
            if err:
                return None, err
            out[name] = ds
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"malformed: {exc}"
    return out, ""


def combine(
    current: dict[str, Ciphertexts],
    dset: list[int],
    valid: dict[int, dict[str, list[list[bytes]]]],
    layouts: dict[str, tuple[int, int]],
    workers: int = 1,
    pool: Executor | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Plaintext rows ``(rows, valid)`` of every batch from the set's verified shares;
    ``layouts[batch] = (width, bound)``."""
    out = {}
    for name, ct in current.items():
        pts = combine_weighted_shares(ct, [valid[j][name] for j in dset], workers, pool)
        width, bound = layouts[name]
        out[name] = decode_rows(pts, width, bound)
    return out
