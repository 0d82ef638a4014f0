"""The clients' submissions: every message row encrypted under the joint key, with a proof of
knowledge of its randomness bound to the session, the client id, the batch and the index."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

import numpy as np

from mpc.elgamal import encode_rows, encrypt_points
from mpc.mixnet.proofs.client_pok import client_prove
from mpc.mixnet.schema import bound_client_id
from mpc.ristretto import chunk_ranges, map_chunks


def make_submissions(
    sess: bytes,
    pk: bytes,
    layouts: dict[str, tuple[int, int]],
    batches: dict[str, np.ndarray],
    owners: dict[str, list[str]] | None = None,
    workers: int = 1,
    pool: Executor | None = None,
    *,
    party: str,
) -> list[dict[str, Any]]:
    """Encrypt every message row and prove knowledge of its randomness.

    ``layouts[batch] = (width, bound)``; ``owners[batch][i]`` is the client id of row ``i``
    (default ``"u{i}"``); the message index counts a client's messages within a batch. Work is
    split across ``pool`` if given. Each proof is bound to ``party/id``
    (``mpc.mixnet.schema.bound_client_id``): the servers namespace a submission's id by the
    party it came from. Returns ``[{client, batch, index, ct: {a, b}, proof}]``.
    """
    subs: list[dict[str, Any]] = []
    for name, rows in batches.items():
        if name not in layouts:
            raise ValueError(f"make_submissions: unknown batch {name!r}")
        width, bound = layouts[name]
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != width:
            raise ValueError(
                f"make_submissions: batch {name!r} needs shape (n, {width}), got {rows.shape}"
            )
        ids = owners[name] if owners and name in owners else [f"u{i}" for i in range(rows.shape[0])]
        if len(ids) != rows.shape[0]:
            raise ValueError(
                f"make_submissions: {len(ids)} owners for {rows.shape[0]} rows of {name!r}"
            )
        counter: dict[str, int] = {}
        index = []
        for cid in ids:
            index.append(counter.get(cid, 0))
            counter[cid] = index[-1] + 1
        parts = map_chunks(
            _encrypt_chunk,
            [
                (sess, pk, name, bound, rows[s:e], list(ids[s:e]), index[s:e], party)
                for s, e in chunk_ranges(rows.shape[0], 4 * workers if pool else 1)
            ],
            pool,
        )
        for part in parts:
            subs += part
    return subs


def _encrypt_chunk(
    sess: bytes,
    pk: bytes,
    name: str,
    bound: int,
    rows: np.ndarray,
    ids: list[str],
    index: list[int],
    party: str,
) -> list[dict[str, Any]]:
    """Submissions for a chunk of rows (module level for process pools)."""
    ct, rs = encrypt_points(pk, encode_rows(rows, bound))
    out = []
    for i, (cid, idx) in enumerate(zip(ids, index)):
        a, b = ct.row(i)
        proof = client_prove(sess, bound_client_id(party, cid), name, idx, a, b, [r[i] for r in rs])
        out.append(
            {"client": cid, "batch": name, "index": idx, "ct": {"a": a, "b": b}, "proof": proof}
        )
    return out
