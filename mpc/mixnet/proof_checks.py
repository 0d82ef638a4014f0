"""Checks of the mix-net's sigma proofs and of the public DKG record (verifier side).

Client submissions (valid elements, a proof of knowledge of the randomness bound to the client
id, batch and message index, no duplicates: ``screen_submissions``), decryption shares (batched
Chaum-Pedersen proof against the Lagrange-weighted verification key) and the DKG (dealers'
proofs of knowledge, complaints and revealed shares, the joint key and the verification keys).
Imports only ``mpc.ristretto``, ``mpc.pools`` and ``mpc.mixnet.schema`` (never prover code).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

from mpc.mixnet.proofs.client_pok import client_proofs_chunk
from mpc.mixnet.proofs.dkg_pok import verify_dkg_pok
from mpc.mixnet.schema import (
    VerifyError,
    bound_client_id,
)
from mpc.pools import process_pool
from mpc.ristretto import (
    GroupError,
    check_point,
    scalar_from_bytes,
    smul_base,
    sum_points,
)
from mpc.threshold import commitment_at


def screen_submissions(
    sess: bytes,
    specs: dict[str, dict[str, Any]],
    subs: Sequence[Any],
    workers: int = 1,
    pool: Executor | None = None,
    *,
    parties: Sequence[str],
) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Accept or reject client submissions in order; returns accepted indices per batch and
    the rejections ``{"index", "party", "client", "batch", "reason"}``.

    ``parties[i]`` is the client party that sent submission ``i`` (its authenticated TLS
    peer). A submission's client id is namespaced by it: the proof is checked for, and
    replays are keyed on, the bound id ``party/client`` (``bound_client_id``), so one party can
    never occupy, or replay a proof made for, another party's ids.

    Rules, in this order: known batch; non-negative integer index; ``components`` elements per
    side; no repeated (client, batch, index) among accepted ones; no ``b`` component equal to a
    ``b`` component of an earlier accepted submission (replay or copy); valid non-identity
    elements and a proof of knowledge of the randomness bound to (session, client id, batch,
    index).

    Duplicates are screened on the ``b`` components only: the proof shows knowledge of their
    discrete logarithms, so only their author can submit them; an ``a`` component is free for
    anyone to copy, and screening on it would let whoever sees a victim's ciphertext first get
    the victim rejected.
    Proofs are checked in ``workers`` processes (their verdicts do not depend on order).
    """
    if len(parties) != len(subs):
        raise VerifyError(f"{len(parties)} submitting parties for {len(subs)} submissions")
    early: dict[int, str] = {}
    parsed: dict[int, tuple[str, str, int, list[bytes], list[bytes]]] = {}
    jobs: list[tuple[Any, ...]] = []
    for idx, sub_ in enumerate(subs):
        try:
            client = bound_client_id(parties[idx], str(sub_["client"]))
            batch, index = sub_["batch"], sub_["index"]
            if not isinstance(batch, str) or batch not in specs:
                early[idx] = f"wrong batch {batch!r}"
                continue
            if not isinstance(index, int) or index < 0:
                early[idx] = "bad message index"
                continue
            a, b = sub_["ct"]["a"], sub_["ct"]["b"]
            comps = specs[batch]["components"]
            if not (isinstance(a, list) and isinstance(b, list) and len(a) == comps == len(b)):
                early[idx] = f"ciphertext must have {comps} components"
                continue
            if not all(isinstance(x, bytes) for x in a + b):
                early[idx] = "invalid element: not bytes"
                continue
            parsed[idx] = (client, batch, index, a, b)
            jobs.append((client, batch, index, a, b, sub_["proof"]))
        except (KeyError, TypeError, AttributeError) as exc:
            early[idx] = f"malformed submission: {exc}"
    order = sorted(parsed)
    own = None
    if pool is None and workers > 1 and len(jobs) > 1:
        pool = own = process_pool(workers)
    try:
        if pool is None:
            verdicts = client_proofs_chunk(sess, jobs)
        else:
            step = -(-len(jobs) // (4 * workers)) or 1
            chunks = [jobs[i : i + step] for i in range(0, len(jobs), step)]
            verdicts = [
                v
                for part in pool.map(client_proofs_chunk, [sess] * len(chunks), chunks)
                for v in part
            ]
    finally:
        if own is not None:
            own.shutdown()
    proof_err = dict(zip(order, verdicts))

    accepted: dict[str, list[int]] = {name: [] for name in specs}
    rejected: list[dict[str, Any]] = []
    seen: set[bytes] = set()
    keys: set[tuple[str, str, int]] = set()
    for idx, sub_ in enumerate(subs):
        if idx in early:
            c = sub_.get("client") if isinstance(sub_, dict) else None
            bt = sub_.get("batch") if isinstance(sub_, dict) else None
            rejected.append(
                {
                    "index": idx,
                    "party": parties[idx],
                    "client": c,
                    "batch": bt,
                    "reason": early[idx],
                }
            )
            continue
        client, batch, index, a, b = parsed[idx]
        if (client, batch, index) in keys:
            reason = "replayed message index"
        elif any(x in seen for x in b):
            reason = "replayed or duplicate ciphertext (a b component repeats an accepted one)"
        else:
            reason = proof_err[idx]
        if reason is None:
            accepted[batch].append(idx)
            keys.add((client, batch, index))
            seen.update(b)
        else:
            rejected.append(
                {
                    "index": idx,
                    "party": parties[idx],
                    "client": sub_["client"],
                    "batch": batch,
                    "reason": reason,
                }
            )
    return accepted, rejected


def submitters(inputs: Sequence[dict[str, Any]]) -> list[str]:
    """The submitting party of every submission, from the record's ``inputs`` slices."""
    return [str(p["party"]) for p in inputs for _ in range(int(p["count"]))]


# ---------------------------------------------------------------- DKG


def verify_dkg(sess_id: str, k: int, t: int, dkg: Any) -> tuple[bytes, dict[int, bytes], list[int]]:
    """Recompute the qualified set, joint key and verification keys from the public DKG record.

    Record: ``{"commitments": {i: [t elements]}, "pok": {i: {e, s}}, "complaints": [{"by", "against",
    "share" (revealed scalar bytes or None)}], "qual": [...], "pk": ..., "vks": {i: element}}``.
    Returns ``(pk, vks, qual)``; raises ``VerifyError`` on any mismatch.
    """
    try:
        comms_raw = dkg["commitments"]
        comms: dict[int, list[bytes]] = {}
        for i in range(1, k + 1):
            if i not in comms_raw:
                continue
            cl = comms_raw[i]
            if not isinstance(cl, list) or len(cl) != t:
                raise VerifyError(f"dkg: dealer {i} must publish {t} commitments")
            comms[i] = [check_point(x, f"dkg.commitments[{i}][{m}]") for m, x in enumerate(cl)]
        qual = set(comms)
        for i in sorted(comms):
            if not verify_dkg_pok(sess_id, i, comms[i][0], dkg["pok"].get(i)):
                qual.discard(i)
        for comp in dkg.get("complaints", []):
            d = comp["against"]
            if d not in comms:
                continue
            share = comp.get("share")
            ok = False
            if share is not None:
                sv = scalar_from_bytes(share, f"dkg.complaint share of {d}")
                m = comp["by"]
                ok = smul_base(sv) == commitment_at(comms[d], m)
            if not ok:
                qual.discard(d)
    except (GroupError, ValueError, KeyError, TypeError) as exc:
        raise VerifyError(f"dkg: malformed record: {exc}") from None
    qual_l = sorted(qual)
    if qual_l != sorted(dkg.get("qual", [])):
        raise VerifyError(f"dkg: published qualified set {dkg.get('qual')} != recomputed {qual_l}")
    if len(qual_l) < t:
        raise VerifyError(f"dkg: only {len(qual_l)} qualified dealers, threshold {t}")
    pk = sum_points(comms[i][0] for i in qual_l)
    if pk != dkg.get("pk"):
        raise VerifyError("dkg: published public key is not the sum of qualified dealers' keys")
    vks = {m: sum_points(commitment_at(comms[i], m) for i in qual_l) for m in range(1, k + 1)}
    pub = dkg.get("vks", {})
    for m in range(1, k + 1):
        if pub.get(m) != vks[m]:
            raise VerifyError(f"dkg: verification key of server {m} does not match the commitments")
    return pk, vks, qual_l
